"""The gate decision, end to end: the baseline file (:mod:`.baseline`), bands and
gate rows (:mod:`.rows`), the paired test (:mod:`.paired`, :mod:`.power`,
:mod:`.tdist`), what a baseline must satisfy (:mod:`.preconditions`), what moved
between two baselines (:mod:`.diff`), reruns of inconclusive suites
(:mod:`.rerun`), :func:`.conclude.conclude` -> :class:`.outcome.RunOutcome`, and
the ranking of conversations the reports show (:mod:`.ranking`)."""
