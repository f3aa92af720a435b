"""pr-comment.md: the run for a pull request's sticky comment, in a few lines.

The verdict line, the failed gate rows (verdict first, with the plain-words reason),
the three worst conversations with their worst unsupported sentence, and a link to the
full report. It stays under GitHub's comment limit (65,536 characters) whatever the
suite's size: rows, conversations and quotes are capped, and a last guard cuts what
is left over. The link is ``$RAGDIVE_ARTIFACT_URL`` when set while rendering (the
workflow sets it to the run's page), else the placeholder ``RAGDIVE_ARTIFACT_URL``
for the workflow to replace. The first line is a marker the workflow finds its own
comment by (``MARKER``).
"""

from __future__ import annotations

import os

from ..gate.outcome import GateStatus, RunOutcome, rendering
from ..gate.ranking import Culprit, culprits
from ..gate.rows import GateRow
from ..metrics.registry import ARROW
from .markdown import _cell
from .md_inert import inert
from .text import clip, sorted_rows, status_text, verdict_word

MARKER = "<!-- ragdive-pr-comment -->"
LIMIT = 65_536  # GitHub's limit on a comment's body
BUDGET = 60_000  # what this renderer allows itself (room for the workflow's additions)
MAX_ROWS = 25
WORST = 3
PLACEHOLDER = "RAGDIVE_ARTIFACT_URL"


def _icon(outcome: RunOutcome) -> str:
    st = outcome.status
    if st.fails:
        return "❌"
    if st is GateStatus.PASSED and not outcome.errored:
        return "✅"
    return "⚠️"


def _row(r: GateRow) -> str:
    cells = [clip(r.suite, 40), f"{clip(r.metric, 60)} {ARROW[r.direction]}", r.band_text, r.current_text, r.delta_text,
             verdict_word(r), clip(r.reason, 300)]
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def worst_conversations(outcome: RunOutcome, n: int = WORST) -> list[list[Culprit]]:
    """The ``n`` conversations that pull the failed metrics down most (by how many failed
    metrics they pull, then their share of the drops), each as its culprits (one per metric)."""
    seen: dict[str, tuple[float, list[Culprit]]] = {}
    for r in sorted_rows(outcome.regressions()):
        for rank, c in enumerate(culprits(r, outcome.conversations, limit=5)):
            weight = 1.0 + (c.share if c.share is not None else 1.0 / (rank + 2))
            score, found = seen.get(c.id, (0.0, []))
            seen[c.id] = (score + weight, [*found, c])
    ranked = sorted(seen.values(), key=lambda v: (-v[0], v[1][0].id))
    return [found for _, found in ranked[:n]]


def conversation_text(found: list[Culprit]) -> str:
    """One conversation's line: the failed metrics' values in it, then its worst unsupported
    sentence, else its own reason (the forgetfulness probe's), else its worst turns."""
    values = ", ".join(f"{clip(c.metric, 60)} {c.value:.2f}" for c in found if c.value is not None)
    quoted = [c for c in found if c.quote is not None]
    if quoted:
        c = min(quoted, key=lambda c: c.quote_support or 0.0)
        how = c.quote_how
        return f"{values}; turn {c.quote_turn}, {how}: {inert(c.quote or '')}"
    reasons = [c for c in found if c.reason]
    if reasons:
        return f"{values}; {inert(reasons[0].reason)}"
    return f"{values}; worst turns {', '.join(map(str, found[0].turns))}" if found[0].turns else values


@rendering
def pr_comment_md(outcome: RunOutcome, artifact_url: str | None = None) -> str:
    """The comment's Markdown (at most ``BUDGET`` characters)."""
    url = artifact_url or os.environ.get("RAGDIVE_ARTIFACT_URL") or PLACEHOLDER
    rows = outcome.gate or []
    failed = sorted_rows(outcome.regressions())
    lines = [MARKER, f"### {_icon(outcome)} {clip(status_text(outcome), 600)}", ""]
    if failed:
        lines += ["| suite | metric | baseline band | current [95% CI] | delta | verdict | why |", "|---|---|---|---|---|---|---|"]
        lines += [_row(r) for r in failed[:MAX_ROWS]]
        if len(failed) > MAX_ROWS:
            lines.append(f"| … | {len(failed) - MAX_ROWS} more failed rows in the report | | | | | |")
        passed = len(rows) - len(failed)
        lines += ["", f"{passed} other gated metric{'s' if passed != 1 else ''} passed." if passed else ""]
        worst = worst_conversations(outcome)
        if worst:
            lines += ["", "**Worst conversations**", ""]
            for i, found in enumerate(worst, 1):
                lines.append(f"{i}. {inert(f'{clip(found[0].suite, 40)}/{found[0].id}', 140)}: {conversation_text(found)}")
    elif rows:
        lines.append(f"All {len(rows)} gated metrics are within their baseline bands.")
    errored = outcome.errored
    if errored:
        names = ", ".join(inert(c.id, 80) for c in errored[:5]) + (f" and {len(errored) - 5} more" if len(errored) > 5 else "")
        lines += ["", f"{len(errored)} conversation{'s' if len(errored) != 1 else ''} errored: {names}."]
    artifacts = ", ".join(f"`ragdive-report-{s}`" for s in outcome.suites) or "`ragdive-report-<suite>`"
    lines += ["", f"Full report: [report.html and summary.md]({url}) (the {artifacts} artifact of this run)."]
    text = "\n".join(lines) + "\n"
    if len(text) > BUDGET:  # the caps above make this unreachable; the promise is kept regardless
        text = text[: BUDGET - 200].rsplit("\n", 1)[0] + f"\n\n(cut to fit a comment; the full report: {url[:150]})\n"
    return text
