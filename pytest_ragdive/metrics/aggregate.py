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


class _Layout:
    """Where each value of a metric sits, the same for every metric: the scored
    conversations (in (run, id) order) and their turns laid out flat, each run a
    contiguous stretch, each cluster (a conversation id, all its runs) a few stretches.
    A metric's values are one flat list in that order; every mean below reads it in
    the order the conversations and their turns come (the same sums, value for value,
    as reading conversation by conversation)."""

    def __init__(self, ok: list[Conversation], runs: list[int], where: dict[str, int]) -> None:
        self.turns = [t for c in ok for t in c.turns]
        # per level ("turn": the flat turns; "conversation": the conversations): each run's
        # stretch, and each cluster's stretches in (run, then turn) order
        self.run_spans: dict[str, list[tuple[int, int]]] = {}
        self.cluster_spans: dict[str, list[list[tuple[int, int]]]] = {}
        for level in ("turn", "conversation"):
            sizes = [len(c.turns) if level == "turn" else 1 for c in ok]
            clusters: list[list[tuple[int, int]]] = [[] for _ in where]
            first = dict.fromkeys(runs, -1)
            last = dict.fromkeys(runs, 0)
            pos = 0
            for c, size in zip(ok, sizes, strict=True):
                if first[c.run] < 0:
                    first[c.run] = pos
                clusters[where[c.id]].append((pos, pos + size))
                pos += size
                last[c.run] = pos
            self.run_spans[level] = [(max(first[r], 0), last[r]) for r in runs]
            self.cluster_spans[level] = clusters
        by_idx: dict[int, list[int]] = defaultdict(list)
        by_type: dict[str, list[int]] = defaultdict(list)
        for j, t in enumerate(self.turns):
            by_idx[t.index].append(j)
            by_type[t.question_type].append(j)
        self.by_idx = sorted(by_idx.items())
        self.by_type = sorted(by_type.items())

    def values(self, metric: str, ok: list[Conversation]) -> list[float | None]:
        """A metric's raw values, flat (conversation-level: one per conversation)."""
        if METRICS[metric].level == "conversation":
            return [c.scores.get(metric) for c in ok]
        return [t.scores.get(metric) for t in self.turns]


def _cluster_sums(flat: list[float | None], spans: list[list[tuple[int, int]]]) -> tuple[list[float], list[int]]:
    """Per cluster (conversation id, all its runs), the sum and count of its present
    values, summed in run then turn order."""
    sums, counts = [], []
    for stretches in spans:
        vals = [v for a, b in stretches for v in flat[a:b] if v is not None]
        sums.append(sum(vals))
        counts.append(len(vals))
    return sums, counts


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
    layout = _Layout(ok, runs, {key: i for i, key in enumerate(keys)})
    sums: dict[str, tuple[list[float], list[int]]] = {}
    for metric in names:  # one metric's raw values at a time (a large suite's are never all held)
        level = METRICS[metric].level
        flat = layout.values(metric, ok)
        per_run = [mean(flat[a:b]) for a, b in layout.run_spans[level]]
        mv = MetricValue(value=mean(per_run), n=len(flat) - flat.count(None), per_run=per_run)
        if level == "turn":
            mv.per_turn_index = {str(k): mean(map(flat.__getitem__, js)) for k, js in layout.by_idx}
            mv.per_question_type = {k: mean(map(flat.__getitem__, js)) for k, js in layout.by_type}
        sums[metric] = _cluster_sums(flat, layout.cluster_spans[level])
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
