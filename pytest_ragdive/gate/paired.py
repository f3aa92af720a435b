"""Paired statistics of the gate: per-conversation values, a cluster bootstrap
of the paired difference, Holm's correction, power, and the verdict rule.

Pure functions over per-conversation tables (no pytest, no files). numpy is
imported inside the functions that need it, so importing this module is cheap.

How the gate decides (the rule, written once)
---------------------------------------------

For one gated metric of one suite, let the *drop* be the change on the
metric's bad side (``baseline - current`` for higher-is-better metrics,
``current - baseline`` for lower-is-better ones), so a positive drop is worse.

1. **Band** (today's gate, what users set and read): ``out`` when the suite
   value is outside ``[min - tol, max + tol]`` of the baseline runs on the
   bad side, ``improvement`` when outside on the good side, else ``in``.
2. **Paired differences**: for every conversation in both the baseline and
   this run, ``d_i`` = its drop against the baseline's mean for that
   conversation (turn-level metrics: the conversation's mean over its scored
   turns, weighted by the number of scored turns, as the suite mean is).
   ``D`` = the weighted mean of ``d_i``. A cluster bootstrap over the ``n``
   conversations (``N_BOOT`` resamples, seed ``SEED``) gives its distribution,
   with the small-sample correction of the *expanded percentile interval*
   (Hesterberg, "What teachers should know about the bootstrap", 2015): each
   resampled mean's deviation from ``D`` is scaled by ``sqrt(n / (n - 1))``
   (the plain bootstrap's variance of a mean is ``(n - 1) / n`` times the
   unbiased ``s^2 / n``), and a bound of level ``q`` is read at the
   bootstrap's ``Phi(t_{n-1}^{-1}(q))`` quantile (Student's t with ``n - 1``
   degrees of freedom in place of the normal: the spread itself is estimated
   from ``n`` conversations). The p-value of "no drop" is the same mapping:
   ``p = T_{n-1}(Phi^{-1}(share of resamples <= 0))``. With the scaling
   alone, the one-sided test on the healthy example bot's 30-conversation
   core suite fired 2.1% of the time at a nominal 1.7%; with the t levels
   too, 1.5% to 1.6% (``bench_gate.py``'s pools).
3. **Two one-sided tests** at level ``a = ALPHA / (1 + max_reruns)`` (the
   alpha split evenly over the looks a rerun may take):

   - *significant* (the drop is real): ``H0: drop <= 0`` rejected, with
     Holm's step-down correction across the suite's gated metrics (the suite
     fails when any metric regresses, so the false alarms of the family are
     controlled); the lower bound ``L`` is reported at the Holm level. A
     noise-free difference (see below) is known exactly, can raise no false
     alarm, and is left out of the family.
   - *within* (non-inferiority, the tolerance as margin): the upper bound
     ``U`` (one-sided ``1 - a``) is ``<= tol``. No correction: a suite passes
     only when every metric passes (an intersection-union test).

4. **Verdict**:

   ============  ===================================  ============
   band          paired                               verdict
   ============  ===================================  ============
   improvement   any                                  improvement
   any           within                               pass
   out           significant                          regression
   out           not significant                      inconclusive
   in            significant                          inconclusive
   in            not significant, ``D > tol``,        inconclusive
                 and a rerun is still to come
   in            not significant (otherwise)          pass
   ============  ===================================  ============

   An inconclusive verdict follows ``gate.inconclusive``: ``fail``, ``pass``,
   or ``rerun`` (default): run the suite again, pool every run per
   conversation, decide again; inconclusive after the last look fails.
   The row "``D > tol`` and a rerun is still to come" asks for more runs
   when the estimate is past the tolerance but the evidence is weak; at the
   last look (and with ``fail``/``pass``, whose only look is the last) the
   band's pass stands, so that a suite too small for its tolerance does not
   fail a healthy chatbot.

Why it has the properties the gate promises:

- *A healthy chatbot fails at most 5% of the time*: a regression needs a
  significant drop, and the significance tests over all looks and metrics
  spend at most ``ALPHA`` between them (Holm, the even split over looks).
  The only other way to fail is to stay inconclusive to the last look with
  the pooled value out of the band and no significant drop, which the band
  itself makes rare; the benchmark (``benchmarks/bench_gate.py``) measures
  the total.
- *A drop of the tolerance's size is caught at least 80% of the time once
  the suite is large enough*: at a drop ``>= tol`` the *within* test passes
  at most ``a`` of the time; everything else is a regression or an
  inconclusive that ends in a failure unless the drop is not significant.
  So the catch rate is the power of the significance test, which is >= 80%
  when the minimum detectable regression ``MDR = (t(1-a/m) + t(0.8)) * SE``
  (Student's t, ``n - 1`` degrees of freedom) is at most ``tol`` (``SE`` from the baseline runs' per-conversation spread,
  ``m`` gated metrics). :func:`power` says how many conversations that needs.
- *A consistent drop smaller than the tolerance passes*: it passes when it
  is not significant, or when ``U <= tol``, which holds once
  ``t(1-a) * SE <= tol - drop``.
- *A deterministic chatbot reduces to the band*: when every conversation's
  value repeats exactly within each side (and some side has two runs), the
  paired difference is known without error (``L = U = D``, no bootstrap),
  and the table gives exactly the band's verdict. That needs the chatbot to
  repeat, not one metric: when a gated metric of the answers varies between
  the runs of either side (a chatbot that samples, or its judge), no
  difference of a metric of the answers is taken as known without error,
  only the absence of one; when a retrieval metric varies, no difference of
  any metric (a sampled bot's share of forgotten turns can repeat over five
  baseline runs by chance and then read as a sure drop in a single current
  run: ``gate.rows.paired_rows``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from ..core.records import Conversation
from ..core.results import BaselineMetric
from ..core.stats import cluster_bootstrap
from ..metrics.registry import METRICS
from .tdist import t_cdf, t_ppf

if TYPE_CHECKING:
    import numpy as np

ALPHA = 0.05
POWER = 0.80
N_BOOT = 20_000
SEED = 0
EPS = 1e-9

BandVerdict = Literal["pass", "regression", "improvement"]
PairedVerdict = Literal["pass", "regression", "improvement", "inconclusive"]


@dataclass(slots=True)
class ConvValue:
    """One conversation's value of one metric in one run, and how many scored
    turns it averages (1 for conversation-level metrics). A plain slotted record:
    the gate makes one per conversation, metric and run (a pydantic one cost ten
    times as much to make)."""

    value: float
    count: int = 1


# conversation id -> its values, one per run that scored it
Table = dict[str, list[ConvValue]]


class Pairing(BaseModel):
    """The conversations of one metric present on both sides, with their drops."""

    model_config = ConfigDict(extra="forbid")

    ids: list[str]
    drops: list[float]
    weights: list[float]
    new: list[str] = []
    missing: list[str] = []
    noise_free: bool = False

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def drop(self) -> float | None:
        w = sum(self.weights)
        return sum(d * x for d, x in zip(self.drops, self.weights, strict=True)) / w if w > 0 else None


class PairedResult(BaseModel):
    """The paired test of one metric: the drop, its bounds and both tests."""

    model_config = ConfigDict(extra="forbid")

    n: int
    drop: float
    low: float
    high: float
    p_drop: float
    level: float  # the level of the lower bound (Holm's for this metric)
    alpha: float  # the level of the upper bound (this look's)
    significant: bool
    within: bool
    noise_free: bool


# -- per-conversation values --------------------------------------------------


def conversation_value(conv: Conversation, metric: str) -> ConvValue | None:
    """Turn-level metrics: the mean over the conversation's scored turns (with
    their count); conversation-level metrics: the conversation's score."""
    spec = METRICS.get(metric)
    if spec is not None and spec.level == "conversation":
        v = conv.scores.get(metric)
        return None if v is None or v != v else ConvValue(float(v), 1)  # (v != v: NaN)
    vals = [s for t in conv.turns if (s := t.scores.get(metric)) is not None and s == s]
    return ConvValue(sum(vals) / len(vals), len(vals)) if vals else None


