"""Whether a metric's current value was scored on a set comparable to its baseline's.

A metric is scored on its *eligible units*: the turns that have a value (turn-level
metrics) or the conversations that have one (conversation-level metrics); a unit that is
n/a (None) is not counted. When a bot breaks so that most units become n/a (nothing
answered correctly stand-alone, so forgetfulness is not scored; no relevant document
retrieved), the few units left can read better than the baseline's without the bot being
better. So an *improvement* is declared only when, per run, the current value was scored
on at least ``MIN_SHARE`` (80%) of the units of the baseline's smallest run; otherwise
the row passes, says why the metric is not comparable, and no update of the baseline is
advised. A regression stands whatever the counts (failing is the safe side); a baseline
without per-conversation values (format 1) cannot tell, and is taken as comparable.
"""

from __future__ import annotations

import math

from ..core.results import BaselineMetric, MetricValue

__all__ = ["MIN_SHARE", "baseline_units", "not_comparable"]

#: the share of the baseline's scored units per run a current run must reach for its value to be comparable
MIN_SHARE = 0.8


def baseline_units(bm: BaselineMetric) -> int | None:
    """The scored units of the baseline's smallest run (None without per-conversation values)."""
    cv = bm.conversations
    if not cv:
        return None
    r = cv.runs
    per_run = [0] * r
    for i, (v, n) in enumerate(zip(cv.numbers, cv.counts, strict=True)):
        if not math.isnan(v):
            per_run[i % r] += max(int(n), 1)
    return min(per_run) if per_run else None


def not_comparable(metric: str, level: str, current: MetricValue | None, runs: int, bm: BaselineMetric | None) -> str:
    """Why ``current`` is not comparable with the baseline ``bm`` (empty when it is)."""
    if bm is None or current is None:
        return ""
    base = baseline_units(bm)
    if not base:
        return ""
    now = current.n / max(runs, 1)
    if now + 1e-9 >= MIN_SHARE * base:
        return ""
    unit = "conversation" if level == "conversation" else "turn"
    return (
        f"not comparable: scored on {now:g} {unit}(s) a run, the baseline on {base} (the rest n/a: not answered "
        f"or not applicable); an improvement needs at least {MIN_SHARE:.0%} of the baseline's scored {unit}s"
    )
