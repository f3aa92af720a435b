"""What the paired gate adds to the reports, as lines (terminal and
summary.md): the smallest detectable regression beside each tolerance,
conversations not paired, unstable conversations, and what got worse case by
case (questions and judge reasons). Pure: gate rows and conversations in,
lines out."""

from __future__ import annotations

from collections.abc import Iterable

from ..core.records import Conversation, Turn
from ..gate.rows import GateRow
from ..metrics.registry import METRICS


def _ids(ids: list[str], limit: int = 8) -> str:
    more = len(ids) - limit
    return ", ".join(ids[:limit]) + (f" (+{more} more)" if more > 0 else "")


def _why(turn: Turn, metric: str) -> str:
    v = turn.verdicts.get(metric)
    score = turn.scores.get(metric)
    reason = v.reason if v is not None and v.reason else ""
    head = f"turn {turn.index + 1} {turn.question[:70]!r}"
    return head + (f" {score:.2f}" if score is not None else "") + (f": {reason[:160]}" if reason else "")


def _case(row: GateRow, convs: list[Conversation], limit_turns: int = 2) -> str:
    """The worst turns (this session's runs) of one conversation, with reasons."""
    higher = row.direction == "higher"
    if METRICS[row.metric].level == "conversation":
        reasons = [c.verdicts[row.metric].reason for c in convs if row.metric in c.verdicts and c.verdicts[row.metric].reason]
        return reasons[0][:200] if reasons else ""
    turns = [t for c in convs for t in c.turns if t.scores.get(row.metric) is not None]
    turns.sort(key=lambda t: (t.scores[row.metric] or 0.0) * (1 if higher else -1))
    seen: set[int] = set()
    out = []
    for t in turns:
        if t.index not in seen:
            seen.add(t.index)
            out.append(_why(t, row.metric))
        if len(out) == limit_turns:
            break
    return "; ".join(out)


def paired_lines(rows: Iterable[GateRow], convs: Iterable[Conversation], limit: int = 5) -> list[str]:
    """One block per gated metric that had the paired test; empty when none did."""
    by_id: dict[tuple[str, str], list[Conversation]] = {}
    for c in convs:
        if c.error is None:
            by_id.setdefault((c.suite, c.id), []).append(c)
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
            lines.append("  what got worse (share of the mean drop):")
            for m in r.worse[:limit]:
                share = m.contribution / r.paired.drop
                why = _case(r, by_id.get((r.suite, m.id), []))
                lines.append(f"    {m.id}: drop {m.drop:+.3f} ({share:.0%})" + (f": {why}" if why else ""))
    return lines
