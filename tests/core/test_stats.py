"""The one cluster bootstrap and the one mean (core/stats.py)."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_ragdive.core import stats
from pytest_ragdive.core.stats import cluster_bootstrap, mean, percentile_interval


def _reference(numer: np.ndarray, denom: np.ndarray, n_boot: int, seed: int) -> list[np.ndarray]:
    """All draws at once: one n_boot x k matrix of cluster indices from default_rng(seed)."""
    idx = np.random.default_rng(seed).integers(0, numer.shape[1], size=(n_boot, numer.shape[1]))
    out = []
    for r in range(numer.shape[0]):
        d = denom[idx].sum(axis=1) if denom.ndim == 1 else denom[r][idx].sum(axis=1)
        s = numer[r][idx].sum(axis=1)
        out.append(s[d > 0] / d[d > 0])
    return out


@pytest.mark.parametrize("max_cells", [7, 100, 10_000_000])
def test_ratio_of_cluster_sums_with_one_stream_of_draws_in_any_chunking(max_cells: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stats, "MAX_CELLS", max_cells)
    rng = np.random.default_rng(1)
    numer = rng.random((3, 9))
    denom = rng.integers(0, 3, size=(3, 9)).astype(float)  # some clusters have no scored turn
    got = cluster_bootstrap(numer, denom, n_boot=257, seed=4)
    for g, want in zip(got, _reference(numer, denom, 257, 4), strict=True):
        assert np.array_equal(g, want)
    shared = cluster_bootstrap(numer, denom[0] + 1, n_boot=257, seed=4)  # one weight row for every statistic
    for g, want in zip(shared, _reference(numer, denom[0] + 1, 257, 4), strict=True):
        assert np.array_equal(g, want)


def test_resamples_without_a_denominator_are_skipped_and_the_interval_reads_the_rest() -> None:
    (draws,) = cluster_bootstrap([[1.0, 0.0]], [[1.0, 0.0]], n_boot=400, seed=0)
    # a resample of cluster 1 only has no denominator: left out; every kept resample holds cluster 0: ratio 1
    assert 0 < len(draws) < 400 and set(draws.tolist()) == {1.0}
    assert percentile_interval(draws) == (1.0, 1.0)
    assert percentile_interval(np.empty(0)) == (None, None)
    (gaps,) = cluster_bootstrap([[1.0, 1.0]], [[0.5, -0.5]], n_boot=200, seed=0, min_denom=1e-9)
    assert len(gaps) < 200 and (gaps > 0).all()


def test_no_clusters_no_draws_and_a_bad_shape_is_refused() -> None:
    assert [len(d) for d in cluster_bootstrap(np.empty((2, 0)), np.empty(0), n_boot=10, seed=0)] == [0, 0]
    with pytest.raises(ValueError):
        cluster_bootstrap([1.0, 2.0], [1.0, 1.0], n_boot=10, seed=0)  # type: ignore[list-item]


def test_mean_of_present_values() -> None:
    assert mean([1.0, None, 2.0]) == 1.5
    assert mean([None]) is None and mean([]) is None
    assert mean([True, False, True, True]) == 0.75
