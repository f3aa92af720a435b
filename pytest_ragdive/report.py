"""Reports: the terminal table, results.json, ragdive-junit.xml and summary.md."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .baseline import GateRow
from .metrics.registry import ARROW, METRICS
from .records import Conversation, MetricValue, SuiteResult


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
    return _table(["suite", "metric", "value", "95% CI", "n"], rows)


def gate_lines(rows: list[GateRow]) -> list[str]:
    body = []
    for r in rows:
        verdict = r.verdict.upper() if r.failed else r.verdict
        body.append(
            [r.suite, f"{r.metric} {ARROW[r.direction]}", r.band_text, f"{r.tolerance:g}", _f(r.current), r.delta_text, verdict]
        )
    return _table(["suite", "metric", "baseline band", "tol", "current", "delta", "verdict"], body)


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


def results_json(
    results: dict[str, SuiteResult],
    convs: list[Conversation],
    gate: list[GateRow] | None,
    extra: dict[str, Any],
) -> dict[str, Any]:
    return {
        "suites": {s: {m: mv.value for m, mv in r.metrics.items()} for s, r in results.items()},
        "suite_results": {s: r.model_dump(mode="json") for s, r in results.items()},
        "gate": [r.model_dump(mode="json") for r in gate] if gate is not None else None,
        "conversations": [c.model_dump(mode="json") for c in sorted(convs, key=lambda c: (c.suite, c.run, c.id))],
        **extra,
    }


def junit_xml(rows: list[GateRow], results: dict[str, SuiteResult]) -> str:
    from junit_xml import TestCase, TestSuite, to_xml_report_string

    suites = []
    for suite in results:
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


def summary_md(
    results: dict[str, SuiteResult],
    gate: list[GateRow] | None,
    convs: list[Conversation],
    notes: list[str],
    extra: dict[str, Any] | None = None,
) -> str:
    lines = ["# ragdive quality gate", ""]
    if gate is not None:
        failed = [r for r in gate if r.failed]
        lines.append(f"**{'FAILED' if failed else 'PASSED'}**: {len(failed)} of {len(gate)} gated metrics out of band.")
        lines.append("")
        lines.append("| suite | metric | baseline band | tol | current | delta | verdict |")
        lines.append("|---|---|---|---|---|---|---|")
        for r in gate:
            mark = "❌ " if r.failed else ("⬆ " if r.verdict == "improvement" else "")
            lines.append(f"| {r.suite} | {r.metric} | {r.band_text} | {r.tolerance:g} | {_f(r.current)} | {r.delta_text} | {mark}{r.verdict} |")
        lines.append("")
        for r in failed:
            bad = failing_conversations([c for c in convs if c.suite == r.suite], r.metric)
            if bad:
                lines.append(f"## {r.suite}/{r.metric}: conversations that pull it down")
                lines.append("")
                lines += [f"- {b}" for b in bad]
                lines.append("")
    lines.append("## Metrics")
    lines.append("")
    lines.append("| suite | metric | value | 95% CI | n |")
    lines.append("|---|---|---|---|---|")
    for suite, res in results.items():
        for name, mv in res.metrics.items():
            lines.append(f"| {suite} | {name} | {_f(mv.value)} | {_ci(mv)} | {mv.n} |")
    lines += per_turn_md(results)
    lines += generated_md(extra or {})
    errors = [c for c in convs if c.error]
    if errors:
        lines += ["", "## Conversations that errored", ""]
        lines += [f"- {c.suite}/{c.id} (run {c.run}): {c.error}" for c in errors[:20]]
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


def generated_md(extra: dict[str, Any]) -> list[str]:
    """Validator counts per role and question diversity per turn index (RAG-DIVE)."""
    out: list[str] = []
    for suite, v in (extra.get("validation") or {}).items():
        out += ["", f"## {suite}: generated conversations (validator)", ""]
        out.append("| role | candidates | invalid | regenerated | recovered | dropped | flagged | turns kept |")
        out.append("|---|---|---|---|---|---|---|---|")
        rows = list((v.get("by_role") or {}).items()) + [("all", v)]
        for role, c in rows:
            out.append(
                f"| {role} | {c.get('candidates', 0)} | {c.get('invalid', 0)} | {c.get('regenerations', 0)} | "
                f"{c.get('recovered', 0)} | {c.get('dropped', 0)} | {c.get('flagged', 0)} | {c.get('turns', 0)} |"
            )
        checks = {k: n for k, n in (v.get("by_check") or {}).items() if n}
        if checks:
            out += ["", "Failed checks: " + ", ".join(f"{k} {n}" for k, n in sorted(checks.items()))]
        div = (extra.get("diversity") or {}).get(suite) or {}
        if div:
            idx = sorted(div, key=int)
            out += ["", "Share of distinct questions across runs, by turn (RAG-DIVE Table 3):", ""]
            out.append("| " + " | ".join(f"turn {int(i) + 1}" for i in idx) + " |")
            out.append("|" + "---|" * len(idx))
            out.append("| " + " | ".join(_f(div[i], ".2f") for i in idx) + " |")
    return out


def write_reports(
    report_dir: Path,
    results: dict[str, SuiteResult],
    convs: list[Conversation],
    gate: list[GateRow] | None,
    notes: list[str],
    extra: dict[str, Any],
) -> list[Path]:
    report_dir.mkdir(parents=True, exist_ok=True)
    written = []
    p = report_dir / "results.json"
    p.write_text(json.dumps(results_json(results, convs, gate, extra), indent=1) + "\n", encoding="utf-8")
    written.append(p)
    if gate is not None:
        p = report_dir / "ragdive-junit.xml"
        p.write_text(junit_xml(gate, results), encoding="utf-8")
        written.append(p)
    md = summary_md(results, gate, convs, notes, extra)
    p = report_dir / "summary.md"
    p.write_text(md, encoding="utf-8")
    written.append(p)
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    if step:
        with open(step, "a", encoding="utf-8") as fh:
            fh.write(md)
    return written
