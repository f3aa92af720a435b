"""Suite metrics from scored conversations: means per run, the mean over runs,
a cluster-bootstrap 95% CI, per-turn-index and per-question-type means.

Sharded-diagnosis conversations (``conv.sharded``) are left out of those means:
they feed the suite's :class:`ShardedReport` (``result.sharded``) and its
gateable suite-level metrics (sharded_gap, aptitude, unreliability) instead."""

from __future__ import annotations

from collections import defaultdict

from ..core.records import Conversation
from ..core.results import MetricValue, SuiteResult
from ..core.stats import cluster_bootstrap, mean, percentile_interval
from ..sharded.diagnosis import build_report, gate_metrics
from .registry import METRICS


def _metric_names(convs: list[Conversation]) -> list[str]:
    names: set[str] = set()
    for c in convs:
        names.update(k for k in c.scores if k in METRICS and METRICS[k].level == "conversation")
        for t in c.turns:
            names.update(k for k in t.scores if k in METRICS and METRICS[k].level == "turn")
    return sorted(names)


def _values(metric: str, conv: Conversation) -> list[float | None]:
    """A conversation's raw values of a metric, in turn order (conversation-level: its one value)."""
    if METRICS[metric].level == "conversation":
        return [conv.scores.get(metric)]
    return [t.scores.get(metric) for t in conv.turns]


def _cluster_sums(raw: list[list[float | None]], cluster: list[int], k: int) -> tuple[list[float], list[int]]:
    """Per cluster (conversation id, all its runs), the sum and count of its present
    values, summed in conversation then turn order."""
    vals: list[list[float]] = [[] for _ in range(k)]
    for i, values in zip(cluster, raw, strict=True):
        vals[i].extend(v for v in values if v is not None)
    return [sum(v) for v in vals], [len(v) for v in vals]


def _bootstrap_all(
    sums: dict[str, tuple[list[float], list[int]]], k: int, n_boot: int, seed: int
) -> dict[str, tuple[float | None, float | None]]:
    """Percentile CIs of every metric from resampling whole conversations (the cluster
    bootstrap of :mod:`pytest_ragdive.core.stats`: a conversation's turns and its repeats
    over runs are one cluster; every metric resampled with the same draws)."""
    out: dict[str, tuple[float | None, float | None]] = dict.fromkeys(sums, (None, None))
    todo = [m for m, (_, n) in sums.items() if sum(n) > 0]
    if k < 2 or not todo:
        return out
    draws = cluster_bootstrap([sums[m][0] for m in todo], [sums[m][1] for m in todo], n_boot=n_boot, seed=seed)
    for m, d in zip(todo, draws, strict=True):
        out[m] = percentile_interval(d)
    return out


def aggregate(suite: str, convs: list[Conversation], n_boot: int = 1000, seed: int = 0) -> SuiteResult:
    """Aggregate one suite's conversations (all runs). Errored conversations are
    counted but left out of the means."""
    # a fixed order: sums of floats, and so the values, must not depend on the
    # order in which reports arrived (pytest-xdist)
    convs = sorted(convs, key=lambda c: (c.run, c.id))
    sharded = [c for c in convs if c.sharded is not None]
    convs = [c for c in convs if c.sharded is None]
    ok = [c for c in convs if c.error is None and c.not_run is None]  # not run (no key): left out too
    runs = sorted({c.run for c in convs})
    result = SuiteResult(
        suite=suite,
        runs=len(runs) or 1,
        conversations=len(convs),
        errors=sum(1 for c in convs if c.error is not None),
    )
    names = _metric_names(ok)
    keys = sorted({c.id for c in ok})
    where = {key: i for i, key in enumerate(keys)}
    cluster = [where[c.id] for c in ok]
    sums: dict[str, tuple[list[float], list[int]]] = {}
    for metric in names:  # one metric's raw values at a time (a large suite's are never all held)
        values = [_values(metric, c) for c in ok]
        per_run = [mean(v for c, vs in zip(ok, values, strict=True) if c.run == r for v in vs) for r in runs]
        mv = MetricValue(value=mean(per_run), n=sum(1 for vs in values for v in vs if v is not None), per_run=per_run)
        if METRICS[metric].level == "turn":
            by_idx: dict[int, list[float | None]] = defaultdict(list)
            by_type: dict[str, list[float | None]] = defaultdict(list)
            for c, vs in zip(ok, values, strict=True):
                for t, v in zip(c.turns, vs, strict=True):
                    by_idx[t.index].append(v)
                    by_type[t.question_type].append(v)
            mv.per_turn_index = {str(k): mean(v) for k, v in sorted(by_idx.items())}
            mv.per_question_type = {k: mean(v) for k, v in sorted(by_type.items())}
        sums[metric] = _cluster_sums(values, cluster, len(keys))
        result.metrics[metric] = mv
    for metric, (lo, hi) in _bootstrap_all(sums, len(keys), n_boot, seed).items():
        result.metrics[metric].ci_low, result.metrics[metric].ci_high = lo, hi
    if sharded:
        report = build_report(suite, sharded, seed=seed)
        result.conversations += len(sharded)
        result.errors += sum(1 for c in sharded if c.error is not None)
        if report is not None:
            result.sharded = report
            result.runs = max(result.runs, report.runs)
            result.metrics.update(gate_metrics(report))
    return result
