"""The lines every text report shares (terminal, summary.md, pr-comment.md): the run's
headline, the metrics (by dimension) and the verdict-first gate table, what got worse and
where (the conversations that pull a failed metric down, with the worst unsupported
sentence), the paired test's details, baseline changes and validator counts; and the
number formats."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..core.records import ValidationStats
from ..core.results import MetricValue, SuiteResult
from ..gate.outcome import GateStatus, RunOutcome, rendering
from ..gate.ranking import Culprit, culprits
from ..gate.rows import GateRow
from ..metrics.registry import ARROW, DIMENSIONS, METRICS
from ..sharded.report import sharded_lines
from .tables import text_table


def fmt(x: float | None, fmt: str = ".4f") -> str:
    return "n/a" if x is None else format(x, fmt)


def ci_text(mv: MetricValue) -> str:
    return "n/a" if mv.ci_low is None or mv.ci_high is None else f"[{mv.ci_low:.3f}, {mv.ci_high:.3f}]"


def dimension(metric: str) -> str:
    """The metric's dimension (seed 001: retrieval, grounding, answer, safety; diagnosis), "other" for unknown ones."""
    spec = METRICS.get(metric)
    return spec.dimension if spec is not None else "other"


def by_dimension(names: Iterable[str]) -> list[tuple[str, list[str]]]:
    """Metric names grouped by dimension, in the registry's dimension order (names keep their order)."""
    groups: dict[str, list[str]] = {}
    for n in names:
        groups.setdefault(dimension(n), []).append(n)
    order = [*DIMENSIONS, "other"]
    return sorted(groups.items(), key=lambda kv: order.index(kv[0]))


def sorted_rows(rows: Iterable[GateRow]) -> list[GateRow]:
    """Gate rows grouped by dimension (failed rows first within a group)."""
    order = [*DIMENSIONS, "other"]
    listed = list(rows)
    return sorted(listed, key=lambda r: (order.index(dimension(r.metric)), not r.failed, listed.index(r)))


def metrics_lines(results: dict[str, SuiteResult]) -> list[str]:
    rows = []
    for suite, res in results.items():
        for dim, names in by_dimension(res.metrics):
            for i, name in enumerate(names):
                mv = res.metrics[name]
                arrow = ARROW[METRICS[name].direction] if name in METRICS else ""
                rows.append([suite, dim if i == 0 else "", f"{name} {arrow}", fmt(mv.value), ci_text(mv), str(mv.n)])
    return text_table(["suite", "dimension", "metric", "value", "95% CI", "n"], rows) + sharded_lines(results)


def verdict_word(r: GateRow) -> str:
    return r.verdict.upper() if r.failed else r.verdict


def gate_lines(rows: list[GateRow]) -> list[str]:
    """The gate table, verdict first: suite, dimension, metric, band, current with its CI, delta, verdict,
    why (one line per row; pass rows already in dimension order, :func:`sorted_rows`)."""
    body, last = [], None
    for r in rows:
        dim = dimension(r.metric)
        body.append([r.suite, dim if dim != last else "", f"{r.metric} {ARROW[r.direction]}", r.band_text, r.current_text,
                     r.delta_text, verdict_word(r), r.reason])
        last = dim
    return text_table(["suite", "dimension", "metric", "baseline band", "current [95% CI]", "delta", "verdict", "why"], body)


def paired_block(outcome: RunOutcome) -> list[str]:
    """The paired test's evidence, power, unstable and not-paired conversations (the details)."""
    from .gate_lines import paired_lines

    lines = paired_lines(outcome.gate or [])
    if not lines:
        return []
    return ["paired test (each conversation against its baseline runs; detectable = smallest drop seen at 80% power):",
            *["  " + t for t in lines]]


def clip(text: str, n: int = 160) -> str:
    t = " ".join(text.split())
    return t if len(t) <= n else t[: n - 1] + "…"


