"""The assertion helpers a user's own tests call: :func:`assert_in_band` (one number
against one band) and :func:`assert_no_regression` (a suite result against a baseline).
Each raises an AssertionError whose message is the gate table's row."""

from __future__ import annotations

from ..core.results import Baseline, SuiteResult
from .rows import GateRow, compare_to_band, gate_row


def assert_in_band(value: float | None, band: tuple[float, float], direction: str, name: str = "value") -> None:
    """Raise AssertionError (the gate-table row as message) when ``value`` is
    outside ``band`` on its bad side."""
    low, high = band
    verdict = compare_to_band(value, low, high, direction)
    if verdict in ("regression", "no data"):
        row = GateRow(
            suite="-", metric=name, direction="lower" if direction == "lower" else "higher",
            baseline_mean=None, band_low=low, band_high=high, tolerance=0.0, current=value,
            delta=None, verdict=verdict,
        )
        raise AssertionError(row.line())


def assert_no_regression(
    result: SuiteResult,
    baseline: Baseline,
    metrics: list[str] | None = None,
    tolerances: dict[str, float] | None = None,
) -> list[GateRow]:
    """Raise AssertionError listing every regressed metric of ``result`` against
    ``baseline``; return the rows when none regressed. Tolerances default to
    the ones stored in the baseline."""
    stored = baseline.suites.get(result.suite)
    if stored is None:
        raise AssertionError(f"suite {result.suite!r} is not in the baseline (has: {', '.join(baseline.suites) or 'none'})")
    names = metrics if metrics is not None else sorted(stored)
    rows = []
    for m in names:
        bm = stored.get(m)
        tol = (tolerances or {}).get(m, bm.tolerance if bm else 0.0)
        rows.append(gate_row(result.suite, m, result.value(m), bm, tol))
    bad = [r for r in rows if r.failed]
    if bad:
        raise AssertionError("\n".join(r.line() for r in bad))
    return rows
