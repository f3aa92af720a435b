"""A baseline, and the diff of two, as text a person reviews (plain or Markdown):
``ragdive baseline show`` / ``diff`` and the update summary of a run."""

from __future__ import annotations

from ..core.results import Baseline, BaselineMetric
from ..gate.diff import BaselineDiff, fmt_band, provenance_text
from ..metrics.registry import ARROW
from .tables import text_table


def _rows_table(header: list[str], rows: list[list[str]], markdown: bool) -> list[str]:
    return text_table(header, rows, markdown=True) if markdown else [line.rstrip() for line in text_table(header, rows)]


def _arrow(bm: BaselineMetric | None) -> str:
    return "" if bm is None else " " + ARROW[bm.direction]


def show_lines(b: Baseline, markdown: bool = False) -> list[str]:
    lines = [
        f"backend {b.backend}, config hash {b.config_hash or '-'}, plugin {b.plugin_version or '-'}, "
        f"created {b.created or '-'}, format {b.format_version}",
        f"judge models: {provenance_text(b, 'judge_models')}",
        "",
    ]
    rows = []
    for suite, metrics in b.suites.items():
        for name, bm in metrics.items():
            rows.append([suite, name + _arrow(bm), f"{bm.mean:.4f}", f"{bm.std:.4f}", f"{bm.min:.4f}", f"{bm.max:.4f}",
                         f"{bm.tolerance:g}", fmt_band(bm, name), str(bm.runs)])
    return lines + _rows_table(["suite", "metric", "mean", "std", "min", "max", "tol", "band", "runs"], rows, markdown)


def diff_lines(d: BaselineDiff, show_all: bool = False, markdown: bool = False) -> list[str]:
    lines = [f"{name}: {a} -> {b}" for name, (a, b) in d.provenance.items() if name != "plugin_version"]
    if "plugin_version" in d.provenance:
        a, b = d.provenance["plugin_version"]
        lines.append(f"plugin_version: {a} -> {b}")
    rows = []
    for m in d.metrics if show_all else d.changed:
        o, n = m.old, m.new
        rows.append([
            m.suite, m.metric + _arrow(n or o), fmt_band(o, m.metric), fmt_band(n, m.metric),
            "-" if o is None else f"{o.mean:.4f}", "-" if n is None else f"{n.mean:.4f}",
            "-" if o is None else str(o.runs), "-" if n is None else str(n.runs), m.describe(),
        ])
    if rows:
        if lines:
            lines.append("")
        lines += _rows_table(["suite", "metric", "old band", "new band", "old mean", "new mean", "old runs", "new runs",
                         "what moved"], rows, markdown)
    counts = {c: sum(1 for m in d.metrics if m.change == c) for c in ("changed", "added", "removed", "unchanged")}
    lines.append(("" if not rows else "\n") + ", ".join(f"{n} {c}" for c, n in counts.items()) + " suite metric(s)")
    return lines
