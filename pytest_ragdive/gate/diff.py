"""What moved between two baselines: :func:`diff_baselines` compares them per suite and
metric (band, mean, runs, tolerance, direction) and their provenance (backend, judge
models, config hash, plugin version). ``ragdive baseline diff`` (:mod:`pytest_ragdive.cli.baseline`)
and ``--ragdive-update-baseline`` print it (:mod:`pytest_ragdive.reports.baseline_text`).
Imports no pytest.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..core.results import Baseline, BaselineMetric

EPS = 1e-9
Change = Literal["added", "removed", "changed", "unchanged"]
PROVENANCE = ("backend", "judge_models", "config_hash", "plugin_version", "format_version")


def fmt_band(bm: BaselineMetric | None, metric: str = "") -> str:
    """The band as shown (clipped to ``metric``'s range when named: a share never reads below 0)."""
    if bm is None:
        return "-"
    from .rows import clipped

    low, high = clipped(metric, *bm.band())
    return f"[{low:.4f}, {high:.4f}]"


class MetricChange(BaseModel):
    """One suite metric in two baselines, and what moved between them."""

    model_config = ConfigDict(extra="forbid")

    suite: str
    metric: str
    change: Change
    old: BaselineMetric | None = None
    new: BaselineMetric | None = None
    moved: list[str] = []  # band, mean, runs, tolerance, direction

    def describe(self) -> str:
        if self.change == "added":
            return "added"
        if self.change == "removed":
            return "removed"
        if self.change == "unchanged" or self.old is None or self.new is None:
            return "-"
        parts = []
        if "mean" in self.moved:
            parts.append(f"mean {self.new.mean - self.old.mean:+.4f}")
        if "band" in self.moved:
            parts.append(f"band {fmt_band(self.old, self.metric)} -> {fmt_band(self.new, self.metric)}")
        if "runs" in self.moved:
            parts.append(f"runs {self.old.runs} -> {self.new.runs}")
        if "tolerance" in self.moved:
            parts.append(f"tolerance {self.old.tolerance:g} -> {self.new.tolerance:g}")
        if "direction" in self.moved:
            parts.append(f"direction {self.old.direction} -> {self.new.direction}")
        return ", ".join(parts)


class BaselineDiff(BaseModel):
    """Two baselines compared: provenance changes and one row per suite metric."""

    model_config = ConfigDict(extra="forbid")

    provenance: dict[str, tuple[str, str]] = {}  # field -> (old, new), only fields that differ
    metrics: list[MetricChange] = []

    @property
    def changed(self) -> list[MetricChange]:
        return [m for m in self.metrics if m.change != "unchanged"]

    @property
    def identical(self) -> bool:
        return not self.provenance and not self.changed


def _moved(old: BaselineMetric, new: BaselineMetric) -> list[str]:
    out = []
    if abs(old.mean - new.mean) > EPS:
        out.append("mean")
    if any(abs(a - b) > EPS for a, b in zip(old.band(), new.band(), strict=True)):
        out.append("band")
    if old.runs != new.runs:
        out.append("runs")
    if abs(old.tolerance - new.tolerance) > EPS:
        out.append("tolerance")
    if old.direction != new.direction:
        out.append("direction")
    return out


def provenance_text(b: Baseline, name: str) -> str:
    value = getattr(b, name)
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in sorted(value.items())) or "none"
    return str(value) or "-"


def diff_baselines(old: Baseline, new: Baseline) -> BaselineDiff:
    prov = {n: (provenance_text(old, n), provenance_text(new, n)) for n in PROVENANCE if provenance_text(old, n) != provenance_text(new, n)}
    rows = []
    for suite in sorted(set(old.suites) | set(new.suites)):
        a, b = old.suites.get(suite, {}), new.suites.get(suite, {})
        for metric in sorted(set(a) | set(b)):
            o, n = a.get(metric), b.get(metric)
            if o is None:
                rows.append(MetricChange(suite=suite, metric=metric, change="added", new=n))
            elif n is None:
                rows.append(MetricChange(suite=suite, metric=metric, change="removed", old=o))
            else:
                moved = _moved(o, n)
                rows.append(MetricChange(suite=suite, metric=metric, change="changed" if moved else "unchanged",
                                         old=o, new=n, moved=moved))
    return BaselineDiff(provenance=prov, metrics=rows)






