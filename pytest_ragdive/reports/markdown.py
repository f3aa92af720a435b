"""summary.md: the run in Markdown (also appended to ``$GITHUB_STEP_SUMMARY``)."""

from __future__ import annotations

from ..core.records import ValidationCounts
from ..core.results import SuiteResult
from ..gate.outcome import RunOutcome, rendering
from ..gate.ranking import culprits
from ..gate.rows import GateRow
from ..metrics.registry import ARROW
from ..sharded.report import sharded_md
from .md_inert import inert
from .text import (
    baseline_change_lines,
    by_dimension,
    ci_text,
    culprit_text,
    dimension,
    fmt,
    paired_block,
    sorted_rows,
    status_text,
    verdict_word,
)


def _cell(text: str) -> str:
    """Text in a Markdown table cell (no pipe or line break breaks the row)."""
    return " ".join(text.replace("|", "\\|").split())


def gate_table_md(rows: list[GateRow], with_dimension: bool = True) -> list[str]:
    """The verdict-first gate table (grouped by dimension)."""
    head = ["dimension"] if with_dimension else []
    head += ["suite", "metric", "baseline band", "current [95% CI]", "delta", "verdict", "why"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    last = None
    for r in sorted_rows(rows):
        mark = "❌ " if r.failed else ("⬆ " if r.verdict == "improvement" else "")
        dim = dimension(r.metric)
        cells = [dim if dim != last else ""] if with_dimension else []
        last = dim
        cells += [r.suite, f"{r.metric} {ARROW[r.direction]}", r.band_text, r.current_text, r.delta_text,
                  f"{mark}{verdict_word(r)}", _cell(r.reason)]
        out.append("| " + " | ".join(cells) + " |")
    return out


def worse_md(outcome: RunOutcome, limit: int = 5) -> list[str]:
    """What got worse and where: per failed row its reason, then its conversations."""
    out: list[str] = []
    runs = max((r.runs for r in outcome.gate or []), default=1) > 1
    for r in sorted_rows(outcome.regressions()):
        out.append(f"- **{r.suite}/{r.metric} {ARROW[r.direction]} {verdict_word(r)}**: {_cell(r.reason)}")
        out += [f"  - {culprit_text(c, r.metric, runs, quote=inert)}" for c in culprits(r, outcome.conversations, limit)]
    return out


_WORDS = {"passed": "PASSED", "failed": "FAILED", "no_data": "FAILED", "inconclusive": "INCONCLUSIVE"}


def md_headline(outcome: RunOutcome) -> str:
    """The verdict line with its verdict in bold: ``**FAILED**: 4 of 7 gated metrics failed: ...``."""
    text = status_text(outcome)
    word = _WORDS.get(outcome.status.value)
    at = text.lower().find(word.lower()) if word is not None and text.startswith(("ragdive gate ", "ragdive run ")) else -1
    return f"**{word}**{text[at + len(word):]}" if word is not None and at >= 0 else f"**{text}**"


@rendering
def summary_md(outcome: RunOutcome) -> str:
    gate = outcome.gate
    lines = ["# ragdive quality gate", "", md_headline(outcome), ""]
    if gate is not None:
        lines += gate_table_md(gate)
        lines.append("")
        worse = worse_md(outcome)
        if worse:
            lines += ["## What got worse, and where", "", *worse, ""]
        paired = paired_block(outcome)
        if paired:
            lines += ["<details><summary>Paired test details</summary>", "", "```text", *paired, "```", "", "</details>", ""]
    lines.append("## Metrics")
    lines.append("")
    lines.append("| suite | dimension | metric | value | 95% CI | n |")
    lines.append("|---|---|---|---|---|---|")
    for suite, res in outcome.suites.items():
        for dim, names in by_dimension(res.metrics):
            for i, name in enumerate(names):
                mv = res.metrics[name]
                lines.append(f"| {suite} | {dim if i == 0 else ''} | {name} | {fmt(mv.value)} | {ci_text(mv)} | {mv.n} |")
    lines += per_turn_md(outcome.suites)
    lines += sharded_md(outcome.suites)
    lines += generated_md(outcome)
    changes = baseline_change_lines(outcome, markdown=True)
    if changes:
        lines += ["", "## Baseline update", ""] + changes
    errors = outcome.errored
    if errors:
        lines += ["", "## Conversations that errored", ""]
        lines += [f"- {inert(f'{c.suite}/{c.id}')} (run {c.run}): {inert(c.error or '', 300)}" for c in errors[:20]]
    if outcome.llm is not None:
        # the calls, tokens and cost this run actually spent (cache hits are free)
        lines += ["", "## LLM calls", "", "```", *outcome.llm.summary_lines(), "```"]
    notes = outcome.notes + outcome.fatal
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


CURVE_METRICS = ("correctness", "answer_f1", "faithfulness", "recall_at_k", "context_recall")


def per_turn_md(results: dict[str, SuiteResult]) -> list[str]:
    """Per-turn-index means: where in a conversation quality drops."""
    out: list[str] = []
    for suite, res in results.items():
        rows = [(m, res.metrics[m].per_turn_index) for m in CURVE_METRICS if m in res.metrics]
        idx = sorted({int(k) for _, curve in rows for k in curve})
        if len(idx) < 2:
            continue
        out += ["", f"## {suite}: mean by turn index", ""]
        out.append("| metric | " + " | ".join(f"turn {i + 1}" for i in idx) + " |")
        out.append("|---|" + "---|" * len(idx))
        for m, curve in rows:
            out.append(f"| {m} | " + " | ".join(fmt(curve.get(str(i)), ".3f") for i in idx) + " |")
    return out


def generated_md(outcome: RunOutcome) -> list[str]:
    """Validator counts per role and question diversity per turn index (RAG-DIVE)."""
    out: list[str] = []
    for suite, v in outcome.validation.items():
        out += ["", f"## {suite}: generated conversations (validator)", ""]
        out.append("| role | candidates | invalid | regenerated | recovered | dropped | flagged | turns kept |")
        out.append("|---|---|---|---|---|---|---|---|")
        rows: list[tuple[str, ValidationCounts]] = [*v.by_role.items(), ("all", v)]
        for role, c in rows:
            out.append(
                f"| {role} | {c.candidates} | {c.invalid} | {c.regenerations} | "
                f"{c.recovered} | {c.dropped} | {c.flagged} | {c.turns} |"
            )
        checks = {k: n for k, n in v.by_check.items() if n}
        if checks:
            out += ["", "Failed checks: " + ", ".join(f"{k} {n}" for k, n in sorted(checks.items()))]
        div = outcome.diversity.get(suite) or {}
        if div:
            idx = sorted(div, key=int)
            out += ["", "Share of distinct questions across runs, by turn (RAG-DIVE Table 3):", ""]
            out.append("| " + " | ".join(f"turn {int(i) + 1}" for i in idx) + " |")
            out.append("|" + "---|" * len(idx))
            out.append("| " + " | ".join(fmt(div[i], ".2f") for i in idx) + " |")
    return out
