"""Baselines a person can review: ``ragdive baseline show PATH`` and
``ragdive baseline diff OLD NEW``.

:func:`diff_baselines` compares two baselines per suite and metric (band,
mean, runs, tolerance, direction) and their provenance (backend, judge models,
config hash, plugin version); ``--ragdive-update-baseline`` prints the same
diff against the file it replaces. Imports no pytest.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from .baseline import load_baseline
from .metrics.registry import ARROW
from .records import Baseline, BaselineMetric

EPS = 1e-9
Change = Literal["added", "removed", "changed", "unchanged"]
PROVENANCE = ("backend", "judge_models", "config_hash", "plugin_version", "format_version")


def band_of(bm: BaselineMetric) -> tuple[float, float]:
    return bm.min - bm.tolerance, bm.max + bm.tolerance


def _fmt_band(bm: BaselineMetric | None) -> str:
    if bm is None:
        return "-"
    low, high = band_of(bm)
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
            parts.append(f"band {_fmt_band(self.old)} -> {_fmt_band(self.new)}")
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
    if any(abs(a - b) > EPS for a, b in zip(band_of(old), band_of(new), strict=True)):
        out.append("band")
    if old.runs != new.runs:
        out.append("runs")
    if abs(old.tolerance - new.tolerance) > EPS:
        out.append("tolerance")
    if old.direction != new.direction:
        out.append("direction")
    return out


def _prov(b: Baseline, name: str) -> str:
    value = getattr(b, name)
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in sorted(value.items())) or "none"
    return str(value) or "-"


def diff_baselines(old: Baseline, new: Baseline) -> BaselineDiff:
    prov = {n: (_prov(old, n), _prov(new, n)) for n in PROVENANCE if _prov(old, n) != _prov(new, n)}
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


# -- text ---------------------------------------------------------------------


def _table(header: list[str], rows: list[list[str]], markdown: bool) -> list[str]:
    if markdown:
        return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
            "| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows
        ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return out


def _arrow(bm: BaselineMetric | None) -> str:
    return "" if bm is None else " " + ARROW[bm.direction]


def show_lines(b: Baseline, markdown: bool = False) -> list[str]:
    lines = [
        f"backend {b.backend}, config hash {b.config_hash or '-'}, plugin {b.plugin_version or '-'}, "
        f"created {b.created or '-'}, format {b.format_version}",
        f"judge models: {_prov(b, 'judge_models')}",
        "",
    ]
    rows = []
    for suite, metrics in b.suites.items():
        for name, bm in metrics.items():
            rows.append([suite, name + _arrow(bm), f"{bm.mean:.4f}", f"{bm.std:.4f}", f"{bm.min:.4f}", f"{bm.max:.4f}",
                         f"{bm.tolerance:g}", _fmt_band(bm), str(bm.runs)])
    return lines + _table(["suite", "metric", "mean", "std", "min", "max", "tol", "band", "runs"], rows, markdown)


def diff_lines(d: BaselineDiff, show_all: bool = False, markdown: bool = False) -> list[str]:
    lines = [f"{name}: {a} -> {b}" for name, (a, b) in d.provenance.items() if name != "plugin_version"]
    if "plugin_version" in d.provenance:
        a, b = d.provenance["plugin_version"]
        lines.append(f"plugin_version: {a} -> {b}")
    rows = []
    for m in d.metrics if show_all else d.changed:
        o, n = m.old, m.new
        rows.append([
            m.suite, m.metric + _arrow(n or o), _fmt_band(o), _fmt_band(n),
            "-" if o is None else f"{o.mean:.4f}", "-" if n is None else f"{n.mean:.4f}",
            "-" if o is None else str(o.runs), "-" if n is None else str(n.runs), m.describe(),
        ])
    if rows:
        if lines:
            lines.append("")
        lines += _table(["suite", "metric", "old band", "new band", "old mean", "new mean", "old runs", "new runs",
                         "what moved"], rows, markdown)
    counts = {c: sum(1 for m in d.metrics if m.change == c) for c in ("changed", "added", "removed", "unchanged")}
    lines.append(("" if not rows else "\n") + ", ".join(f"{n} {c}" for c, n in counts.items()) + " suite metric(s)")
    return lines


# -- command line ---------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = sub.add_parser("show", help="print a baseline: per suite and metric, band, mean, spread, runs")
    show.add_argument("path", type=Path)
    show.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    diff = sub.add_parser("diff", help="compare two baselines: what moved, per suite and metric")
    diff.add_argument("old", type=Path)
    diff.add_argument("new", type=Path)
    diff.add_argument("--all", action="store_true", help="list unchanged metrics too")
    diff.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    diff.add_argument("--exit-code", action="store_true", help="exit 1 when the baselines differ (as git diff does)")


def run(args: argparse.Namespace) -> int:
    if args.action == "show":
        b = load_baseline(args.path)
        if args.format == "json":
            print(json.dumps(b.model_dump(mode="json"), indent=2))
        else:
            print("\n".join(show_lines(b, markdown=args.format == "markdown")))
        return 0
    d = diff_baselines(load_baseline(args.old), load_baseline(args.new))
    if args.format == "json":
        print(json.dumps(d.model_dump(mode="json"), indent=2))
    else:
        print("\n".join(diff_lines(d, show_all=args.all, markdown=args.format == "markdown")))
    return 1 if args.exit_code and not d.identical else 0
