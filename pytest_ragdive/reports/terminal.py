"""The terminal summary of a run, each line styled from the outcome (never from its text)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from ..gate.outcome import GateStatus, RunOutcome, rendering
from .text import (
    baseline_change_lines,
    gate_lines,
    metrics_lines,
    paired_block,
    sorted_rows,
    status_text,
    validation_lines,
    worse_lines,
)


class Line(BaseModel):
    """One terminal line and how to show it."""

    text: str
    style: Literal["plain", "good", "bad"] = "plain"


@rendering
def terminal_lines(outcome: RunOutcome, written: list[Path] | None = None) -> list[Line]:
    """The terminal summary of a run, each line styled from the outcome (never from its text)."""
    lines: list[Line] = []

    def add(text: str, style: Literal["plain", "good", "bad"] = "plain") -> None:
        lines.append(Line(text=text, style=style))

    if outcome.suites:
        for t in metrics_lines(outcome.suites):
            add(t)
    errors = outcome.errored
    if errors:
        add("")
        add(f"{len(errors)} conversation(s) errored and are left out of the metrics:")
        for c in errors[:10]:
            add(f"  {c.suite}/{c.id} run {c.run}: {c.error}")
    st = outcome.status
    if outcome.gate is not None:
        add("")
        rows = sorted_rows(outcome.gate)
        body = gate_lines(rows)
        for t, row in zip(body, [None, None, *rows], strict=True):
            add(t, "bad" if row is not None and row.failed else "plain")
        add("")
        add(status_text(outcome), "bad" if st.fails or errors else "good" if st is GateStatus.PASSED else "plain")
        worse = worse_lines(outcome)
        if worse:
            add("what got worse, and where:", "bad")
            for t in worse:
                add("  " + t, "bad" if not t.startswith(" ") else "plain")
        better = outcome.improvements()
        if better:
            add("improvements (consider --ragdive-update-baseline):")
            for r in better:
                add("  " + r.line())
        apart = [r for r in outcome.gate if r.not_comparable]
        if apart:
            add("better than the baseline but not comparable with it (no improvement declared):")
            for r in apart:
                add(f"  {r.suite}/{r.metric}: {r.not_comparable}")
        for t in paired_block(outcome):
            add(t)
    elif st is not GateStatus.BASELINE_WRITTEN or outcome.baseline_path is None:
        add("")
        add(status_text(outcome), "bad" if st.fails else "plain")
    if outcome.baseline_path is not None:
        add(f"baseline written to {outcome.baseline_path}")
        for t in baseline_change_lines(outcome):
            add(t)
    for t in validation_lines(outcome):
        add(t)
    jc = outcome.judge_calls
    if jc is not None:
        per_model = ", ".join(f"{m}: {n}" for m, n in sorted(jc.by_model.items()))
        add(
            f"judge calls: {jc.turn} per-turn + {jc.conversation} per-conversation "
            f"(re-judged by the cascade: {jc.rejudged}; by model: {per_model or 'none'})"
        )
    if outcome.llm is not None:
        add("")
        for t in outcome.llm.summary_lines():
            add(t)
    for n in outcome.notes:
        add(f"note: {n}")
    for f in outcome.fatal:
        add(f"ERROR: {f}", "bad")
    for p in written or []:
        add(f"report: {p}")
    return lines
