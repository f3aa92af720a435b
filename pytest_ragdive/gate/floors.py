"""Floors beside the bands: ``[tool.ragdive.floors]``.

A floor is an absolute limit on a suite metric (``faithfulness = 0.9``): a value
worse than it fails whatever the baseline says, with the verdict ``below floor``.
For a lower-is-better metric (``forgetfulness = 0.2``) it is a ceiling. A metric
the gate bands too keeps its row, which the floor can only make fail; a floored
metric the gate does not band (or every metric, when there is no baseline: a first
PR is gated on floors alone) gets a row of its own, whose band column shows the
floor. A floored metric with no value in a suite it applies to is "no data" (fails).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..core.results import SuiteResult
from ..metrics.registry import METRICS
from .rows import EPS, GateRow

__all__ = ["apply_floors", "breaks_floor"]


def breaks_floor(value: float | None, floor: float, direction: str) -> bool:
    """Whether ``value`` is on the bad side of ``floor`` (below it, or above a ceiling)."""
    if value is None:
        return False
    return value < floor - EPS if direction == "higher" else value > floor + EPS


def apply_floors(
    rows: list[GateRow],
    suites: Mapping[str, SuiteResult],
    floors: Mapping[str, float],
    applies: Callable[[str, str], bool] = lambda suite, metric: True,
) -> list[GateRow]:
    """The gate rows with the floors applied: each banded row of a floored metric given its
    floor (and the verdict ``below floor`` when its value breaks it), plus a floor-only row
    for each floored metric of each suite that has no banded row (``applies(suite, metric)``:
    whether the metric applies to the suite at all)."""
    if not floors:
        return rows
    out: list[GateRow] = []
    banded = {(r.suite, r.metric) for r in rows}
    for r in rows:
        floor = floors.get(r.metric)
        if floor is None:
            out.append(r)
            continue
        update: dict[str, object] = {"floor": floor}
        if breaks_floor(r.current, floor, r.direction):
            update.update(verdict="below floor", band_verdict=r.band_verdict or r.verdict)
        out.append(r.model_copy(update=update))
    for suite, res in suites.items():
        for metric, floor in floors.items():
            if (suite, metric) in banded or metric not in METRICS or not applies(suite, metric):
                continue
            direction = METRICS[metric].direction
            value = res.value(metric)
            mv = res.metrics.get(metric)
            verdict = "no data" if value is None else "below floor" if breaks_floor(value, floor, direction) else "pass"
            out.append(GateRow(
                suite=suite, metric=metric, direction=direction, baseline_mean=None, band_low=None, band_high=None,
                tolerance=0.0, current=value, delta=None, verdict=verdict, floor=floor,
                ci_low=getattr(mv, "ci_low", None), ci_high=getattr(mv, "ci_high", None),
            ))
    return out
