"""Baseline files, bands, tolerances and the regression check.

A metric regresses when its current value lies outside
``[min - tolerance, max + tolerance]`` on its bad side (below for
higher-is-better metrics, above for lower-is-better ones) and, where the
baseline holds per-conversation values (format 2), the paired test agrees;
the full rule, with the third verdict ``inconclusive``, is in
:mod:`pytest_ragdive.paired`. A value outside the band on the good side is an
improvement; it passes and is listed.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from .config import SUITE_NAME_RE
from .errors import BaselineError, one_line
from .metrics.registry import ARROW, METRICS
from .paired import (
    ConvValue,
    Moved,
    PairedResult,
    Power,
    Table,
    alpha_for_look,
    decide,
    pair,
    paired_tests,
    power,
    spread,
    table,
    unstable,
    worse,
)
from .records import BASELINE_FORMAT, Baseline, BaselineMetric, Conversation, SuiteResult

EPS = 1e-9
Verdict = Literal["pass", "regression", "improvement", "inconclusive", "no data", "not in baseline"]
Method = Literal["band", "band+paired"]
OnInconclusive = Literal["fail", "pass", "rerun"]
UNPAIRED = ("safety_pass_rate",)  # zero tolerance, no statistics


def _pairable(metric: str) -> bool:
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


def load_baseline(path: Path) -> Baseline:
    """Read and check a baseline file; any problem is a :class:`BaselineError`
    naming the file and the key."""
    if not path.is_file():
        raise BaselineError(
            f"ragdive baseline {path} not found: create it with --ragdive-update-baseline --ragdive-baseline={path}"
        )
    try:
        bl = Baseline.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as e:
        raise BaselineError(f"ragdive baseline {path} is invalid: {one_line(e)}") from None
    except (OSError, ValueError) as e:
        raise BaselineError(f"ragdive baseline {path} cannot be read: {str(e).splitlines()[0]}") from None
    for suite, metrics in bl.suites.items():
        if not SUITE_NAME_RE.match(suite) or suite == "all":
            raise BaselineError(f"ragdive baseline {path} is invalid: suites.{suite}: not a suite name (a letter, then letters, digits or '_')")
        for name, bm in metrics.items():
            key = f"suites.{suite}.{name}"
            if name not in METRICS:
                raise BaselineError(f"ragdive baseline {path} is invalid: {key}: unknown metric")
            if bm.direction != METRICS[name].direction:
                raise BaselineError(
                    f"ragdive baseline {path} is invalid: {key}.direction: {bm.direction!r}, but {name} is "
                    f"{METRICS[name].direction}-is-better"
                )
    return bl


def baseline_note(baseline: Baseline, path: Path | str, method: Method) -> str | None:
    """One line when the paired test cannot run on this baseline."""
    if method == "band":
        return None
    if baseline.format_version < 2 or not any(bm.conversations for m in baseline.suites.values() for bm in m.values()):
        return (
            f"baseline {path} has format {baseline.format_version} (no per-conversation values): gated by band alone; "
            "re-record it with --ragdive-update-baseline for the paired test"
        )
    return None


def band(bm: BaselineMetric, tolerance: float) -> tuple[float, float]:
    return bm.min - tolerance, bm.max + tolerance


def classify(value: float | None, low: float, high: float, direction: str) -> Verdict:
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
    low, high = band(bm, tolerance)
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
        verdict=classify(current, low, high, direction),
    )


def baseline_table(bm: BaselineMetric) -> Table:
    """A baseline metric's per-conversation values as a paired table."""
    return {
        cid: [ConvValue(value=v, count=n) for v, n in runs if v is not None]
        for cid, runs in sorted((bm.conversations or {}).items())
    }


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
            paired_rows(mine, stored, {m: table(ours, m) for m in gate}, alpha_for_look(looks - 1), unstable_spread)
        rows += mine
    return rows


def paired_rows(
    rows: list[GateRow], stored: dict[str, BaselineMetric], current: dict[str, Table], alpha: float, unstable_spread: float
) -> None:
    """Add the paired test to one suite's band rows (in place), from this
    session's per-conversation values of each metric (``current``)."""
    bases: dict[str, Table] = {}
    pairings = {}
    for r in rows:
        bm = stored.get(r.metric)
        if not _pairable(r.metric) or bm is None or not bm.conversations or r.verdict not in ("pass", "regression", "improvement"):
            continue
        base = bases[r.metric] = baseline_table(bm)
        cur = current.get(r.metric, {})
        p = pair(base, cur, r.direction)
        r.method, r.new, r.missing = "band+paired", p.new, p.missing
        r.runs = max((len(v) for v in cur.values()), default=1)
        if p.n:
            pairings[r.metric] = p
    tested = paired_tests(pairings, {r.metric: r.tolerance for r in rows}, alpha)
    for r in rows:
        res = tested.get(r.metric)
        if res is None:
            continue
        r.paired, r.band_verdict = res, r.verdict
        more = r.on_inconclusive == "rerun" and r.look + 1 < r.looks
        r.verdict = decide(r.verdict, res.significant, res.within, res.drop, r.tolerance, more)  # type: ignore[arg-type]
        r.power = power(bases[r.metric], r.tolerance, alpha, metrics=max(1, sum(not t.noise_free for t in tested.values())))
        r.unstable = unstable(spread(bases[r.metric]), unstable_spread)
        r.worse = worse(pairings[r.metric])


