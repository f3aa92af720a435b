"""Repeated-run statistics of the sharded diagnosis: BEST, aptitude, unreliability, paired bootstrap.

Definitions (Laban et al.; the sharded-RAG study keeps them):

- **BEST** of a conversation: the maximum score over its answer attempts, 0
  when it made none.
- **aptitude** of a question: the 90th percentile of its N per-run scores;
  **unreliability**: the 90th minus the 10th percentile. Percentiles use
  linear interpolation between order statistics (numpy's default, Excel's
  PERCENTILE.INC): the p-th percentile of sorted ``x[0..n-1]`` is at rank
  ``p/100 * (n-1)``. A condition's aptitude and unreliability are the means
  of the per-question values.
- **Paired cluster bootstrap**: a statistic over questions is recomputed on
  ``n_boot`` resamples of the questions drawn with replacement, all runs (and
  pairs) of a question kept together; the 95% interval is the 2.5th and
  97.5th percentile of the resampled statistic. Questions are sorted by id and
  the seed is fixed, so the same data give the same interval in any order.

Pure Python, no numpy: deterministic across platforms and cheap at this size.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from .records import QuestionEstimate

__all__ = [
    "QuestionEstimate",
    "aptitude",
    "best",
    "cluster_bootstrap",
    "mean",
    "mean_over_questions",
    "paired_difference",
    "percentile",
    "unreliability",
]

T = TypeVar("T")

DEFAULT_BOOT = 2000
DEFAULT_SEED = 0


def mean(xs: Iterable[float | None]) -> float | None:
    vals = [x for x in xs if x is not None]
    return math.fsum(vals) / len(vals) if vals else None


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0..100) with linear interpolation; ValueError on no values."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= p <= 100:
        raise ValueError(f"percentile must be in [0, 100], got {p}")
    xs = sorted(values)
    rank = p / 100 * (len(xs) - 1)
    lo = math.floor(rank)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (rank - lo)


def aptitude(scores: Sequence[float]) -> float:
    """90th percentile of one question's per-run scores."""
    return percentile(scores, 90)


def unreliability(scores: Sequence[float]) -> float:
    """90th minus 10th percentile of one question's per-run scores."""
    return percentile(scores, 90) - percentile(scores, 10)


def best(scores: Iterable[float | None]) -> float:
    """The maximum over a conversation's answer-attempt scores; 0 without any."""
    vals = [s for s in scores if s is not None]
    return max(vals) if vals else 0.0


def mean_over_questions(table: Mapping[str, Sequence[float]], fn: Callable[[Sequence[float]], float]) -> float | None:
    """``fn`` of each question's per-run scores, averaged over the questions that have any."""
    return mean(fn(v) for _, v in sorted(table.items()) if v)


def cluster_bootstrap(
    clusters: Mapping[str, T],
    stat: Callable[[list[T]], float | None],
    *,
    n_boot: int = DEFAULT_BOOT,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> tuple[float | None, float | None, float | None]:
    """(statistic, low, high): ``stat`` on all clusters, and its percentile interval over
    ``n_boot`` resamples of the clusters (with replacement, sorted by key, fixed seed).
    Resamples where ``stat`` is None are skipped; no interval with fewer than two clusters."""
    keys = sorted(clusters)
    items = [clusters[k] for k in keys]
    value = stat(items) if items else None
    if len(items) < 2 or value is None:
        return value, None, None
    rng = random.Random(seed)
    draws: list[float] = []
    n = len(items)
    for _ in range(n_boot):
        s = stat([items[rng.randrange(n)] for _ in range(n)])
        if s is not None:
            draws.append(s)
    if not draws:
        return value, None, None
    tail = (1 - level) / 2 * 100
    return value, percentile(draws, tail), percentile(draws, 100 - tail)


def _mean_pair_difference(groups: list[list[tuple[float, float]]]) -> float | None:
    diffs = [a - b for g in groups for a, b in g]
    return math.fsum(diffs) / len(diffs) if diffs else None


def paired_difference(
    pairs: Mapping[str, Sequence[tuple[float, float]]], *, n_boot: int = DEFAULT_BOOT, seed: int = DEFAULT_SEED
) -> QuestionEstimate:
    """Mean of ``a - b`` over every (a, b) pair, with a question-cluster bootstrap 95% CI.

    ``pairs`` maps a question id to its pairs (one per run: the two conditions' scores of
    the same question in the same run). Questions without pairs are ignored."""
    kept = {k: list(v) for k, v in pairs.items() if v}
    value, lo, hi = cluster_bootstrap(kept, _mean_pair_difference, n_boot=n_boot, seed=seed)
    return QuestionEstimate(value=value, ci_low=lo, ci_high=hi, questions=len(kept), pairs=sum(len(v) for v in kept.values()))
