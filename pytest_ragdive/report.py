"""Reports, each rendered from a :class:`~pytest_ragdive.outcome.RunOutcome`: the terminal
summary, results.json, ragdive-junit.xml, summary.md and report.html (:mod:`.html_report`)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from .baseline import GateRow
from .metrics.registry import ARROW, METRICS
from .outcome import GateStatus, RunOutcome
from .records import Conversation, MetricValue, SuiteResult, ValidationCounts, ValidationStats
from .sharded_report import sharded_lines, sharded_md


def _f(x: float | None, fmt: str = ".4f") -> str:
    return "n/a" if x is None else format(x, fmt)


def _ci(mv: MetricValue) -> str:
    return "n/a" if mv.ci_low is None or mv.ci_high is None else f"[{mv.ci_low:.3f}, {mv.ci_high:.3f}]"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return out


def metrics_lines(results: dict[str, SuiteResult]) -> list[str]:
    rows = []
    for suite, res in results.items():
        for name, mv in res.metrics.items():
            rows.append([suite, f"{name} {ARROW[METRICS[name].direction]}", _f(mv.value), _ci(mv), str(mv.n)])
    return _table(["suite", "metric", "value", "95% CI", "n"], rows) + sharded_lines(results)


def _detectable(r: GateRow) -> str:
    """The smallest drop the paired test detects at 80% power ("-": band only)."""
    return "-" if r.power is None else _f(r.power.mdr) + ("!" if r.power.too_small else "")


def gate_lines(rows: list[GateRow]) -> list[str]:
    body = []
    for r in rows:
        verdict = r.verdict.upper() if r.failed else r.verdict
        body.append(
            [r.suite, f"{r.metric} {ARROW[r.direction]}", r.band_text, f"{r.tolerance:g}", _detectable(r), _f(r.current),
             r.delta_text, verdict]
        )
    return _table(["suite", "metric", "baseline band", "tol", "detectable", "current", "delta", "verdict"], body)


def paired_block(outcome: RunOutcome) -> list[str]:
    """The paired test's evidence, power, unstable and worsened conversations."""
    from .gate_report import paired_lines

    lines = paired_lines(outcome.gate or [], outcome.conversations)
    if not lines:
        return []
    return ["paired test (each conversation against its baseline runs; detectable = smallest drop seen at 80% power, "
            "! = larger than the tolerance):", *["  " + t for t in lines]]


def _badness(value: float | None, higher: bool) -> float:
    v = value or 0.0
    return v if higher else -v


def failing_conversations(convs: list[Conversation], metric: str, limit: int = 10) -> list[str]:
    """The conversations that pull a metric the wrong way, worst first, with
    the judge's reasons (or the worst turns' questions) where known."""
    spec = METRICS.get(metric)
    higher = spec is None or spec.direction == "higher"
    scored = [(c, v) for c in convs if c.error is None and (v := c.scores.get(metric)) is not None]
    bad = sorted(((c, v) for c, v in scored if (v < 1 if higher else v > 0)), key=lambda cv: cv[1], reverse=not higher)
    out = []
    for c, v in bad[:limit]:
        if metric in c.verdicts and c.verdicts[metric].reason:
            why = c.verdicts[metric].reason
        else:
            turns = sorted(
                (t for t in c.turns if (s := t.scores.get(metric)) is not None and (s < 1 if higher else s > 0)),
                key=lambda t: _badness(t.scores[metric], higher),
            )[:3]
            why = "; ".join(
                f"turn {t.index + 1} {t.rag_input[:60]!r}: "
                + (t.verdicts[metric].reason if metric in t.verdicts and t.verdicts[metric].reason else f"{t.scores[metric]:.2f}")
                for t in turns
            )
        out.append(f"{c.suite}/{c.id} (run {c.run}) {metric}={v:.2f}" + (f": {why}" if why else ""))
    return out


