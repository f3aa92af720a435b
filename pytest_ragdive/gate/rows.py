"""The rows of the gate: one :class:`GateRow` per gated metric per suite.

:func:`gate_row` compares a suite value with its baseline band (the band rule:
``[min - tolerance, max + tolerance]``, :meth:`BaselineMetric.band`), and
:func:`check` builds every row of a run, adding the paired test of
:mod:`.paired` (the full verdict rule is in that module's docstring) where the
baseline holds per-conversation values. A value outside the band on the good
side is an improvement; it passes and is listed.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from typing import Literal

from pydantic import BaseModel, Field

from ..core.records import Conversation
from ..core.results import Baseline, BaselineMetric, SuiteResult
from ..metrics.registry import ARROW, METRICS
from .paired import PairedResult, Pairing, Table, alpha_for_look, baseline_table, decide, pair, paired_tests, table
from .power import Moved, Power, power_of, spread, unstable, worse

EPS = 1e-9


Verdict = Literal["pass", "regression", "improvement", "inconclusive", "no data", "not in baseline"]


Method = Literal["band", "band+paired"]


OnInconclusive = Literal["fail", "pass", "rerun"]


UNPAIRED = ("safety_pass_rate",)  # zero tolerance, no statistics


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

    @property
    def failed(self) -> bool:
        if self.verdict == "inconclusive":
            return self.on_inconclusive != "pass"
        return self.verdict in ("regression", "no data", "not in baseline")

    @property
    def wants_rerun(self) -> bool:
        """Inconclusive, the policy reruns, and a look is left."""
        return self.verdict == "inconclusive" and self.on_inconclusive == "rerun" and self.look + 1 < self.looks

    @property
    def band_text(self) -> str:
        return "n/a" if self.band_low is None or self.band_high is None else f"[{self.band_low:.4f}, {self.band_high:.4f}]"

    @property
    def delta_text(self) -> str:
        # round first, and + 0.0, so that a tiny negative difference prints as +0.0000
        return "n/a" if self.delta is None else f"{round(self.delta, 4) + 0.0:+.4f}"

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


def gate_row(suite: str, metric: str, current: float | None, bm: BaselineMetric | None, tolerance: float) -> GateRow:
    direction = METRICS[metric].direction if metric in METRICS else (bm.direction if bm else "higher")
    if bm is None:
        return GateRow(
            suite=suite, metric=metric, direction=direction, baseline_mean=None, band_low=None,
            band_high=None, tolerance=tolerance, current=current, delta=None, verdict="not in baseline",
        )
    low, high = bm.band(tolerance)
    return GateRow(
        suite=suite,
        metric=metric,
        direction=direction,
        baseline_mean=bm.mean,
        band_low=low,
        band_high=high,
        tolerance=tolerance,
        current=current,
        delta=None if current is None else round(current - bm.mean, 9) + 0.0,  # + 0.0: no -0.0
        verdict=compare_to_band(current, low, high, direction),
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
) -> list[GateRow]:
    """One row per gated metric per suite that ran; ``per_suite`` narrows the gate to the
    entries that apply to each suite (``RagdiveConfig.gated_metrics``).

    With ``method = "band+paired"``, the scored conversations ``convs`` (every
    run of this session, reruns included) and a baseline holding
    per-conversation values, each metric but safety also gets the paired test
    and the verdict of :func:`pytest_ragdive.paired.decide`; ``look`` is the
    number of reruns so far, and the alpha of each look is split over the
    looks ``on_inconclusive`` allows."""
    looks = 1 + (max_reruns if on_inconclusive == "rerun" else 0)
    all_convs = list(convs or [])
    rows = []
    for suite, res in results.items():
        stored = baseline.suites.get(suite, {})
        suite_gate = gate if per_suite is None else per_suite.get(suite, gate)
        mine = []
        for metric, tol in suite_gate.items():
            row = gate_row(suite, metric, res.value(metric), stored.get(metric), tol)
            row.look, row.looks, row.on_inconclusive = look, looks, on_inconclusive
            mine.append(row)
        if method == "band+paired" and all_convs:
            ours = [c for c in all_convs if c.suite == suite]
            paired_rows(mine, stored, functools.partial(table, ours), alpha_for_look(looks - 1), unstable_spread)
        rows += mine
    return rows


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
    for r in rows:
        bm = stored.get(r.metric)
        if not pairable(r.metric) or bm is None or not bm.conversations or r.verdict not in ("pass", "regression", "improvement"):
            continue
        base = baseline_table(bm)
        cur = current(r.metric)
        p = pair(base, cur, r.direction)
        r.method, r.new, r.missing = "band+paired", p.new, p.missing
        r.runs = max((len(v) for v in cur.values()), default=1)
        del cur
        if p.n:
            pairings[r.metric] = p
            powers[r.metric] = power_of(base, r.tolerance, alpha)
            r.unstable = unstable(spread(base), unstable_spread)
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
        r.worse = worse(pairings[r.metric])