def value_of(conv: Conversation, metric: str) -> float | None:
    """:func:`conversation_value`'s value alone (None where the conversation has none)."""
    v = conversation_value(conv, metric)
    return None if v is None else v.value


def table(convs: Iterable[Conversation], metric: str) -> Table:
    """Per-conversation values of one metric, keyed by conversation id (sorted),
    runs in order; errored conversations are left out."""
    out: dict[str, list[tuple[int, ConvValue]]] = defaultdict(list)
    for c in convs:
        if c.error is None and (v := conversation_value(c, metric)) is not None:
            out[c.id].append((c.run, v))
    return {k: [v for _, v in sorted(out[k], key=lambda rv: rv[0])] for k in sorted(out)}


def pooled(values: Sequence[ConvValue]) -> tuple[float, float]:
    """A conversation's value over its runs (weighted by scored turns) and its
    weight (the mean number of scored turns per run)."""
    total = sum(v.count for v in values)
    return sum(v.value * v.count for v in values) / total, total / len(values)


def _constant(values: Sequence[ConvValue]) -> bool:
    return max(v.value for v in values) - min(v.value for v in values) <= EPS


def varies(side: Table) -> bool:
    """Whether some conversation's value differs between the runs of one side."""
    return any(len(v) > 1 and not _constant(v) for v in side.values())