def results_json(outcome: RunOutcome, conversations: bool = True) -> dict[str, Any]:
    """results.json: the outcome, with a flat ``suites`` map of metric values first
    (``conversations`` last, left out when False: :func:`write_results_json` streams them)."""
    info = outcome.info
    return {
        "status": outcome.status.value,
        "suites": {s: {m: mv.value for m, mv in r.metrics.items()} for s, r in outcome.suites.items()},
        "suite_results": {s: r.model_dump(mode="json") for s, r in outcome.suites.items()},
        "gate": [r.model_dump(mode="json") for r in outcome.gate] if outcome.gate is not None else None,
        "info": info.model_dump(mode="json"),
        "plugin_version": info.plugin_version,
        "config_hash": info.config_hash,
        "backend": info.backend,
        "notes": outcome.notes,
        "fatal": outcome.fatal,
        "llm": outcome.llm.model_dump(mode="json") if outcome.llm is not None else None,
        "judge_calls": outcome.judge_calls.model_dump(mode="json") if outcome.judge_calls is not None else None,
        "validation": {s: v.model_dump(mode="json") for s, v in outcome.validation.items()} or None,
        "diversity": outcome.diversity or None,
        "baseline_path": outcome.baseline_path,
        **({"conversations": [c.model_dump(mode="json") for c in outcome.conversations]} if conversations else {}),
    }


class Stored(Protocol):
    """What a session stored of conversations it holds without their contexts
    (:class:`~pytest_ragdive.held.HeldConversations`): None for one it holds whole."""

    def full_json(self, key: str) -> str | None: ...

    def html_body(self, key: str) -> str | None: ...


def write_results_json(path: Path, outcome: RunOutcome, stored: Stored | None = None) -> None:
    """results.json, one conversation at a time (pydantic's own JSON writer), so
    the whole report is never held in memory as objects or as one string.
    ``stored``: the full JSON of conversations the outcome holds without contexts."""
    head = json.dumps(results_json(outcome, conversations=False), indent=1)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(head[:-2] + ',\n "conversations": [')
        for i, c in enumerate(outcome.conversations):
            text = stored.full_json(c.key) if stored is not None else None
            fh.write(("," if i else "") + "\n" + (text if text is not None else c.model_dump_json()))
        fh.write("\n ]\n}\n")


def junit_xml(outcome: RunOutcome) -> str:
    from junit_xml import TestCase, TestSuite, to_xml_report_string

    rows = outcome.gate or []
    suites = []
    for suite in outcome.suites:
        cases = []
        for r in (r for r in rows if r.suite == suite):
            tc = TestCase(name=r.metric, classname=f"ragdive.{suite}")
            if r.failed:
                tc.add_failure_info(message=r.line(), output=r.line())
            else:
                tc.stdout = r.line()
            cases.append(tc)
        suites.append(TestSuite(f"ragdive-{suite}", cases))
    return to_xml_report_string(suites)


def status_text(outcome: RunOutcome) -> str:
    """One line saying what the run decided (the headline of every report)."""
    rows = outcome.gate or []
    bad = outcome.regressions()
    st = outcome.status
    undecided = [r for r in rows if r.verdict == "inconclusive"]
    if st is GateStatus.FAILED and rows and bad:
        more = f" ({len(undecided)} of them inconclusive: the evidence could not tell)" if undecided else ""
        return f"ragdive gate FAILED: {len(bad)} of {len(rows)} gated metric(s) out of band{more}"
    if st is GateStatus.FAILED:
        return "ragdive run FAILED: " + ("; ".join(outcome.fatal) if outcome.fatal else "see the notes")
    if st is GateStatus.PASSED:
        return f"ragdive gate passed: {len(rows)} gated metric(s) within their baseline bands"
    if st is GateStatus.NOTHING_RAN:
        why = "no conversation of a selected suite finished" if not outcome.suites else "no metric is gated"
        return f"ragdive gate: nothing gated ({why})"
    if st is GateStatus.BASELINE_WRITTEN:
        return "ragdive baseline " + (f"written to {outcome.baseline_path}" if outcome.baseline_path else "recorded")
    if st is GateStatus.BASELINE_REFUSED:
        return "ragdive baseline NOT written (see the notes)"
    if st is GateStatus.SUBSET:
        return (
            f"ragdive gate: only {len(outcome.conversations)} of {outcome.info.planned} planned conversations ran "
            "(-k, --lf, a deselection or an interruption): the metrics describe that subset; nothing gated"
        )
    if st is GateStatus.SHARD:
        return f"ragdive shard {outcome.info.shard}: results written; the gate command decides"
    if st is GateStatus.INCONCLUSIVE:
        return (f"ragdive gate INCONCLUSIVE: {len(undecided)} of {len(rows)} gated metric(s) undecided, "
                "not failing (gate.inconclusive = 'pass')")
    return "no baseline given: metrics shown, nothing gated (use --ragdive-baseline=PATH)"


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
                f"| {r.suite} | {r.metric} | {r.band_text} | {r.tolerance:g} | {_detectable(r)} | {_f(r.current)} "
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
            lines.append(f"| {suite} | {name} | {_f(mv.value)} | {_ci(mv)} | {mv.n} |")
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
            out.append(f"| {m} | " + " | ".join(_f(curve.get(str(i)), ".3f") for i in idx) + " |")
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
            out.append("| " + " | ".join(_f(div[i], ".2f") for i in idx) + " |")
    return out


