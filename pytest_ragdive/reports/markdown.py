"""summary.md: the run in Markdown (also appended to ``$GITHUB_STEP_SUMMARY``)."""

from __future__ import annotations

from ..core.records import ValidationCounts
from ..core.results import SuiteResult
from ..gate.outcome import GateStatus, RunOutcome
from ..sharded.report import sharded_md
from .text import baseline_change_lines, ci_text, detectable, failing_conversations, fmt, paired_block, status_text


def summary_md(outcome: RunOutcome) -> str:
    convs = outcome.conversations
    gate = outcome.gate
    lines = ["# ragdive quality gate", ""]
    if gate is not None:
        failed = outcome.regressions()
        verdict = "PASSED" if outcome.status is GateStatus.PASSED else outcome.status.value.upper().replace("_", " ")
        lines.append(f"**{verdict}**: {len(failed)} of {len(gate)} gated metrics out of band.")
        lines.append("")
        lines.append("| suite | metric | baseline band | tol | detectable | current | delta | verdict |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for r in gate:
            mark = "❌ " if r.failed else ("⬆ " if r.verdict == "improvement" else "")
            lines.append(
                f"| {r.suite} | {r.metric} | {r.band_text} | {r.tolerance:g} | {detectable(r)} | {fmt(r.current)} "
                f"| {r.delta_text} | {mark}{r.verdict} |"
            )
        lines.append("")
        paired = paired_block(outcome)
        if paired:
            lines += ["## Paired test", "", "```text", *paired, "```", ""]
        for r in failed:
            bad = failing_conversations([c for c in convs if c.suite == r.suite], r.metric)
            if bad:
                lines.append(f"## {r.suite}/{r.metric}: conversations that pull it down")
                lines.append("")
                lines += [f"- {b}" for b in bad]
                lines.append("")
    else:
        lines += [f"**{status_text(outcome)}**", ""]
    lines.append("## Metrics")
    lines.append("")
    lines.append("| suite | metric | value | 95% CI | n |")
    lines.append("|---|---|---|---|---|")
    for suite, res in outcome.suites.items():
        for name, mv in res.metrics.items():
            lines.append(f"| {suite} | {name} | {fmt(mv.value)} | {ci_text(mv)} | {mv.n} |")
    lines += per_turn_md(outcome.suites)
    lines += sharded_md(outcome.suites)
    lines += generated_md(outcome)
    changes = baseline_change_lines(outcome, markdown=True)
    if changes:
        lines += ["", "## Baseline update", ""] + changes
    errors = outcome.errored
    if errors:
        lines += ["", "## Conversations that errored", ""]
        lines += [f"- {c.suite}/{c.id} (run {c.run}): {c.error}" for c in errors[:20]]
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
