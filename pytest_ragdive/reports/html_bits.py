"""The small pieces every part of report.html is built from: escaping, numbers, badges,
tables and labelled fields. Every text that came from a run is untrusted and escaped."""

from __future__ import annotations

from ..core.memo import memo
from ..metrics.registry import METRICS
from .charts import e

__all__ = ["badge", "bad_side", "cls", "dl", "e", "esc", "f", "g", "table", "td"]


def f(x: float | None, fmt: str = ".4f") -> str:
    return "n/a" if x is None else format(x, fmt)


def g(x: float | None) -> str:
    """A number in a details field: 4 significant digits (never a repr)."""
    if x is None:
        return "n/a"
    return f"{x:.4g}" if abs(x) >= 1e-4 or x == 0 else f"{x:.2e}"


def cls(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text.lower())


def badge(text: str) -> str:
    return f'<span class="badge v-{cls(text)}">{e(text)}</span>'


def table(head: list[str], rows: list[list[str]], row_classes: list[str] | None = None, css: str = "") -> str:
    """``rows`` hold already-escaped cell HTML. A table wider than the page (a metric per
    column) scrolls inside its own box, so the page never scrolls sideways."""
    attr = f' class="{css}"' if css else ""
    out = [f'<div class="tw"><table{attr}><thead><tr>', *(f"<th>{e(h)}</th>" for h in head), "</tr></thead><tbody>"]
    for i, r in enumerate(rows):
        c = row_classes[i] if row_classes else ""
        out.append(f'<tr class="{e(c)}">' + "".join(r) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


@memo(maxsize=8192)
def esc(text: str) -> str:
    """``e(text)`` of a text that repeats across conversations (metric names, retrieved contexts)."""
    return e(text)


def td(text: object, num: bool = False) -> str:
    return f'<td class="num">{e(text)}</td>' if num else f"<td>{e(text)}</td>"


def dl(fields: list[tuple[str, str]]) -> str:
    """Labelled fields (label, already-escaped value) as a definition list."""
    return '<dl class="fields">' + "".join(f"<dt>{e(k)}</dt><dd>{v}</dd>" for k, v in fields) + "</dl>"


def bad_side(metric: str, value: float) -> bool:
    """Whether a score is short of the best (below 1, or above 0 for lower-is-better metrics): drawn red."""
    spec = METRICS.get(metric)
    return value > 0 if spec is not None and spec.direction == "lower" else value < 1
