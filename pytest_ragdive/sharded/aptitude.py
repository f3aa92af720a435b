"""Repeated-run statistics of the sharded diagnosis: BEST, aptitude, unreliability, paired differences.

Definitions (Laban et al.; the sharded-RAG study keeps them):

- **BEST** of a conversation: the maximum score over its answer attempts, 0
  when it made none.
- **aptitude** of a question: the 90th percentile of its N per-run scores;
  **unreliability**: the 90th minus the 10th percentile. Percentiles use
  linear interpolation between order statistics (numpy's default, Excel's
  PERCENTILE.INC): the p-th percentile of sorted ``x[0..n-1]`` is at rank
  ``p/100 * (n-1)``. A condition's aptitude and unreliability are the means
  of the per-question values.
- **Intervals**: a statistic over questions is recomputed on ``n_boot`` resamples of
  the questions drawn with replacement, all runs (and pairs) of a question kept
  together (the cluster bootstrap of :mod:`pytest_ragdive.core.stats`); the 95%
  interval is the 2.5th and 97.5th percentile of the resampled statistic. Questions
  are sorted by id and the seed is fixed, so the same data give the same interval in
  any order. Every statistic here is a ratio of question sums (:func:`question_ratio`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

from ..core.stats import cluster_bootstrap, mean, percentile_interval
from .records import QuestionEstimate

__all__ = [
    "aptitude",
    "best",
    "mean_over_questions",
    "paired_difference",
    "percentile",
    "question_ratio",
    "unreliability",
]


DEFAULT_BOOT = 5000  # resamples of the sharded statistics (the study's 5,000)
DEFAULT_SEED = 0


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


def question_ratio(
    numer: Mapping[str, float],
    denom: Mapping[str, float],
    *,
    n_boot: int = DEFAULT_BOOT,
    seed: int = DEFAULT_SEED,
    min_denom: float = 0.0,
    level: float = 0.95,
) -> tuple[float | None, float | None, float | None]:
    """(statistic, low, high) of ``sum(numer) / sum(denom)`` over the questions (keys of
    ``numer``, sorted), and its percentile interval over ``n_boot`` question resamples.
    The statistic is None when the total denominator is not above ``min_denom``; no
    interval with fewer than two questions."""
    keys = sorted(numer)
    total = sum(denom[k] for k in keys)
    value = sum(numer[k] for k in keys) / total if keys and total > min_denom else None
    if len(keys) < 2 or value is None:
        return value, None, None
    (draws,) = cluster_bootstrap([[numer[k] for k in keys]], [denom[k] for k in keys], n_boot=n_boot, seed=seed,
                                 min_denom=min_denom)
    lo, hi = percentile_interval(draws, level)
    return value, lo, hi


def mean_over_questions(table: Mapping[str, Sequence[float]], fn: Callable[[Sequence[float]], float]) -> float | None:
    """``fn`` of each question's per-run scores, averaged over the questions that have any."""
    return mean(fn(v) for _, v in sorted(table.items()) if v)


def paired_difference(
    pairs: Mapping[str, Sequence[tuple[float, float]]], *, n_boot: int = DEFAULT_BOOT, seed: int = DEFAULT_SEED
) -> QuestionEstimate:
    """Mean of ``a - b`` over every (a, b) pair, with a question-cluster bootstrap 95% CI.

    ``pairs`` maps a question id to its pairs (one per run: the two conditions' scores of
    the same question in the same run). Questions without pairs are ignored."""
    kept = {k: list(v) for k, v in pairs.items() if v}
    value, lo, hi = question_ratio(
        {k: sum(a - b for a, b in v) for k, v in kept.items()}, {k: float(len(v)) for k, v in kept.items()},
        n_boot=n_boot, seed=seed,
    )
    return QuestionEstimate(value=value, ci_low=lo, ci_high=hi, questions=len(kept), pairs=sum(len(v) for v in kept.values()))
