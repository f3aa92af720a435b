"""The rows of the gate: one :class:`GateRow` per gated metric per suite.

:func:`gate_row` compares a suite value with its baseline band (the band rule:
``[min - tolerance, max + tolerance]``, :meth:`BaselineMetric.band`), and
:func:`check` builds every row of a run, adding the paired test of
:mod:`.paired` (the full verdict rule is in that module's docstring) where the
baseline holds per-conversation values. A value outside the band on the good
side is an improvement (``improvement = "band"``, the default), or, with
``improvement = "delta"`` (seed 001's rule), a value that moved from the baseline mean
by more than ``improvement_delta`` (0.01) on the good side without leaving the band on the
bad one; an improvement passes and is listed, but only when the value was scored on a
set comparable to the baseline's (:mod:`.comparable`; otherwise the row passes and says
why). A metric of ``where_data`` (MRR, answer
relevance, citation rate by default) is gated only in a suite whose baseline has a value
for it; any other gated metric without a value fails ("no data", "not in baseline").
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Literal

from pydantic import BaseModel, Field

from ..core.records import Conversation
from ..core.results import Baseline, BaselineMetric, SuiteResult
from ..metrics.registry import ARROW, METRICS
from .comparable import ELIGIBLE_METRICS, kept_not_comparable, not_comparable
from .paired import (
    PairedResult,
    Pairing,
    Table,
    alpha_for_look,
    baseline_table,
    decide,
    pair,
    paired_tests,
    table,
    varies,
)
from .power import Moved, Power, power_of, spread, unstable, worse

EPS = 1e-9


Verdict = Literal["pass", "regression", "improvement", "inconclusive", "no data", "not in baseline", "below floor"]


Method = Literal["band", "band+paired"]


OnInconclusive = Literal["fail", "pass", "rerun"]


UNPAIRED = (  # zero tolerance, no statistics
    "safety_pass_rate", "assertion_pass_rate", "attack_success_rate", "attack_success_instructions",
    "attack_success_personal_data", "attack_success_policy", "attack_success_off_domain", "attack_success_persistence",
    "attack_success_injection",
)


def where_recorded(gate: dict[str, float], stored: dict[str, BaselineMetric], where_data: Iterable[str] = ()) -> dict[str, float]:
    """The gate entries that apply against one suite of a baseline (``stored``): a metric of
    ``where_data`` (``gate.where_data``: MRR, answer relevance, citation rate by default) and
    a metric the plugin may have nothing to score for (``assertion_pass_rate`` without
    ``assert:`` checks, a rubric judge without a model: ``MetricSpec.gated_where_recorded``)
    are gated where the baseline holds them; every other entry always. A baseline that
    holds ``forgetfulness`` but not ``forgotten_turn_share`` (recorded before it existed) is
    gated on ``forgetfulness`` at the share's tolerance."""
    optional = set(where_data)
    out = {
        m: t for m, t in gate.items()
        if m in stored or not (m in optional or (m in METRICS and METRICS[m].gated_where_recorded))
    }
    # a baseline recorded before forgotten_turn_share existed: forgetting is gated on its
    # forgetfulness, at the same tolerance, until the baseline is re-recorded
    share = LEGACY_FORGETTING
    if share in gate and share not in stored and "forgetfulness" in stored and "forgetfulness" not in out:
        out["forgetfulness"] = gate[share]
    return out


LEGACY_FORGETTING = "forgotten_turn_share"
WORSE_LISTED = 10  # conversations that got worse, kept per row (largest contribution first)

# the range of the built-in metrics' values, where the reports clip a band to it (a band
# [-0.05, 0.05] of a share reads [0, 0.05]): every built-in is a share in [0, 1] but the
# gap of the sharded diagnosis, a difference of two; a team's own metric is not clipped
RANGES: dict[str, tuple[float, float]] = {"sharded_gap": (-1.0, 1.0)}


def clipped(metric: str, low: float, high: float) -> tuple[float, float]:
    """A band as shown: clipped to the metric's range (``RANGES``, else [0, 1] for a built-in;
    a team's own metric as it is)."""
    builtin = metric in METRICS and METRICS[metric].kind == "builtin"
    lo, hi = RANGES.get(metric, (0.0, 1.0) if builtin else (-math.inf, math.inf))
    return min(max(low, lo), hi), max(min(high, hi), lo)