def culprit_text(c: Culprit, metric: str, runs: bool = False, quote: Callable[[str], str] | None = None) -> str:
    """One conversation that pulls a metric down, in a line: its value, its drop and share,
    the turns, and the worst unsupported sentence (or the conversation's own reason).
    ``quote``: how text the plugin did not write (the id, the sentence, a judge's reason) is
    quoted (Markdown: :func:`~.md_inert.inert`); default: as it is, the sentence in ``repr``."""
    q = quote or (lambda s: s)
    head = q(c.id) + (f" (run {c.run})" if runs else "")
    bits = [f"{metric} {fmt(c.value, '.2f')}"]
    if c.drop is not None:
        bits.append(f"drop {c.drop:.2f}" + (f", {c.share:.0%} of the total drop" if c.share else ""))
    text = f"{head}: {', '.join(bits)}"
    if c.quote is not None:
        how = c.quote_how
        return text + f"; turn {c.quote_turn}, {how}: {q(clip(c.quote)) if quote else repr(clip(c.quote))}"
    if c.reason_turn is not None:
        return text + f"; turn {c.reason_turn}: {q(clip(c.reason))}"
    spec = METRICS.get(metric)
    if c.reason and ((spec is not None and spec.level == "conversation") or metric == "safety_pass_rate"):
        return text + f"; {q(clip(c.reason))}"
    if c.turns:
        return text + f"; worst turn{'s' if len(c.turns) > 1 else ''} {', '.join(map(str, c.turns))}"
    return text


def where_text(row: GateRow, found: list[Culprit]) -> str:
    """Which conversations (and turns) pull a failed row's metric down, in one line."""
    if not found:
        return ""
    spec = METRICS.get(row.metric)
    if spec is not None and spec.level == "conversation":
        parts = [f"{c.id} (turn {', '.join(map(str, c.turns))})" if c.turns else c.id for c in found]
        what = "answered a follow-up correctly stand-alone but wrongly in the conversation" if row.metric in (
            "forgetfulness", "forgotten_turn_share", "context_retention") else "pull it down"
        return f"{', '.join(parts)}: {what}"
    return "worst: " + ", ".join(f"{c.id} ({fmt(c.value, '.2f')})" for c in found)


def worse_lines(outcome: RunOutcome, limit: int = 5) -> list[str]:
    """Per failed gate row: its reason, then the conversations that pull it down (worst first)."""
    out: list[str] = []
    runs = max((r.runs for r in outcome.gate or []), default=1) > 1
    for r in sorted_rows(outcome.regressions()):
        out.append(f"{r.suite}/{r.metric} {ARROW[r.direction]} {verdict_word(r)}: {r.reason}")
        found = culprits(r, outcome.conversations, limit)
        out += [f"  {culprit_text(c, r.metric, runs)}" for c in found]
        more = len(r.worse) - len(found)
        if more > 0:
            out.append(f"  ... and {more} more (the report lists them)")
    return out


def headline(outcome: RunOutcome) -> str:
    """What the run decided, in one line (every report's first line)."""
    return status_text(outcome)


def _errored_tail(outcome: RunOutcome) -> str:
    n = len(outcome.errored)
    return f"; {n} conversation{'s' if n != 1 else ''} errored (left out; the run fails)" if n else ""


@rendering
def status_text(outcome: RunOutcome) -> str:
    """One line saying what the run decided (the headline of every report)."""
    rows = outcome.gate or []
    bad = outcome.regressions()
    st = outcome.status
    undecided = [r for r in rows if r.verdict == "inconclusive"]
    total, errored = len(outcome.conversations), len(outcome.errored)
    if st is GateStatus.NO_DATA:
        return (f"ragdive gate FAILED: no gated metric had data ({len(rows)} gated, none with a value in this run)"
                + _errored_tail(outcome))
    if st is GateStatus.FAILED and rows and bad:
        bad = sorted_rows(bad)
        kinds = []
        for word, pick in (("regressed", "regression"), ("inconclusive", "inconclusive"), ("had no data", "no data"),
                           ("not in the baseline", "not in baseline"), ("broke their floor", "below floor")):
            names = [f"{r.suite}/{r.metric}" for r in bad if r.verdict == pick]
            if names:
                kinds.append(f"{', '.join(names)} {word}")
        return f"ragdive gate FAILED: {len(bad)} of {len(rows)} gated metrics failed: {'; '.join(kinds)}" + _errored_tail(outcome)
    if st is GateStatus.FAILED:
        return "ragdive run FAILED: " + ("; ".join(outcome.fatal) if outcome.fatal else "see the notes")
    if st is GateStatus.PASSED:
        if errored:
            return (f"ragdive gate passed on {total - errored} of {total} conversations; {errored} errored "
                    f"(left out of the metrics; the run fails through their items)")
        if rows and all(r.band_low is None and r.floor is not None for r in rows):
            return f"ragdive gate passed: {len(rows)} metric(s) within their floors (no baseline: gated on floors alone)"
        floors = sum(1 for r in rows if r.floor is not None)
        return (f"ragdive gate passed: {len(rows)} gated metric(s) within their baseline bands"
                + (f" and floors ({floors} floored)" if floors else ""))
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
                "not failing (gate.inconclusive = 'pass')" + _errored_tail(outcome))
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