def pair(baseline: Table, current: Table, direction: str) -> Pairing:
    """Per-conversation drops (bad side positive) of ``current`` against the
    baseline's mean for each conversation present in both."""
    sign = 1.0 if direction == "higher" else -1.0
    ids = sorted(k for k in current if baseline.get(k))
    drops, weights = [], []
    for k in ids:
        b, _ = pooled(baseline[k])
        c, w = pooled(current[k])
        drops.append(sign * (b - c))
        weights.append(w)
    noise_free = bool(ids) and all(
        _constant(baseline[k]) and _constant(current[k]) and (len(baseline[k]) > 1 or len(current[k]) > 1) for k in ids
    )
    return Pairing(
        ids=ids,
        drops=drops,
        weights=weights,
        new=sorted(k for k in current if not baseline.get(k)),
        missing=sorted(k for k in baseline if baseline[k] and k not in current),
        noise_free=noise_free,
    )


# -- the bootstrap, Holm, the tests ---------------------------------------------


def bootstrap(drops: Sequence[float], weights: Sequence[float], n_boot: int = N_BOOT, seed: int = SEED) -> np.ndarray:
    """The weighted mean drop over ``n_boot`` resamples of whole conversations
    (a cluster bootstrap), sorted. Fixed seed, clusters in the given order."""
    return bootstrap_many([drops], weights, n_boot, seed)[0]


def bootstrap_many(
    drops: Sequence[Sequence[float]],
    weights: Sequence[float] | Sequence[Sequence[float]],
    n_boot: int = N_BOOT,
    seed: int = SEED,
) -> list[np.ndarray]:
    """:func:`bootstrap` of several drop vectors over as many conversations, with
    the same resamples (the cluster bootstrap of :mod:`pytest_ragdive.core.stats`:
    the weighted mean drop is the ratio of the cluster sums ``w_i d_i`` and
    ``w_i``); ``weights``: one vector shared by every drop vector, or one each.
    Each resampled mean's deviation from the observed weighted mean is scaled by
    ``sqrt(n / (n - 1))`` (``n`` conversations, at least 2), the small-sample
    correction of the module docstring."""
    import numpy as np

    d = np.asarray(drops, dtype=float)  # (metrics, n)
    w = np.broadcast_to(np.asarray(weights, dtype=float), d.shape)
    wd = d * w
    n = d.shape[1]
    out = []
    for r, b in enumerate(cluster_bootstrap(wd, w, n_boot=n_boot, seed=seed)):
        if n > 1:
            observed = wd[r].sum() / w[r].sum()
            b = observed + math.sqrt(n / (n - 1)) * (b - observed)
        b.sort()
        out.append(b)
    return out


def holm(pvalues: dict[str, float], alpha: float) -> dict[str, tuple[bool, float]]:
    """Holm's step-down test: for each name, whether its null is rejected and
    the level it was compared with (``alpha / (m - rank)``; names that follow
    the first acceptance keep the level of their rank and are not rejected)."""
    m = len(pvalues)
    order = sorted(pvalues, key=lambda k: (pvalues[k], k))
    out: dict[str, tuple[bool, float]] = {}
    still = True
    for rank, name in enumerate(order):
        level = alpha / (m - rank)
        still = still and pvalues[name] <= level
        out[name] = (still, level)
    return out