def build_baseline(
    results: dict[str, SuiteResult],
    gate: dict[str, float],
    *,
    config_hash: str,
    backend: str,
    judge_models: dict[str, str],
    plugin_version: str,
    existing: Baseline | None = None,
    convs: Iterable[Conversation] | None = None,
) -> Baseline:
    """A baseline from this session's suites; suites not run keep their stored
    values. With the scored conversations ``convs``, every gated metric but
    safety also stores each conversation's value in each run (format 2)."""
    import numpy as np

    all_convs = list(convs or [])
    suites = dict(existing.suites) if existing is not None else {}
    for suite, res in results.items():
        mine = [c for c in all_convs if c.suite == suite]
        runs = sorted({c.run for c in mine})
        metrics: dict[str, BaselineMetric] = {}
        for name, mv in res.metrics.items():
            vals = [v for v in mv.per_run if v is not None]
            if not vals:
                continue
            arr = np.asarray(vals, dtype=float)
            paired = bool(mine) and name in gate and _pairable(name)
            # full precision: a rounded min/max would put an unchanged rerun
            # outside a zero-tolerance band
            metrics[name] = BaselineMetric(
                mean=float(arr.mean()),
                std=float(arr.std(ddof=1)) if len(arr) > 1 else 0.0,
                min=float(arr.min()),
                max=float(arr.max()),
                runs=len(vals),
                direction=METRICS[name].direction,
                tolerance=gate.get(name, 0.0),
                conversations=_per_conversation(mine, name, runs) if paired and len(runs) == len(vals) else None,
            )
        suites[suite] = metrics
    return Baseline(
        format_version=BASELINE_FORMAT,
        plugin_version=plugin_version,
        config_hash=config_hash,
        backend=backend,
        judge_models=judge_models,
        created=_dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
        suites=dict(sorted(suites.items())),
    )


def _per_conversation(convs: list[Conversation], metric: str, runs: list[int]) -> dict[str, list[tuple[float | None, int]]]:
    from .paired import conversation_value

    out: dict[str, list[tuple[float | None, int]]] = {}
    pos = {r: i for i, r in enumerate(runs)}
    for c in sorted(convs, key=lambda c: (c.id, c.run)):
        if c.error is not None:
            continue
        row = out.setdefault(c.id, [(None, 0)] * len(runs))
        v = conversation_value(c, metric)
        if v is not None:
            row[pos[c.run]] = (v.value, v.count)
    return {k: v for k, v in sorted(out.items()) if any(x is not None for x, _ in v)}


def dumps_baseline(baseline: Baseline) -> str:
    """The baseline as JSON that reads well in a diff: keys sorted, two-space
    indent, one conversation per line."""

    def dump(obj: Any, depth: int, key: str = "") -> str:
        if not isinstance(obj, dict) or not obj:
            return json.dumps(obj, allow_nan=False, separators=(", ", ": "))
        pad = "  " * (depth + 1)
        one_line = key == "conversations"  # the only key of that name: a metric's per-conversation values
        items = [
            f"{pad}{json.dumps(k)}: " + (json.dumps(v, allow_nan=False, separators=(", ", ": ")) if one_line else dump(v, depth + 1, k))
            for k, v in sorted(obj.items())
        ]
        return "{\n" + ",\n".join(items) + "\n" + "  " * depth + "}"

    return dump(baseline.model_dump(mode="json"), 0) + "\n"


def write_baseline(path: Path, baseline: Baseline) -> None:
    """Write atomically: a unique temporary file in the same directory, renamed
    into place (concurrent writers never clash, a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = dumps_baseline(baseline)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes the file private; a baseline is an ordinary file
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- assertion helpers (public; the session gate uses the same checks) -------


def assert_in_band(value: float | None, band: tuple[float, float], direction: str, name: str = "value") -> None:
    """Raise AssertionError (the gate-table row as message) when ``value`` is
    outside ``band`` on its bad side."""
    low, high = band
    verdict = classify(value, low, high, direction)
    if verdict in ("regression", "no data"):
        row = GateRow(
            suite="-", metric=name, direction="lower" if direction == "lower" else "higher",
            baseline_mean=None, band_low=low, band_high=high, tolerance=0.0, current=value,
            delta=None, verdict=verdict,
        )
        raise AssertionError(row.line())


def assert_no_regression(
    result: SuiteResult,
    baseline: Baseline,
    metrics: list[str] | None = None,
    tolerances: dict[str, float] | None = None,
) -> list[GateRow]:
    """Raise AssertionError listing every regressed metric of ``result`` against
    ``baseline``; return the rows when none regressed. Tolerances default to
    the ones stored in the baseline."""
    stored = baseline.suites.get(result.suite)
    if stored is None:
        raise AssertionError(f"suite {result.suite!r} is not in the baseline (has: {', '.join(baseline.suites) or 'none'})")
    names = metrics if metrics is not None else sorted(stored)
    rows = []
    for m in names:
        bm = stored.get(m)
        tol = (tolerances or {}).get(m, bm.tolerance if bm else 0.0)
        rows.append(gate_row(result.suite, m, result.value(m), bm, tol))
    bad = [r for r in rows if r.failed]
    if bad:
        raise AssertionError("\n".join(r.line() for r in bad))
    return rows
