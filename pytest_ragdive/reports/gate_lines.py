"""What the paired gate adds to the text reports, as lines (terminal and summary.md's
details): the paired evidence and the smallest detectable regression beside each
tolerance, conversations not paired and unstable conversations. What got worse, case by
case, is :func:`pytest_ragdive.reports.text.worse_lines`. Pure: gate rows in, lines out."""

from __future__ import annotations

from collections.abc import Iterable

from ..gate.rows import GateRow


def _ids(ids: list[str], limit: int = 8) -> str:
    more = len(ids) - limit
    return ", ".join(ids[:limit]) + (f" (+{more} more)" if more > 0 else "")


def paired_lines(rows: Iterable[GateRow]) -> list[str]:
    """One block per gated metric that had the paired test; empty when none did."""
    lines: list[str] = []
    for r in rows:
        if r.paired is None:
            continue
        paired, pw = r.paired_text, r.power_text
        lines.append(f"{r.suite}/{r.metric}: {r.verdict}, {paired}" + ("" if pw in paired else f"; {pw}"))
        if r.new or r.missing:
            parts = []
            if r.new:
                parts.append(f"{len(r.new)} new since the baseline ({_ids(r.new)})")
            if r.missing:
                parts.append(f"{len(r.missing)} in the baseline that did not run ({_ids(r.missing)})")
            lines.append("  not paired: " + "; ".join(parts))
        if r.unstable:
            lines.append(f"  unstable in the baseline runs (p90 - p10 above the threshold): {len(r.unstable)}: {_ids(r.unstable)}")
        if r.worse and r.paired.drop > 0:
            moved = ", ".join(f"{m.id} {m.drop:+.3f} ({m.share:.0%})" for m in r.worse)
            lines.append(f"  got worse (drop, share of the total drop): {moved}")
    return lines