def num(x: float | None, digits: int = 2) -> str:
    """A number for people: ``digits`` decimals from 0.1 up, else ``digits`` significant digits
    (0.36, 0.031, 0.0016; no -0)."""
    if x is None:
        return "n/a"
    if abs(x) < 1e-12:
        return f"{0:.{digits}f}"
    return f"{x:.{digits}f}" if abs(x) >= 0.1 else f"{x:.{digits}g}"


def pct(q: float) -> str:
    """A confidence level as people write it (0.95 -> "95%", 0.9983 -> "99.8%")."""
    return f"{round(q * 100, 1):g}%"


def pairable(metric: str) -> bool:
    """Safety has no statistics; suite-level metrics (the sharded diagnosis) have no per-conversation value."""
    return metric not in UNPAIRED and metric in METRICS and METRICS[metric].level != "suite"


class GateRow(BaseModel):
    suite: str
    metric: str
    direction: Literal["higher", "lower"]
    baseline_mean: float | None
    band_low: float | None
    band_high: float | None
    tolerance: float
    current: float | None
    delta: float | None
    verdict: Verdict
    ci_low: float | None = None  # the current value's 95% CI (over conversations)
    ci_high: float | None = None
    # the paired test (gate.method = "band+paired" and a format-2 baseline)
    method: Method = "band"
    band_verdict: Verdict | None = None  # the band's verdict alone
    paired: PairedResult | None = None
    power: Power | None = None
    new: list[str] = Field(default_factory=list)  # conversations not in the baseline (not paired)
    missing: list[str] = Field(default_factory=list)  # baseline conversations that did not run
    unstable: list[str] = Field(default_factory=list)  # baseline spread (p90 - p10) above the threshold
    worse: list[Moved] = Field(default_factory=list)
    runs: int = 1  # runs of this session pooled per conversation
    look: int = 0  # 0 for the first run, k after the k-th rerun
    looks: int = 1  # the most looks the policy allows
    on_inconclusive: OnInconclusive = "fail"
    # [tool.ragdive.floors]: an absolute limit beside the band (a ceiling for lower-is-better metrics)
    floor: float | None = None
    # why the value is not comparable with the baseline's (scored on far fewer units: gate/comparable.py);
    # set only where that stopped an improvement
    not_comparable: str = ""

    @property
    def failed(self) -> bool:
        if self.verdict == "inconclusive":
            return self.on_inconclusive != "pass"
        return self.verdict in ("regression", "no data", "not in baseline", "below floor")

    @property
    def floor_text(self) -> str:
        """The floor in words (``floor 0.9``, ``ceiling 0.2``); empty without one."""
        if self.floor is None:
            return ""
        return f"{'floor' if self.direction == 'higher' else 'ceiling'} {num(self.floor, 3)}"

    @property
    def wants_rerun(self) -> bool:
        """Inconclusive, the policy reruns, and a look is left."""
        return self.verdict == "inconclusive" and self.on_inconclusive == "rerun" and self.look + 1 < self.looks

    @property
    def band_text(self) -> str:
        """The band, clipped to the metric's range (a share's band never reads below 0 or above 1)."""
        if self.band_low is None or self.band_high is None:
            if self.floor is not None:
                return f"{'≥' if self.direction == 'higher' else '≤'} {self.floor:.4f} (floor)"
            return "n/a"
        low, high = clipped(self.metric, self.band_low, self.band_high)
        return f"[{low:.4f}, {high:.4f}]"

    @property
    def delta_text(self) -> str:
        # round first, and + 0.0, so that a tiny negative difference prints as +0.0000
        return "n/a" if self.delta is None else f"{round(self.delta, 4) + 0.0:+.4f}"

    @property
    def current_text(self) -> str:
        """The current value with its 95% CI, e.g. ``0.6123 [0.55, 0.67]``."""
        if self.current is None:
            return "n/a"
        ci = "" if self.ci_low is None or self.ci_high is None else f" [{self.ci_low:.3f}, {self.ci_high:.3f}]"
        return f"{self.current:.4f}{ci}"

    @property
    def detectable_text(self) -> str:
        """The smallest drop the paired test detects at 80% power: "any change" when the
        baseline runs repeat exactly (no spread), "n/a" without the paired test or the spread."""
        pw = self.power
        if pw is None or pw.mdr is None:
            return "n/a"
        if pw.mdr <= EPS:
            return "any change"
        return f"{pw.mdr:.3g}" + (" (larger than the tolerance)" if pw.too_small else "")

    @property
    def reason(self) -> str:
        """Why the row has its verdict, in one line of plain words."""
        if self.verdict == "below floor":
            worse_word = "below" if self.direction == "higher" else "above"
            return (f"{num(self.current, 3)} is {worse_word} the {self.floor_text} set in [tool.ragdive.floors]: "
                    "fails whatever the baseline says")
        if self.floor is not None and self.band_low is None and self.verdict == "pass":
            better = "at or above" if self.direction == "higher" else "at or below"
            return f"{num(self.current, 3)} is {better} the {self.floor_text} (no baseline band: gated on the floor alone)"
        if self.verdict == "no data" and self.band_low is None and self.floor is not None:
            return f"no conversation had a value for this metric in this run: its {self.floor_text} cannot be checked"
        if self.verdict == "not in baseline":
            return "the baseline has no value for this metric: record it with --ragdive-update-baseline"
        if self.verdict == "no data":
            return "no conversation had a value for this metric in this run (no case it applies to, or all errored)"
        worse_word = "below" if self.direction == "higher" else "above"
        edge = self.band_low if self.direction == "higher" else self.band_high
        if self.not_comparable and self.verdict == "pass":
            return f"{num(self.current, 3)} reads better than the baseline but is {self.not_comparable}"
        if self.verdict == "improvement":
            return (f"{num(self.current, 3)} is better than every baseline run by more than the tolerance "
                    f"{self.tolerance:g}: consider --ragdive-update-baseline")
        p = self.paired
        if p is None:
            if self.verdict == "regression":
                zero = ": zero tolerance" if self.tolerance == 0 else ""
                return f"{num(self.current, 3)} is {worse_word} the band (limit {num(edge, 3)}){zero}"
            return f"{num(self.current, 3)} is within the band (limit {num(edge, 3)})"
        over = f"over {p.n} conversation{'s' if p.n != 1 else ''}" + (f" x {self.runs} runs" if self.runs > 1 else "")
        tol = f"tolerance {self.tolerance:g}"
        if p.noise_free:
            cmp = ">" if p.drop > self.tolerance + EPS else "≤"
            return f"paired drop {num(p.drop)} {cmp} {tol} (exact: the runs repeat), {over}"
        lower, upper = f"{pct(1 - p.level)} bound", f"{pct(1 - p.alpha)} bound"
        if self.verdict == "regression":
            if p.low > self.tolerance + EPS:
                return f"paired drop {num(p.drop)}, {lower} {num(p.low)} > {tol}, {over}"
            return f"paired drop {num(p.drop)}, {lower} {num(p.low)} > 0 and the value is {worse_word} the band, {over}"
        if self.verdict == "pass":
            if p.within:
                return f"paired drop {num(p.drop)}, {upper} {num(p.high)} ≤ {tol}, {over}"
            return f"paired drop {num(p.drop)} is not significant ({lower} {num(p.low)}) and the value is in the band, {over}"
        text = f"paired drop {num(p.drop)} between {num(p.low)} and {num(p.high)}: cannot tell against {tol}, {over}"
        if self.wants_rerun:
            return text + "; rerunning"
        text += f"; still undecided after {self.look} rerun(s)" if self.look else ""
        pw = self.power
        needs = [] if pw is None else [f"{pw.conversations_needed} conversations"] * bool(pw.conversations_needed) + [
            f"{pw.runs_needed} runs per PR"] * bool(pw.runs_needed)
        return text + (f" (deciding needs {' or '.join(needs)})" if needs else "")

    @property
    def paired_text(self) -> str:
        """The paired evidence in words; empty without a paired test."""
        p = self.paired
        if p is None:
            return ""
        text = (
            f"paired drop {round(p.drop, 4) + 0.0:+.4f} over {p.n} conversation(s) x {self.runs} run(s), "
            f"one-sided bounds {round(p.low, 4) + 0.0:+.4f} ({1 - p.level:.1%}) to {round(p.high, 4) + 0.0:+.4f} "
            f"({1 - p.alpha:.1%})"
        )
        if self.band_verdict is not None and self.band_verdict != self.verdict:
            text += f", band alone: {self.band_verdict}"
        if self.verdict == "inconclusive" and not self.wants_rerun:
            text += f", still inconclusive after {self.look} rerun(s)"
            if self.power is not None and (self.power.conversations_needed or self.power.runs_needed):
                text += f": {self.power_text}"
        return text

    @property
    def power_text(self) -> str:
        """The smallest regression this suite detects at 80% power, beside the tolerance."""
        pw = self.power
        if pw is None:
            return ""
        if pw.mdr is None:
            return "detectable drop unknown (one baseline run: record it with --ragdive-runs=3 or more)"
        if pw.mdr <= EPS:
            return f"detects any change (the baseline runs repeat exactly; tolerance {self.tolerance:g})"
        text = f"detects a drop of {pw.mdr:.4f} at 80% power (tolerance {self.tolerance:g})"
        if pw.too_small:
            needs = [f"{pw.conversations_needed} conversations"] if pw.conversations_needed else []
            if pw.runs_needed:
                needs.append(f"{pw.runs_needed} runs per PR (--ragdive-runs)")
            text += ": too small for its tolerance" + (f", needs {' or '.join(needs)}" if needs else "")
        return text

    def line(self) -> str:
        def f(x: float | None) -> str:
            return "n/a" if x is None else f"{x:.4f}"

        arrow = ARROW[self.direction]
        band = self.band_text
        delta = self.delta_text
        out = (
            f"{self.suite}/{self.metric} ({arrow} better): current {f(self.current)}, "
            f"baseline band {band} (tolerance {self.tolerance:g}), delta {delta}: {self.verdict.upper()}"
        )
        return out + (f" ({self.paired_text})" if self.paired is not None else "")




