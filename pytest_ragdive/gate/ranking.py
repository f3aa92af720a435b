"""Which conversations a person should look at first: each conversation's verdict
against the gate's regressed rows, and the conversations worst first (the order the
reports show them in). Decided here, rendered by :mod:`pytest_ragdive.reports`."""

from __future__ import annotations

from typing import Literal

from ..core.records import Conversation
from ..metrics.registry import METRICS
from .outcome import RunOutcome
from .paired import value_of
from .rows import GateRow, compare_to_band

ConvVerdict = Literal["error", "failed", "below_band", "passed"]


VERDICTS: tuple[ConvVerdict, ...] = ("error", "failed", "below_band", "passed")


def conversation_verdict(conv: Conversation, regressed: list[GateRow]) -> ConvVerdict:
    """``regressed``: the gate's regressed rows. A conversation is "below_band"
    when its own value of such a metric lies outside the band on the bad side."""
    if conv.error:
        return "error"
    if conv.failures or (conv.source == "generated" and not conv.turns):
        return "failed"
    for r in regressed:
        if r.suite != conv.suite or (v := value_of(conv, r.metric)) is None:
            continue
        if compare_to_band(v, r.band_low if r.band_low is not None else v, r.band_high if r.band_high is not None else v,
                    r.direction) == "regression":
            return "below_band"
    return "passed"


def goodness(conv: Conversation, metrics: list[str]) -> float:
    """Mean of the metrics oriented so that 1 is best (lower-is-better ones flipped)."""
    vals = []
    for m in metrics:
        v = value_of(conv, m)
        if v is not None:
            vals.append(1 - v if METRICS.get(m) is not None and METRICS[m].direction == "lower" else v)
    return sum(vals) / len(vals) if vals else 1.0


def ranked(outcome: RunOutcome) -> list[tuple[Conversation, ConvVerdict, float]]:
    """Conversations worst first: by verdict, then by how far their gated (or,
    without a gate, all) metrics are from best."""
    regressed = [r for r in outcome.regressions() if r.verdict == "regression"]
    metrics = sorted({r.metric for r in outcome.gate or []}) or sorted(
        {m for res in outcome.suites.values() for m in res.metrics}
    )
    rows = [(c, conversation_verdict(c, regressed), goodness(c, metrics)) for c in outcome.conversations]
    rows.sort(key=lambda r: (VERDICTS.index(r[1]), r[2], r[0].suite, r[0].id, r[0].run))
    return rows
