"""Inline SVG line charts for report.html (no script, no external resource)."""

from __future__ import annotations

import html

PALETTE = ("#0969da", "#cf222e", "#1a7f37", "#8250df", "#bf3989", "#9a6700", "#1b7c83", "#57606a")


def e(x: object) -> str:
    """Escape any value for HTML text and attribute values (every report text is untrusted)."""
    return html.escape(str(x), quote=True)


def line_chart(series: list[tuple[str, dict[int, float]]], label: str) -> str:
    """One metric by turn index (0-based keys, shown from 1), one line per series
    (suite); each point carries its value as a tooltip."""
    w, h, left, right, top, bottom = 320, 180, 36, 10, 10, 26
    idx = sorted({i for _, pts in series for i in pts})
    vals = [v for _, pts in series for v in pts.values()]
    lo, hi = min(0.0, *vals), max(1.0, *vals)
    span = (hi - lo) or 1.0

    def x(i: int) -> float:
        return left + (w - left - right) * (idx.index(i) / max(1, len(idx) - 1))

    def y(v: float) -> float:
        return top + (h - top - bottom) * (1 - (v - lo) / span)

    parts = [f'<svg class="curve" data-metric="{e(label)}" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
             f'role="img" aria-label="{e(label)} by turn">']
    for k in range(5):
        v = lo + span * k / 4
        parts.append(f'<line x1="{left}" x2="{w - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#eaeef2"/>'
                     f'<text x="{left - 4}" y="{y(v) + 3:.1f}" text-anchor="end">{v:.2f}</text>')
    for i in idx:
        parts.append(f'<text x="{x(i):.1f}" y="{h - 8}" text-anchor="middle">{i + 1}</text>')
    for n, (suite, pts) in enumerate(series):
        color = PALETTE[n % len(PALETTE)]
        coords = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in sorted(pts.items()))
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{coords}"/>')
        for i, v in sorted(pts.items()):
            parts.append(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="3" fill="{color}">'
                         f"<title>{e(suite)} turn {i + 1}: {v:.3f}</title></circle>")
    parts.append("</svg>")
    return "".join(parts)