def compare_to_band(value: float | None, low: float, high: float, direction: str) -> Verdict:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "no data"
    if direction == "higher":
        if value < low - EPS:
            return "regression"
        if value > high + EPS:
            return "improvement"
    else:
        if value > high + EPS:
            return "regression"
        if value < low - EPS:
            return "improvement"
    return "pass"


Improvement = Literal["band", "delta"]


def improved(verdict: Verdict, delta: float | None, direction: str, rule: Improvement, min_delta: float) -> Verdict:
    """The band's verdict with the improvement rule applied: under ``delta``, a pass or a
    band improvement is an improvement exactly when the good-side move from the baseline
    mean exceeds ``min_delta``."""
    if rule == "band" or verdict not in ("pass", "improvement") or delta is None:
        return verdict
    good = delta if direction == "higher" else -delta
    return "improvement" if good > min_delta + EPS else "pass"


def gate_row(
    suite: str, metric: str, current: float | None, bm: BaselineMetric | None, tolerance: float,
    improvement: Improvement = "band", improvement_delta: float = 0.01,
) -> GateRow:
    direction = METRICS[metric].direction if metric in METRICS else (bm.direction if bm else "higher")
    if bm is None:
        return GateRow(
            suite=suite, metric=metric, direction=direction, baseline_mean=None, band_low=None,
            band_high=None, tolerance=tolerance, current=current, delta=None, verdict="not in baseline",
        )
    low, high = bm.band(tolerance)
    delta = None if current is None else round(current - bm.mean, 9) + 0.0  # + 0.0: no -0.0
    return GateRow(
        suite=suite,
        metric=metric,
        direction=direction,
        baseline_mean=bm.mean,
        band_low=low,
        band_high=high,
        tolerance=tolerance,
        current=current,
        delta=delta,
        verdict=improved(compare_to_band(current, low, high, direction), delta, direction, improvement,
                         improvement_delta),
    )


