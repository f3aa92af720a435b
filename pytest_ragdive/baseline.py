"""Baseline files, bands, tolerances and the regression check.

A metric regresses when its current value lies outside
``[min - tolerance, max + tolerance]`` on its bad side (below for
higher-is-better metrics, above for lower-is-better ones). A value outside the
band on the good side is an improvement; it passes and is listed.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

from .errors import BaselineError
from .metrics.registry import ARROW, METRICS
from .records import Baseline, BaselineMetric, SuiteResult

EPS = 1e-9
Verdict = Literal["pass", "regression", "improvement", "no data", "not in baseline"]


class GateRow(BaseModel):
    suite: str
    metric: str
    direction: Literal["higher", "lower"]
    baseline_mean: float | None
    band_low: float | None
    band_high: float | None
    tolerance: float
    current: float | None
    delta: float | None
    verdict: Verdict

    @property
    def failed(self) -> bool:
        return self.verdict in ("regression", "no data", "not in baseline")

    @property
    def band_text(self) -> str:
        return "n/a" if self.band_low is None or self.band_high is None else f"[{self.band_low:.4f}, {self.band_high:.4f}]"

    @property
    def delta_text(self) -> str:
        # round first, and + 0.0, so that a tiny negative difference prints as +0.0000
        return "n/a" if self.delta is None else f"{round(self.delta, 4) + 0.0:+.4f}"

    def line(self) -> str:
        def f(x: float | None) -> str:
            return "n/a" if x is None else f"{x:.4f}"

        arrow = ARROW[self.direction]
        band = self.band_text
        delta = self.delta_text
        return (
            f"{self.suite}/{self.metric} ({arrow} better): current {f(self.current)}, "
            f"baseline band {band} (tolerance {self.tolerance:g}), delta {delta}: {self.verdict.upper()}"
        )


def load_baseline(path: Path) -> Baseline:
    if not path.is_file():
        raise BaselineError(
            f"ragdive baseline {path} not found: create it with --ragdive-update-baseline --ragdive-baseline={path}"
        )
    try:
        return Baseline.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        where = f"{loc}: " if loc else ""
        raise BaselineError(f"ragdive baseline {path} is invalid: {where}{err['msg']}") from None
    except (OSError, ValueError) as e:
        raise BaselineError(f"ragdive baseline {path} cannot be read: {str(e).splitlines()[0]}") from None


def band(bm: BaselineMetric, tolerance: float) -> tuple[float, float]:
    return bm.min - tolerance, bm.max + tolerance


def classify(value: float | None, low: float, high: float, direction: str) -> Verdict:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "no data"
    if direction == "higher":
        if value < low - EPS:
            return "regression"
        if value > high + EPS:
            return "improvement"
    else:
        if value > high + EPS:
            return "regression"
        if value < low - EPS:
            return "improvement"
    return "pass"


def gate_row(suite: str, metric: str, current: float | None, bm: BaselineMetric | None, tolerance: float) -> GateRow:
    direction = METRICS[metric].direction if metric in METRICS else (bm.direction if bm else "higher")
    if bm is None:
        return GateRow(
            suite=suite, metric=metric, direction=direction, baseline_mean=None, band_low=None,
            band_high=None, tolerance=tolerance, current=current, delta=None, verdict="not in baseline",
        )
    low, high = band(bm, tolerance)
    return GateRow(
        suite=suite,
        metric=metric,
        direction=direction,
        baseline_mean=bm.mean,
        band_low=low,
        band_high=high,
        tolerance=tolerance,
        current=current,
        delta=None if current is None else round(current - bm.mean, 9) + 0.0,  # + 0.0: no -0.0
        verdict=classify(current, low, high, direction),
    )


def check(
    results: dict[str, SuiteResult],
    baseline: Baseline,
    gate: dict[str, float],
    per_suite: dict[str, dict[str, float]] | None = None,
) -> list[GateRow]:
    """One row per gated metric per suite that ran; ``per_suite`` narrows the gate to the
    entries that apply to each suite (``RagdiveConfig.gated_metrics``)."""
    rows = []
    for suite, res in results.items():
        stored = baseline.suites.get(suite, {})
        suite_gate = gate if per_suite is None else per_suite.get(suite, gate)
        for metric, tol in suite_gate.items():
            rows.append(gate_row(suite, metric, res.value(metric), stored.get(metric), tol))
    return rows


def build_baseline(
    results: dict[str, SuiteResult],
    gate: dict[str, float],
    *,
    config_hash: str,
    backend: str,
    judge_models: dict[str, str],
    plugin_version: str,
    existing: Baseline | None = None,
) -> Baseline:
    """A baseline from this session's suites; suites not run keep their stored values."""
    import numpy as np

    suites = dict(existing.suites) if existing is not None else {}
    for suite, res in results.items():
        metrics: dict[str, BaselineMetric] = {}
        for name, mv in res.metrics.items():
            vals = [v for v in mv.per_run if v is not None]
            if not vals:
                continue
            arr = np.asarray(vals, dtype=float)
            # full precision: a rounded min/max would put an unchanged rerun
            # outside a zero-tolerance band
            metrics[name] = BaselineMetric(
                mean=float(arr.mean()),
                std=float(arr.std(ddof=1)) if len(arr) > 1 else 0.0,
                min=float(arr.min()),
                max=float(arr.max()),
                runs=len(vals),
                direction=METRICS[name].direction,
                tolerance=gate.get(name, 0.0),
            )
        suites[suite] = metrics
    return Baseline(
        plugin_version=plugin_version,
        config_hash=config_hash,
        backend=backend,
        judge_models=judge_models,
        created=_dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
        suites=dict(sorted(suites.items())),
    )


def write_baseline(path: Path, baseline: Baseline) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(baseline.model_dump(mode="json"), indent=2, sort_keys=False) + "\n", encoding="utf-8")
    tmp.replace(path)


# -- assertion helpers (public; the session gate uses the same checks) -------


def assert_in_band(value: float | None, band: tuple[float, float], direction: str, name: str = "value") -> None:
    """Raise AssertionError (the gate-table row as message) when ``value`` is
    outside ``band`` on its bad side."""
    low, high = band
    verdict = classify(value, low, high, direction)
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
