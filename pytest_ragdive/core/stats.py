"""The statistics every part shares, written once: the mean of present values and the
cluster bootstrap.

**The cluster bootstrap** (one rule for the suite metrics' CIs, the gate's paired test
and the sharded diagnosis): a statistic that is a ratio of cluster sums,
``sum_i numer_i / sum_i denom_i`` over clusters ``i`` (a conversation with all its turns
and runs, or a question with all its runs and pairs: they are not independent), is
recomputed on ``n_boot`` resamples of the clusters drawn with replacement. The draws
are one ``numpy.random.default_rng(seed)`` stream of ``n_boot x k`` cluster indices in
the clusters' order (callers sort clusters by id, so the same data give the same
resamples in any order, xdist included), drawn a chunk of resamples at a time so that
no more than about :data:`MAX_CELLS` indices are held at once. Every statistic of one
call is resampled with the same draws. A resample whose denominator is not above
``min_denom`` is skipped (no scored turn, no gap to recover).

Every mean (a suite metric, a per-turn curve, a judge's share of yes) is a ratio of
cluster sums: ``numer`` the cluster's sum of values, ``denom`` its count (or weight).
A statistic that is not (a rank correlation: ``benchmarks/bench_human_agreement.py``)
is recomputed on the same draws, :func:`cluster_draws`.

numpy is imported inside the functions that need it, so importing this module is cheap.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["MAX_CELLS", "cluster_bootstrap", "cluster_draws", "mean", "percentile_interval"]

# cluster indices held at once (1 MB; each resampled row as many floats): a chunk that fits
# in the CPU's cache is twice as fast as 2,000,000 cells and holds a sixteenth of the memory;
# the chunking never changes the draws (one stream, drawn in order)
MAX_CELLS = 1 << 17


def mean(xs: Iterable[float | bool | None]) -> float | None:
    """The mean of the values that are present (None when there is none)."""
    vals = [x for x in xs if x is not None]
    return sum(vals) / len(vals) if vals else None


def cluster_bootstrap(
    numer: Sequence[Sequence[float]] | np.ndarray,
    denom: Sequence[Sequence[float]] | Sequence[float] | np.ndarray,
    *,
    n_boot: int,
    seed: int,
    min_denom: float = 0.0,
) -> list[np.ndarray]:
    """The resampled ratios of cluster sums, one array per statistic (row of ``numer``).

    ``numer``: one row per statistic, one column per cluster; ``denom``: the same shape,
    or one row shared by every statistic. Returns, per statistic, the ratio on each of the
    ``n_boot`` resamples in draw order, leaving out resamples whose denominator is not
    above ``min_denom``. No resample with fewer than one cluster: an empty list of arrays
    of length 0."""
    import numpy as np

    num = np.asarray(numer, dtype=float)
    den = np.asarray(denom, dtype=float)
    if num.ndim != 2:
        raise ValueError("numer must have one row per statistic")
    m, k = num.shape
    if k == 0 or n_boot <= 0:
        return [np.empty(0) for _ in range(m)]
    rows = _Rows(k)
    numer_of = [rows.add(num[r]) for r in range(m)]
    denom_of = [rows.add(den)] * m if den.ndim == 1 else [rows.add(den[r]) for r in range(m)]
    parts: list[list[np.ndarray]] = [[] for _ in range(m)]
    for idx in cluster_draws(k, n_boot, seed):
        sums = rows.sums(idx)
        for r in range(m):
            ss, d = sums[numer_of[r]], sums[denom_of[r]]
            ok = d > min_denom
            parts[r].append(ss[ok] / d[ok] if not ok.all() else ss / d)
    return [np.concatenate(p) for p in parts]


def cluster_draws(k: int, n_boot: int, seed: int) -> Iterator[np.ndarray]:
    """The cluster bootstrap's draws: chunks of resamples, each row ``k`` cluster indices
    drawn with replacement, ``n_boot`` rows in all, from one ``default_rng(seed)`` stream
    (the module docstring); nothing without clusters or resamples."""
    import numpy as np

    if k <= 0 or n_boot <= 0:
        return
    rng = np.random.default_rng(seed)
    chunk = max(1, min(n_boot, MAX_CELLS // k))
    done = 0
    while done < n_boot:
        size = min(chunk, n_boot - done)
        yield rng.integers(0, k, size=(size, k))
        done += size


class _Rows:
    """The distinct rows (numerators and denominators) a bootstrap resamples, each
    summed once per resample however many statistics share it. A row whose cells are
    one and the same whole number (every conversation has five scored turns) sums to
    ``k`` times it on every resample, exactly as adding the drawn cells does (each
    partial sum is a whole number below 2**53), so it is not drawn from at all."""

    def __init__(self, k: int) -> None:
        self.k = k
        self._index: dict[bytes, int] = {}
        self._rows: list[np.ndarray] = []
        self._constant: list[float | None] = []

    def add(self, row: np.ndarray) -> int:
        import numpy as np

        row = np.ascontiguousarray(row, dtype=float)
        key = row.tobytes()
        at = self._index.get(key)
        if at is None:
            at = self._index[key] = len(self._rows)
            self._rows.append(row)
            bits = row.view(np.int64)
            c = float(row[0])
            whole = bool((bits == bits[0]).all()) and c.is_integer() and abs(c) * self.k < 2.0**53
            self._constant.append(c if whole else None)
        return at

    def sums(self, idx: np.ndarray) -> list[np.ndarray]:
        """Each row's sum over each resample (one row of ``idx`` per resample)."""
        import numpy as np

        return [np.take(row, idx).sum(axis=1) if c is None else np.full(len(idx), c * self.k)
                for row, c in zip(self._rows, self._constant, strict=True)]


def percentile_interval(draws: np.ndarray, level: float = 0.95) -> tuple[float | None, float | None]:
    """The percentile interval of resampled statistics (linear interpolation between order
    statistics, numpy's default); (None, None) without draws."""
    import numpy as np

    if len(draws) == 0:
        return None, None
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(draws, [tail, 100 - tail])
    return float(lo), float(hi)