def alpha_for_look(max_reruns: int, alpha: float = ALPHA) -> float:
    """The level of each look: ``alpha`` split evenly over the first run and
    up to ``max_reruns`` reruns."""
    return alpha / (1 + max_reruns)


def quantile_t(boot: np.ndarray, q: float, df: int) -> float:
    """The bound of level ``q`` from a (scaled) bootstrap distribution: its
    ``Phi(t_df^{-1}(q))`` quantile (the plain ``q`` quantile when ``df < 1``)."""
    import numpy as np

    level = NormalDist().cdf(t_ppf(q, df)) if df >= 1 else q
    return float(np.quantile(boot, level))


def t_pvalue(p_boot: float, df: int) -> float:
    """The p-value of the share ``p_boot`` of resamples on the null side, on
    Student's scale: ``T_df(Phi^{-1}(p_boot))`` (unchanged when ``df < 1``)."""
    if df < 1 or p_boot <= 0.0 or p_boot >= 1.0:
        return p_boot
    return t_cdf(NormalDist().inv_cdf(p_boot), df)


def paired_tests(
    pairings: dict[str, Pairing],
    tolerances: dict[str, float],
    alpha: float = ALPHA,
    n_boot: int = N_BOOT,
    seed: int = SEED,
) -> dict[str, PairedResult]:
    """The paired test of each metric of one suite at level ``alpha`` (one
    look), with Holm's correction over the metrics for significance.
    Metrics without a paired conversation are left out."""
    import numpy as np

    boots: dict[str, np.ndarray] = {}
    stats: dict[str, tuple[float, float, float]] = {}  # drop, p, upper
    groups: dict[int, list[str]] = defaultdict(list)
    for name, p in pairings.items():
        drop = p.drop
        if drop is None:
            continue
        if p.noise_free:
            stats[name] = (drop, 0.0 if drop > EPS else 1.0, drop)
        else:
            groups[p.n].append(name)
    # the draws depend on the number of conversations alone (one stream, fixed seed):
    # metrics over as many conversations are resampled in one pass, each with its own weights
    for names in groups.values():
        draws = bootstrap_many([pairings[k].drops for k in names], [pairings[k].weights for k in names], n_boot, seed)
        for name, b in zip(names, draws, strict=True):
            boots[name] = b
            df = pairings[name].n - 1
            stats[name] = (pairings[name].drop or 0.0, t_pvalue(float(np.mean(b <= EPS)), df), quantile_t(b, 1 - alpha, df))
    # a noise-free difference is known exactly and can raise no false alarm:
    # it is decided alone, and the family Holm corrects is the noisy metrics
    decided = holm({k: v[1] for k, v in stats.items() if k in boots}, alpha)
    decided.update({k: (v[1] == 0.0, alpha) for k, v in stats.items() if k not in boots})
    out = {}
    for name, (drop, p_drop, upper) in stats.items():
        significant, level = decided[name]
        low = quantile_t(boots[name], level, pairings[name].n - 1) if name in boots else drop
        out[name] = PairedResult(
            n=pairings[name].n, drop=drop, low=low, high=upper, p_drop=p_drop, level=level, alpha=alpha,
            significant=significant, within=upper <= tolerances.get(name, 0.0) + EPS,
            noise_free=pairings[name].noise_free,
        )
    return out


def decide(
    band: BandVerdict, significant: bool, within: bool, drop: float, tolerance: float, more_looks: bool = False
) -> PairedVerdict:
    """The verdict table of the module docstring; ``more_looks``: a rerun is
    still to come after this look."""
    if band == "improvement":
        return "improvement"
    if within:
        return "pass"
    if band == "regression":
        return "regression" if significant else "inconclusive"
    return "inconclusive" if significant or (more_looks and drop > tolerance + EPS) else "pass"


def baseline_table(bm: BaselineMetric) -> Table:
    """A baseline metric's per-conversation values as a paired table (made for one
    metric at a time: the baseline holds them as arrays)."""
    cv = bm.conversations
    if not cv:
        return {}
    r, values, counts = cv.runs, cv.numbers, cv.counts
    return {
        cid: [ConvValue(values[j], counts[j]) for j in range(i * r, i * r + r) if values[j] == values[j]]  # (NaN: no value)
        for i, cid in enumerate(cv.ids)
    }