def write_reports(report_dir: Path, outcome: RunOutcome, stored: Stored | None = None) -> list[Path]:
    """results.json, ragdive-junit.xml (when gated), summary.md (also appended to
    ``$GITHUB_STEP_SUMMARY``) and report.html. ``stored``: what results.json and
    report.html need of conversations the outcome holds without their contexts."""
    report_dir.mkdir(parents=True, exist_ok=True)
    written = []
    p = report_dir / "results.json"
    write_results_json(p, outcome, stored)
    written.append(p)
    if outcome.gate is not None:
        p = report_dir / "ragdive-junit.xml"
        p.write_text(junit_xml(outcome), encoding="utf-8")
        written.append(p)
    md = summary_md(outcome)
    p = report_dir / "summary.md"
    p.write_text(md, encoding="utf-8")
    written.append(p)
    from .html_report import write_html

    written.append(write_html(report_dir, outcome, stored.html_body if stored is not None else None))
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    if step:
        with open(step, "a", encoding="utf-8") as fh:
            fh.write(md)
    return written


class Line(BaseModel):
    """One terminal line and how to show it."""

    text: str
    style: Literal["plain", "good", "bad"] = "plain"


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
        body = gate_lines(outcome.gate)
        for t, row in zip(body, [None, None, *outcome.gate], strict=True):
            add(t, "bad" if row is not None and row.failed else "plain")
        add("")
        bad = outcome.regressions()
        add(status_text(outcome), "bad" if st.fails else "good" if st is GateStatus.PASSED else "plain")
        for r in bad:
            add("  " + r.line(), "bad")
        better = outcome.improvements()
        if better:
            add("improvements (consider --ragdive-update-baseline):")
            for r in better:
                add("  " + r.line())
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


def baseline_change_lines(outcome: RunOutcome, markdown: bool = False) -> list[str]:
    """What an update changed in the baseline file it replaced (``baseline diff``'s table)."""
    if outcome.status is not GateStatus.BASELINE_WRITTEN:
        return []
    if outcome.baseline_diff is None:
        return ["a new baseline file (nothing replaced)"]
    if outcome.baseline_diff.identical:
        return ["the baseline it replaced had the same bands, means and runs"]
    from .baseline_diff import diff_lines

    return ["changes against the baseline it replaced:", *diff_lines(outcome.baseline_diff, markdown=markdown)]


def validation_lines(outcome: RunOutcome) -> list[str]:
    gen = [c for c in outcome.conversations if c.source == "generated"]
    if not gen:
        return []
    st = ValidationStats.merge_all(outcome.validation.values())  # conclude() counted them per suite
    checks = ", ".join(f"{k} {v}" for k, v in sorted(st.by_check.items()) if v) or "none"
    return [
        f"generated: {len(gen)} conversation(s), {st.turns} turn(s); validator rejected {st.invalid} of "
        f"{st.candidates} candidate turn(s) (regenerated {st.regenerations}, recovered {st.recovered}, "
        f"dropped {st.dropped}, flagged {st.flagged}); failed checks: {checks}"
    ]
