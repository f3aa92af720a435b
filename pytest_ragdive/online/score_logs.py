"""``score-logs``: the signal summary of request logs.

``python -m pytest_ragdive score-logs LOGS.jsonl [...] [--json]`` recomputes every
request's signals (``online.signals``, so a log scores by the current rules) and
prints the rates, the grounding, the stage latencies (p50, p95) and the negative
feedback by category. Rates are over answered requests; ``error_rate`` over all.
"""

from __future__ import annotations

import math
from collections import Counter

from pydantic import BaseModel, ConfigDict, Field

from .config import OnlineConfig
from .logs import LogFile
from .replay import conversations, event_signals

__all__ = ["LogSummary", "percentile", "render_summary", "summarize"]


class LogSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    requests: int
    answered: int
    conversations: int
    error_rate: float | None
    empty_retrieval_rate: float | None
    citation_rate: float | None
    hedging_rate: float | None
    abstention_rate: float | None
    grounding_mean: float | None
    low_grounding_rate: float | None
    latency_s: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    languages: dict[str, int] = Field(default_factory=dict)
    negative_feedback: dict[str, int] = Field(default_factory=dict)


def percentile(values: list[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) with linear interpolation between order statistics; None when empty."""
    if not values:
        return None
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _rate(hits: int, n: int) -> float | None:
    return hits / n if n else None


def summarize(log: LogFile, low_grounding: float = OnlineConfig().low_grounding) -> LogSummary:
    """The summary of a read log (pure)."""
    sigs = [s for s in (event_signals(r) for r in log.requests) if s is not None]
    n = len(sigs)
    grounded = [s.grounding for s in sigs if s.grounding is not None]
    latency: dict[str, dict[str, float | None]] = {}
    for stage in ("retrieval", "generation", "total"):
        values = [v for r in log.requests if (v := getattr(r.timings, f"{stage}_s")) is not None]
        latency[stage] = {"p50": percentile(values, 0.5), "p95": percentile(values, 0.95)}
    return LogSummary(
        requests=len(log.requests),
        answered=n,
        conversations=len(conversations(log)),
        error_rate=_rate(sum(1 for r in log.requests if r.response is None), len(log.requests)),
        empty_retrieval_rate=_rate(sum(s.empty_retrieval for s in sigs), n),
        citation_rate=_rate(sum(s.has_citation for s in sigs), n),
        hedging_rate=_rate(sum(s.hedging for s in sigs), n),
        abstention_rate=_rate(sum(s.abstained for s in sigs), n),
        grounding_mean=sum(grounded) / len(grounded) if grounded else None,
        low_grounding_rate=_rate(sum(1 for g in grounded if g < low_grounding), len(grounded)),
        latency_s=latency,
        languages=dict(Counter(s.language for s in sigs).most_common()),
        negative_feedback=dict(Counter(f.category for f in log.feedback).most_common()),
    )


def _fmt(v: float | None, pct: bool = False) -> str:
    if v is None:
        return "-"
    return f"{v:.1%}" if pct else f"{v:.3f}"


def render_summary(s: LogSummary) -> str:
    rows = [
        ("requests", str(s.requests)),
        ("answered", str(s.answered)),
        ("conversations", str(s.conversations)),
        ("error rate", _fmt(s.error_rate, True)),
        ("empty-retrieval rate", _fmt(s.empty_retrieval_rate, True)),
        ("citation rate", _fmt(s.citation_rate, True)),
        ("hedging rate", _fmt(s.hedging_rate, True)),
        ("abstention rate", _fmt(s.abstention_rate, True)),
        ("grounding (mean)", _fmt(s.grounding_mean)),
        ("low-grounding rate", _fmt(s.low_grounding_rate, True)),
    ]
    for stage, q in s.latency_s.items():
        rows.append((f"{stage} latency p50 / p95 (s)", f"{_fmt(q['p50'])} / {_fmt(q['p95'])}"))
    rows.append(("languages", ", ".join(f"{k} {v}" for k, v in s.languages.items()) or "-"))
    rows.append(("negative feedback", ", ".join(f"{k} {v}" for k, v in s.negative_feedback.items()) or "0"))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


