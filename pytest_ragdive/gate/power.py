"""What the paired gate can see: the smallest regression a suite detects at 80%
power (and the conversations or runs that would bring it down to the tolerance),
each baseline conversation's spread over runs, and which conversations got worse.
The definitions are in :mod:`.paired`'s docstring."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from .paired import EPS, POWER, Pairing, Table, pooled
from .tdist import t_ppf


class Power(BaseModel):
    """How small a regression the suite can detect at 80% power, and what it
    would take to detect one of the tolerance's size."""

    model_config = ConfigDict(extra="forbid")

    mdr: float | None
    se: float | None
    conversations: int
    baseline_runs: int
    too_small: bool = False
    conversations_needed: int | None = None
    runs_needed: int | None = None


class Moved(BaseModel):
    """One conversation that got worse: its drop, its contribution to the mean drop and
    its share of the total drop of the conversations that got worse (shares sum to at most 1)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    drop: float
    contribution: float
    share: float = 0.0


def _noise_sums(baseline: Table) -> tuple[float, float, float] | None:
    """``(sum w_i^2 s_i^2, sum w_i^2 s_i^2 / R_i, sum w_i)`` over the baseline's
    conversations (``s_i^2``: the sample variance over its ``R_i`` runs);
    None when no conversation has two runs (the noise is unknown)."""
    s1 = s2 = wsum = 0.0
    known = False
    for vals in baseline.values():
        if not vals:
            continue
        m, w = pooled(vals)
        wsum += w
        if len(vals) < 2:
            continue
        known = True
        v = w * w * sum((x.value - m) ** 2 for x in vals) / (len(vals) - 1)
        s1 += v
        s2 += v / len(vals)
    return (s1, s2, wsum) if known and wsum > 0 else None


def noise_se(baseline: Table, current_runs: int = 1) -> float | None:
    """Standard error of the paired mean drop of a healthy run with
    ``current_runs`` runs, from each conversation's spread over the baseline
    runs: ``sqrt(sum w_i^2 s_i^2 (1/k + 1/R_i)) / sum w_i``. None when no
    conversation has two baseline runs."""
    sums = _noise_sums(baseline)
    if sums is None:
        return None
    s1, s2, w = sums
    return math.sqrt(s1 / current_runs + s2) / w


def power(baseline: Table, tolerance: float, alpha: float, metrics: int = 1, target: float = POWER) -> Power:
    """The minimum detectable regression at ``target`` power of a one-run
    paired test at Holm's strictest level ``alpha / metrics``, and, when it
    exceeds ``tolerance``, the conversations (at one run) or runs (with these
    conversations, at most 50) that would bring it down to the tolerance."""
    return power_of(baseline, tolerance, alpha, target)(metrics)


def power_of(baseline: Table, tolerance: float, alpha: float, target: float = POWER) -> Callable[[int], Power]:
    """:func:`power` for a number of metrics known later (Holm's family: the metrics
    tested), holding what it needs of the table (a few numbers), not the table."""
    n = sum(1 for v in baseline.values() if v)
    runs = max((len(v) for v in baseline.values()), default=0)
    return functools.partial(_power, n, runs, _noise_sums(baseline), tolerance, alpha, target)


def _power(
    n: int, runs: int, sums: tuple[float, float, float] | None, tolerance: float, alpha: float, target: float, metrics: int
) -> Power:
    if sums is None:
        return Power(mdr=None, se=None, conversations=n, baseline_runs=runs)
    s1, s2, w = sums
    df = max(n - 1, 1)  # Student's t, as the test (the conversations needed are sized at this df, a little conservative)
    k = t_ppf(1 - alpha / max(metrics, 1), df) + t_ppf(target, df)
    se = math.sqrt(s1 + s2) / w
    out = Power(mdr=k * se, se=se, conversations=n, baseline_runs=runs)
    if k * se <= tolerance + EPS:
        return out
    out.too_small = True
    if tolerance > 0:
        out.conversations_needed = math.ceil(n * (k * se / tolerance) ** 2)
        room = (tolerance * w / k) ** 2 - s2  # what the PR runs' noise s1 / r may use
        if room > 0 and (r := max(2, math.ceil(s1 / room - EPS))) <= 50:
            out.runs_needed = r
    return out


def spread(baseline: Table) -> dict[str, float]:
    """Each conversation's 90th minus 10th percentile over the baseline runs
    (conversations with at least two runs). Conversations with as many runs
    are computed together (one percentile call along rows: the same numbers)."""
    import numpy as np

    by_runs: dict[int, list[str]] = {}
    for k, vals in baseline.items():
        if len(vals) > 1:
            by_runs.setdefault(len(vals), []).append(k)
    got: dict[str, float] = {}
    for ids in by_runs.values():
        a = np.asarray([[v.value for v in baseline[k]] for k in ids])
        lo, hi = np.percentile(a, [10, 90], axis=1)
        got.update(zip(ids, (hi - lo).tolist(), strict=True))
    return {k: got[k] for k in baseline if k in got}


def unstable(spreads: dict[str, float], threshold: float) -> list[str]:
    """Conversations whose baseline spread exceeds ``threshold``, widest first."""
    return sorted((k for k, s in spreads.items() if s > threshold + EPS), key=lambda k: (-spreads[k], k))


def worse(p: Pairing, limit: int = 5) -> list[Moved]:
    """The conversations that moved most on the bad side, largest
    contribution to the mean drop first."""
    w = sum(p.weights)
    if w <= 0:
        return []
    rows = [Moved(id=k, drop=d, contribution=d * x / w) for k, d, x in zip(p.ids, p.drops, p.weights, strict=True) if d > EPS]
    total = sum(r.contribution for r in rows)
    for r in rows:
        r.share = r.contribution / total
    return sorted(rows, key=lambda r: (-r.contribution, r.id))[:limit]