def check(
    results: dict[str, SuiteResult],
    baseline: Baseline,
    gate: dict[str, float],
    per_suite: dict[str, dict[str, float]] | None = None,
    *,
    convs: Iterable[Conversation] | None = None,
    method: Method = "band+paired",
    on_inconclusive: OnInconclusive = "rerun",
    max_reruns: int = 2,
    look: int = 0,
    unstable_spread: float = 0.5,
    where_data: Iterable[str] = (),
    improvement: Improvement = "band",
    improvement_delta: float = 0.01,
    ran: Mapping[str, Iterable[str]] | None = None,
    alpha_looks: int | None = None,
) -> list[GateRow]:
    """One row per gated metric per suite that ran; ``per_suite`` narrows the gate to the
    entries that apply to each suite (``RagdiveConfig.gated_metrics``), ``where_data`` to
    the metrics its baseline has (:func:`where_recorded`); ``improvement`` and
    ``improvement_delta``: the improvement rule (:func:`improved`).

    With ``method = "band+paired"``, the scored conversations ``convs`` (every
    run of this session, reruns included) and a baseline holding
    per-conversation values, each metric but safety also gets the paired test
    and the verdict of :func:`pytest_ragdive.paired.decide`; ``look`` is the
    number of reruns so far, and the alpha of each look is split over the
    looks ``on_inconclusive`` allows. ``ran``: per suite where some conversations did not run
    (a keyless run, :mod:`.fallback`), the ones that did: the baseline of that suite is
    taken over those conversations only (:func:`~pytest_ragdive.gate.fallback.restrict`).
    ``alpha_looks``: the looks the alpha is split over when not ``on_inconclusive``'s (the
    assertion helper decides on one look at the level of the session's first)."""
    from .fallback import restrict

    looks = 1 + (max_reruns if on_inconclusive == "rerun" else 0)
    all_convs = list(convs or [])
    rows = []
    for suite, res in results.items():
        stored = baseline.suites.get(suite, {})
        suite_gate = where_recorded(gate if per_suite is None else per_suite.get(suite, gate), stored, where_data)
        if ran is not None and suite in ran:
            ids = list(ran[suite])
            stored = {m: bm for m in stored if (bm := restrict(stored[m], ids)) is not None}
        mine = []
        for metric, tol in suite_gate.items():
            row = gate_row(suite, metric, res.value(metric), stored.get(metric), tol, improvement, improvement_delta)
            mv = res.metrics.get(metric)
            if mv is not None:
                row.ci_low, row.ci_high = mv.ci_low, mv.ci_high
            row.look, row.looks, row.on_inconclusive = look, looks, on_inconclusive
            mine.append(row)
        if method == "band+paired" and all_convs:
            ours = [c for c in all_convs if c.suite == suite]
            paired_rows(mine, stored, functools.partial(table, ours), alpha_for_look((alpha_looks or looks) - 1), unstable_spread)
        for row in mine:  # an improvement only on a comparable scored set (gate/comparable.py)
            if row.verdict == "improvement" and row.metric in METRICS:
                why = not_comparable(row.metric, METRICS[row.metric].level, res.metrics.get(row.metric), res.runs,
                                     stored.get(row.metric))
                if not why and row.metric in ELIGIBLE_METRICS:
                    why = kept_not_comparable(row.metric, stored.get(row.metric), (c for c in all_convs if c.suite == suite),
                                              row.tolerance, row.direction)
                if why:
                    row.verdict, row.not_comparable = "pass", why
        rows += mine
    return rows


