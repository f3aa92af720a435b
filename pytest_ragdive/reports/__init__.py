"""Renderers of a :class:`~pytest_ragdive.gate.outcome.RunOutcome` only: the terminal
summary, summary.md, ragdive-junit.xml, results.json (and reading it back) and
report.html with its charts and assets. No report decides anything."""
