"""The lines every text report shares (terminal and summary.md): the run's headline,
the metrics and gate tables, the paired test's evidence, the conversations that pull a
metric down, baseline changes and validator counts; and the number formats."""

from __future__ import annotations

from ..core.records import Conversation, ValidationStats
from ..core.results import MetricValue, SuiteResult
from ..gate.outcome import GateStatus, RunOutcome
from ..gate.rows import GateRow
from ..metrics.registry import ARROW, METRICS
from ..sharded.report import sharded_lines
from .tables import text_table


def fmt(x: float | None, fmt: str = ".4f") -> str:
    return "n/a" if x is None else format(x, fmt)


def ci_text(mv: MetricValue) -> str:
    return "n/a" if mv.ci_low is None or mv.ci_high is None else f"[{mv.ci_low:.3f}, {mv.ci_high:.3f}]"


def metrics_lines(results: dict[str, SuiteResult]) -> list[str]:
    rows = []
    for suite, res in results.items():
        for name, mv in res.metrics.items():
            rows.append([suite, f"{name} {ARROW[METRICS[name].direction]}", fmt(mv.value), ci_text(mv), str(mv.n)])
    return text_table(["suite", "metric", "value", "95% CI", "n"], rows) + sharded_lines(results)


def detectable(r: GateRow) -> str:
    """The smallest drop the paired test detects at 80% power ("-": band only)."""
    return "-" if r.power is None else fmt(r.power.mdr) + ("!" if r.power.too_small else "")


def gate_lines(rows: list[GateRow]) -> list[str]:
    body = []
    for r in rows:
        verdict = r.verdict.upper() if r.failed else r.verdict
        body.append(
            [r.suite, f"{r.metric} {ARROW[r.direction]}", r.band_text, f"{r.tolerance:g}", detectable(r), fmt(r.current),
             r.delta_text, verdict]
        )
    return text_table(["suite", "metric", "baseline band", "tol", "detectable", "current", "delta", "verdict"], body)


def paired_block(outcome: RunOutcome) -> list[str]:
    """The paired test's evidence, power, unstable and worsened conversations."""
    from .gate_lines import paired_lines

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


def baseline_change_lines(outcome: RunOutcome, markdown: bool = False) -> list[str]:
    """What an update changed in the baseline file it replaced (``baseline diff``'s table)."""
    if outcome.status is not GateStatus.BASELINE_WRITTEN:
        return []
    if outcome.baseline_diff is None:
        return ["a new baseline file (nothing replaced)"]
    if outcome.baseline_diff.identical:
        return ["the baseline it replaced had the same bands, means and runs"]
    from .baseline_text import diff_lines

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