def _part(metric: str) -> str:
    """The part of the target a metric reads: ``retrieval`` (the retrieved contexts alone) or
    ``answers`` (everything else)."""
    spec = METRICS.get(metric)
    return "retrieval" if spec is not None and spec.dimension == "retrieval" else "answers"


def paired_rows(
    rows: list[GateRow],
    stored: dict[str, BaselineMetric],
    current: Callable[[str], Table],
    alpha: float,
    unstable_spread: float,
) -> None:
    """Add the paired test to one suite's band rows (in place), from this
    session's per-conversation values of each metric (``current(metric)``).
    One metric's tables (baseline and current) are made and let go at a time:
    what stays is its pairing (three numbers a conversation) and what power needs."""
    pairings: dict[str, Pairing] = {}
    powers: dict[str, Callable[[int], Power]] = {}
    # the parts of the target that sample: a metric whose value of some conversation differs
    # between the runs of one side shows that its retrieval, or its answers, vary
    sampled: set[str] = set()
    for r in rows:
        bm = stored.get(r.metric)
        if not pairable(r.metric) or bm is None or not bm.conversations or r.verdict not in ("pass", "regression", "improvement"):
            continue
        base = baseline_table(bm)
        cur = current(r.metric)
        if varies(base) or varies(cur):
            sampled.add(_part(r.metric))
        p = pair(base, cur, r.direction)
        r.method, r.new, r.missing = "band+paired", p.new, p.missing
        r.runs = max((len(v) for v in cur.values()), default=1)
        del cur
        if p.n:
            pairings[r.metric] = p
            powers[r.metric] = power_of(base, r.tolerance, alpha)
            r.unstable = unstable(spread(base), unstable_spread)
    # where the target (or its judge) samples, a difference is not known without error: a
    # metric of the answers when the answers vary, any metric when the retrieval does
    for m, p in pairings.items():
        if p.noise_free and abs(p.drop or 0.0) > EPS and ("retrieval" in sampled or _part(m) in sampled):
            p.noise_free = False
    tested = paired_tests(pairings, {r.metric: r.tolerance for r in rows}, alpha)
    noisy = max(1, sum(not t.noise_free for t in tested.values()))
    for r in rows:
        res = tested.get(r.metric)
        if res is None:
            r.unstable = []
            continue
        r.paired, r.band_verdict = res, r.verdict
        more = r.on_inconclusive == "rerun" and r.look + 1 < r.looks
        r.verdict = decide(r.verdict, res.significant, res.within, res.drop, r.tolerance, more)  # type: ignore[arg-type]
        r.power = powers[r.metric](noisy)
        r.worse = worse(pairings[r.metric], limit=WORSE_LISTED)
