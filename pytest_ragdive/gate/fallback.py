"""The gate of a keyless run (record mode none, no key): what it decides on.

A fork's pull request has no API key. Its judge calls replay the cache committed
(or restored) from main; a call the cache cannot answer leaves its metric "not judged
(no key)" (:func:`pytest_ragdive.metrics.judged.conversation.not_judged`), and a
generated conversation whose simulated user's call is not cached is not run
(``Conversation.not_run``). Neither is a failure of the bot. Then, per suite:

- a suite with an unjudged item is gated on the **offline twins** of its gated judged
  metrics (``faithfulness`` -> ``faithfulness_offline``, same tolerance;
  :data:`~pytest_ragdive.metrics.registry.OFFLINE_TWINS`), against the baseline's
  offline values of them (a baseline of an LLM run stores both);
- a suite with conversations not run is compared with the baseline of the
  conversations that ran: each band is recomputed from the baseline's
  per-conversation values of those conversations (:func:`restrict`), so that a
  mean over fewer conversations is not held against a mean over more.

``--ragdive-require-judge`` (``require_judge = true``) turns all of this off: a miss
then fails the run, as a strict replay does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict, Field

from ..core.records import Conversation
from ..core.results import BaselineMetric
from ..metrics.registry import METRICS, OFFLINE_TWINS

__all__ = ["KeylessGate", "keyless_gate", "restrict"]


class KeylessGate(BaseModel):
    """What the gate of each suite decides on, when a keyless run could not judge or run everything."""

    model_config = ConfigDict(extra="forbid")

    gates: dict[str, dict[str, float]]  # suite -> metric -> tolerance (twins in place of unjudged metrics)
    ran: dict[str, list[str]] = Field(default_factory=dict)  # suite -> the conversations that ran (some did not)
    notes: list[str] = Field(default_factory=list)
    twins: dict[str, dict[str, str]] = Field(default_factory=dict)  # suite -> twin -> the judged metric it stands for


def keyless_gate(convs: Iterable[Conversation], gates: Mapping[str, Mapping[str, float]]) -> KeylessGate:
    """Per suite, the gated metrics with the offline twins in place of the judged metrics
    when an item of the suite was not judged (no key), and the conversations that ran when
    some were not run; one note per suite saying so."""
    by_suite: dict[str, list[Conversation]] = {}
    for c in convs:
        by_suite.setdefault(c.suite, []).append(c)
    out = KeylessGate(gates={s: dict(g) for s, g in gates.items()})
    for suite, gate in gates.items():
        mine = by_suite.get(suite, [])
        unjudged = sum(c.judge_calls.not_judged for c in mine if c.judge_calls is not None)
        skipped = [c for c in mine if c.not_run]
        if skipped:
            out.ran[suite] = sorted({c.id for c in mine if not c.not_run and c.error is None})
            out.notes.append(
                f"suite {suite}: {len(skipped)} generated conversation(s) not run (no key: the simulated user's call "
                "is not cached in record mode none); gated on the conversations that ran, against the baseline's "
                "values of those conversations"
            )
        if not unjudged:
            continue
        swapped = {m: OFFLINE_TWINS[m] for m in gate if m in OFFLINE_TWINS}
        # an LLM-judged metric with no offline scorer (answer_relevance, a rubric judge without an
        # offline twin) cannot be decided on this run: not gated here, and said so
        judged_only = [m for m in gate if m not in swapped and _judged_only(m)]
        if judged_only:
            out.notes.append(
                f"suite {suite}: {', '.join(judged_only)} not judged (no key) and without an offline twin: not gated "
                "on this run (a run with the key, or its cache, decides them)"
            )
        if not swapped and not judged_only:
            continue
        out.gates[suite] = {swapped.get(m, m): tol for m, tol in gate.items() if m not in judged_only}
        out.twins[suite] = {twin: m for m, twin in swapped.items()}
        out.notes.append(
            f"suite {suite}: {unjudged} judge call(s) not cached and no key to make them (record mode none): "
            f"{', '.join(swapped)} not judged (no key); the gate decides suite {suite} on their offline twins "
            f"({', '.join(swapped.values())}) against the baseline's offline values "
            "(--ragdive-require-judge makes a miss fail instead)"
        )
    return out


def _judged_only(metric: str) -> bool:
    """Only an LLM judge scores it: answer_relevance, or a rubric judge (its offline twin, if
    any, scores it offline under its own name)."""
    spec = METRICS.get(metric)
    return metric == "answer_relevance" or (spec is not None and spec.kind == "rubric")


def restrict(bm: BaselineMetric | None, ids: Iterable[str]) -> BaselineMetric | None:
    """``bm`` as if the baseline had run only the conversations ``ids``: per baseline
    run, the mean of their values (weighted by scored turns, as the suite mean is), and
    the band's min and max over those runs. Unchanged without per-conversation values."""
    if bm is None or not bm.conversations:
        return bm
    keep = set(ids)
    per_run: list[float] = []
    for r in range(bm.runs):
        total = weight = 0.0
        for cid, runs in bm.conversations.items():
            value, count = runs[r]
            if cid in keep and value is not None and count:
                total += value * count
                weight += count
        if weight:
            per_run.append(total / weight)
    if not per_run:
        return bm
    mean = sum(per_run) / len(per_run)
    return bm.model_copy(update={"mean": mean, "min": min(per_run), "max": max(per_run)})
