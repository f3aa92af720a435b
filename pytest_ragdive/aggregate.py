"""Suite metrics from scored conversations: means per run, the mean over runs,
a cluster-bootstrap 95% CI, per-turn-index and per-question-type means.

Sharded-diagnosis conversations (``conv.sharded``) are left out of those means:
they feed the suite's :class:`ShardedReport` (``result.sharded``) and its
gateable suite-level metrics (sharded_gap, aptitude, unreliability) instead."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from .metrics.registry import METRICS
from .records import Conversation, MetricValue, SuiteResult
from .sharded_metrics import build_report, gate_metrics


def _mean(xs: Iterable[float | None]) -> float | None:
    vals = [x for x in xs if x is not None]
    return sum(vals) / len(vals) if vals else None


def _metric_names(convs: list[Conversation]) -> list[str]:
    names: set[str] = set()
    for c in convs:
        names.update(k for k in c.scores if k in METRICS and METRICS[k].level == "conversation")
        for t in c.turns:
            names.update(k for k in t.scores if k in METRICS and METRICS[k].level == "turn")
    return sorted(names)


def _value(metric: str, convs: list[Conversation]) -> float | None:
    """Turn-level metrics: mean over all turns; conversation-level: over conversations."""
    if METRICS[metric].level == "conversation":
        return _mean(c.scores.get(metric) for c in convs)
    return _mean(t.scores.get(metric) for c in convs for t in c.turns)


def _bootstrap(metric: str, convs: list[Conversation], n_boot: int, seed: int) -> tuple[float | None, float | None]:
    """Percentile CI from resampling whole conversations: the turns of one
    conversation, and its repeats over runs, are one cluster (they are not
    independent). Clusters are ordered by id, and the seed is fixed, so the same
    results give the same interval whatever order they arrived in (xdist)."""
    clusters: dict[str, list[Conversation]] = defaultdict(list)
    for c in convs:
        clusters[c.id].append(c)
    if len(clusters) < 2:
        return None, None
    import numpy as np

    level = METRICS[metric].level
    keys = sorted(clusters)
    sums = np.zeros(len(keys))
    counts = np.zeros(len(keys))
    for i, key in enumerate(keys):
        raw = [
            v
            for c in clusters[key]
            for v in ([c.scores.get(metric)] if level == "conversation" else [t.scores.get(metric) for t in c.turns])
        ]
        vals = [v for v in raw if v is not None]
        sums[i], counts[i] = sum(vals), len(vals)
    if counts.sum() == 0:
        return None, None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(keys), size=(n_boot, len(keys)))
    s, n = sums[idx].sum(axis=1), counts[idx].sum(axis=1)
    ok = n > 0
    stats = s[ok] / n[ok]
    lo, hi = np.percentile(stats, [2.5, 97.5])
    return float(lo), float(hi)


def aggregate(suite: str, convs: list[Conversation], n_boot: int = 1000, seed: int = 0) -> SuiteResult:
    """Aggregate one suite's conversations (all runs). Errored conversations are
    counted but left out of the means."""
    # a fixed order: sums of floats, and so the values, must not depend on the
    # order in which reports arrived (pytest-xdist)
    convs = sorted(convs, key=lambda c: (c.run, c.id))
    sharded = [c for c in convs if c.sharded is not None]
    convs = [c for c in convs if c.sharded is None]
    ok = [c for c in convs if c.error is None]
    by_run: dict[int, list[Conversation]] = defaultdict(list)
    for c in ok:
        by_run[c.run].append(c)
    runs = sorted({c.run for c in convs})
    result = SuiteResult(
        suite=suite,
        runs=len(runs) or 1,
        conversations=len(convs),
        errors=len(convs) - len(ok),
    )
    for metric in _metric_names(ok):
        per_run = [_value(metric, by_run[r]) for r in runs]
        lo, hi = _bootstrap(metric, ok, n_boot, seed)
        mv = MetricValue(
            value=_mean(per_run),
            n=sum(
                1
                for c in ok
                for v in ([c.scores.get(metric)] if METRICS[metric].level == "conversation" else [t.scores.get(metric) for t in c.turns])
                if v is not None
            ),
            ci_low=lo,
            ci_high=hi,
            per_run=per_run,
        )
        if METRICS[metric].level == "turn":
            by_idx: dict[int, list[float | None]] = defaultdict(list)
            by_type: dict[str, list[float | None]] = defaultdict(list)
            for c in ok:
                for t in c.turns:
                    by_idx[t.index].append(t.scores.get(metric))
                    by_type[t.question_type].append(t.scores.get(metric))
            mv.per_turn_index = {str(k): _mean(v) for k, v in sorted(by_idx.items())}
            mv.per_question_type = {k: _mean(v) for k, v in sorted(by_type.items())}
        result.metrics[metric] = mv
    if sharded:
        report = build_report(suite, sharded, seed=seed)
        result.conversations += len(sharded)
        result.errors += sum(1 for c in sharded if c.error is not None)
        if report is not None:
            result.sharded = report
            result.runs = max(result.runs, report.runs)
            result.metrics.update(gate_metrics(report))
    return result
