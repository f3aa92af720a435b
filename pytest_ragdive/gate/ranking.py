"""Which conversations a person should look at first: each conversation's verdict
against the gate's regressed rows, and the conversations worst first (the order the
reports show them in). Decided here, rendered by :mod:`pytest_ragdive.reports`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..core.records import Conversation, Turn
from ..metrics.evidence import PARTIAL_SUPPORT
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


class Culprit(BaseModel):
    """One conversation that pulls a failed gate row's metric the wrong way, and where."""

    model_config = ConfigDict(extra="forbid")

    suite: str
    id: str
    run: int
    metric: str
    value: float | None
    drop: float | None = None  # the paired drop against the baseline's runs (None without the paired test)
    share: float | None = None  # of the total drop of the conversations that got worse
    turns: list[int] = Field(default_factory=list)  # 1-based turns that pull it down, worst first
    quote: str | None = None  # the worst unsupported sentence of those turns
    quote_turn: int | None = None
    quote_support: float | None = None  # its support in [0, 1]
    reason: str = ""  # the conversation's own reason (a judge's, the forgetfulness probe's), or its worst turn's judge's
    reason_turn: int | None = None  # the turn whose judge gave ``reason`` (None: the conversation's)

    @property
    def key(self) -> str:
        return f"{self.suite}::{self.id}::run{self.run}"

    @property
    def quote_how(self) -> str:
        """How far the quoted sentence is supported, in words: "unsupported" or "partly supported"."""
        return "unsupported" if (self.quote_support or 0.0) < PARTIAL_SUPPORT else "partly supported"


def _bad(metric: str, v: float, higher: bool) -> bool:
    return v < 1 - 1e-9 if higher else v > 1e-9


def _turns(conv: Conversation, metric: str, higher: bool) -> list[Turn]:
    """The turns that pull ``metric`` down in ``conv``, worst first: the flagged turns of a
    conversation-level metric (forgetful ones), else the turns not at the metric's best."""
    spec = METRICS.get(metric)
    if spec is not None and spec.level == "conversation":
        return [t for t in conv.turns if "forgetful" in t.flags]
    scored = [t for t in conv.turns if (s := t.scores.get(metric)) is not None and _bad(metric, s, higher)]
    return sorted(scored, key=lambda t: ((t.scores[metric] or 0.0) * (1 if higher else -1), t.index))


def culprits(row: GateRow, convs: list[Conversation], limit: int = 5) -> list[Culprit]:
    """The conversations that pull ``row``'s metric the wrong way, worst first: the paired
    test's worsened conversations where it ran, else those whose own value lies outside the
    band on the bad side (or, without a band, short of the best). Each with the turns that
    pull it down and the worst unsupported sentence among them (grounding and answer metrics)."""
    higher = row.direction == "higher"
    by_id: dict[str, list[Conversation]] = {}
    for c in convs:
        if c.suite == row.suite and c.error is None and value_of(c, row.metric) is not None:
            by_id.setdefault(c.id, []).append(c)
    moved = {m.id: m for m in row.worse}
    if moved:
        ids = [m.id for m in row.worse if m.id in by_id]
    else:
        edge = row.band_low if higher else row.band_high

        def out(v: float) -> bool:
            return (v < edge - 1e-9 if higher else v > edge + 1e-9) if edge is not None else _bad(row.metric, v, higher)

        worst = {k: min((value_of(c, row.metric) or 0.0) * (1 if higher else -1) for c in cs) for k, cs in by_id.items()}
        ids = sorted((k for k in by_id if out(worst[k] * (1 if higher else -1))), key=lambda k: (worst[k], k))
    spec = METRICS.get(row.metric)
    quoting = spec is None or (spec.dimension in ("grounding", "answer") and spec.level == "turn")
    out_rows = []
    for cid in ids[:limit]:
        conv = min(by_id[cid], key=lambda c: ((value_of(c, row.metric) or 0.0) * (1 if higher else -1), c.run))
        turns = _turns(conv, row.metric, higher)
        quote = quote_turn = quote_support = None
        if quoting:
            found = [(u, t) for t in turns if t.evidence is not None and (u := t.evidence.worst()) is not None]
            if found:
                u, t = min(found, key=lambda ut: (ut[0].score, -ut[0].weight))
                quote, quote_turn, quote_support = u.text, t.index + 1, u.score
        m = moved.get(cid)
        v = conv.verdicts.get(row.metric)
        reason = "; ".join(conv.failures) if row.metric == "safety_pass_rate" else v.reason if v is not None else ""
        judged = next(((t, tv) for t in turns if (tv := t.verdicts.get(row.metric)) is not None and tv.reason), None)
        if judged is not None and (quote is None or judged[1].model):  # a judge's reason comes before the lexical rule's
            reason, reason_turn, quote = judged[1].reason, judged[0].index + 1, None
        else:
            reason_turn = None
        out_rows.append(Culprit(
            suite=conv.suite, id=conv.id, run=conv.run, metric=row.metric, value=value_of(conv, row.metric),
            drop=None if m is None else m.drop, share=None if m is None else m.share,
            turns=[t.index + 1 for t in turns[:3]], quote=quote, quote_turn=quote_turn,
            quote_support=quote_support, reason=reason, reason_turn=reason_turn,
        ))
    return out_rows
