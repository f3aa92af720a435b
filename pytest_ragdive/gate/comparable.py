"""Whether a metric's current value was scored on a set comparable to its baseline's.

A metric is scored on its *eligible units*: the turns that have a value (turn-level
metrics) or the conversations that have one (conversation-level metrics); a unit that is
n/a (None) is not counted. When a bot breaks so that most units become n/a (nothing
answered correctly stand-alone, so forgetfulness is not scored; no relevant document
retrieved), the few units left can read better than the baseline's without the bot being
better. So an *improvement* is declared only when

1. per run, the current value was scored on at least ``MIN_SHARE`` (80%) of the units of
   the baseline's smallest run (:func:`not_comparable`); and
2. for the forgetfulness probe's metrics (``ELIGIBLE_METRICS``: a conversation's value is
   a share of its *eligible turns*, the follow-ups answered correctly stand-alone), the
   same turns are still eligible (:func:`lost_eligible`). A turn the baseline held
   eligible in every run it probed the conversation, and that is not eligible in every
   run of this session, is *lost*; a conversation that lost one is left out, and the
   improvement must still show over the conversations that kept all theirs: the
   baseline's band over those conversations alone (each baseline run's mean over them,
   :func:`pytest_ragdive.gate.fallback.restrict`) against this session's mean over them
   (:func:`kept_not_comparable`). A bot whose stand-alone answers got worse loses the
   follow-ups it forgot, and the share of the rest reads better: counting eligible turns
   cannot see that (10 eligible turns, 2 forgotten, against 9, 1 forgotten), pairing
   them does.

Otherwise the row passes, says why the metric is not comparable, and no update of the
baseline is advised. A regression stands whatever the counts (failing is the safe side).
A baseline without per-conversation values (format 1) cannot tell, and is taken as
comparable; one without eligible turns (recorded before they were kept) is checked by
rule 1 alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from ..core.records import Conversation
from ..core.results import BaselineMetric, MetricValue

__all__ = [
    "ELIGIBLE_METRICS", "MIN_SHARE", "baseline_units", "kept_not_comparable", "lost_eligible", "not_comparable",
]

#: the share of the baseline's scored units per run a current run must reach for its value to be comparable
MIN_SHARE = 0.8
#: the metrics whose conversation value is a share of the probe's eligible turns
#: (``metrics.multiturn.PROBE_METRICS``; a test keeps the two equal)
ELIGIBLE_METRICS: tuple[str, ...] = ("forgetfulness", "forgotten_turn_share", "context_retention")
LOST_LISTED = 5  # lost turns named in the reason


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


def lost_eligible(bm: BaselineMetric | None, convs: Iterable[Conversation]) -> dict[str, list[int]] | None:
    """Per conversation, the turns the baseline held eligible in every run that probed it
    and this session's runs (``convs``, one suite) do not all hold eligible: a conversation
    that did not run, or errored, loses nothing (it is not paired). None when the baseline
    keeps no eligible turns."""
    if bm is None or bm.eligible is None:
        return None
    now: dict[str, set[int]] = {}  # the turns eligible in every run of this session
    for c in convs:
        if c.error is not None or c.not_run is not None:
            continue
        turns = set(c.eligible_turns or ())
        now[c.id] = now[c.id] & turns if c.id in now else turns
    lost: dict[str, list[int]] = {}
    for cid, runs in bm.eligible.items():
        if cid not in now:
            continue
        probed = [set(r) for r in runs if r]
        stable = set.intersection(*probed) if probed else set()
        gone = sorted(stable - now[cid])
        if gone:
            lost[cid] = gone
    return lost


def _current_mean(convs: Iterable[Conversation], metric: str, keep: set[str]) -> float | None:
    """This session's value of a conversation-level metric over the conversations ``keep``:
    each run's mean over them, averaged over the runs (as the suite value is)."""
    per_run: dict[int, list[float]] = {}
    for c in convs:
        v = c.scores.get(metric)
        if c.id in keep and c.error is None and v is not None and v == v:
            per_run.setdefault(c.run, []).append(float(v))
    means = [sum(vs) / len(vs) for vs in per_run.values() if vs]
    return sum(means) / len(means) if means else None


def kept_not_comparable(
    metric: str, bm: BaselineMetric | None, convs: Iterable[Conversation], tolerance: float, direction: str,
) -> str:
    """Why an improvement of a probe metric (``ELIGIBLE_METRICS``) is not comparable: the
    baseline's eligible turns are not all kept, and over the conversations that kept theirs
    the value is not better than the baseline's band there (empty when it is comparable)."""
    from .fallback import restrict

    convs = list(convs)
    lost = lost_eligible(bm, convs)
    if not lost or bm is None or bm.conversations is None:
        return ""
    ran = {c.id for c in convs if c.error is None and c.scores.get(metric) is not None}
    keep = {cid for cid in bm.conversations.ids if cid in ran and cid not in lost}
    names = [f"{cid} turn {t + 1}" for cid in sorted(lost) for t in lost[cid]]
    listed = ", ".join(names[:LOST_LISTED]) + (f" and {len(names) - LOST_LISTED} more" if len(names) > LOST_LISTED else "")
    why = (f"not comparable: {len(names)} of the baseline's eligible turns (answered correctly stand-alone) "
           f"no longer are ({listed}), so fewer follow-ups can count as forgotten")
    if not keep:
        return why + "; no conversation kept all its eligible turns"
    base = restrict(bm, keep)
    now = _current_mean(convs, metric, keep)
    if base is None or now is None:
        return why
    low, high = base.band(tolerance)
    better = now < low - 1e-9 if direction == "lower" else now > high + 1e-9
    if better:
        return ""
    return (why + f"; over the {len(keep)} conversation(s) that kept theirs it reads {now:.3g}, "
            f"within the baseline's [{max(low, 0.0):.3g}, {min(high, 1.0):.3g}] there")
