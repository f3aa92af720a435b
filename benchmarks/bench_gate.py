"""How often the gate is wrong: false alarms on a healthy noisy chatbot, and
detection of injected drops, for ``gate.method = "band"`` and ``"band+paired"``.

    python benchmarks/bench_gate.py                 # the README table
    python benchmarks/bench_gate.py --trials 40     # quick

What is simulated, and what is real:

- **The chatbot and its scores are simulated** (a documented synthetic
  target, no pytest session): the suites have the shape of the bundled
  example's golden suites (the same conversation ids and turn counts, read
  from golden/), and each run scores every turn afresh:

  - ``correctness``: the turn is answered correctly with probability ``p_t``,
    fixed per turn: 75% of turns are "easy" (0.95), 25% "hard" (0.40), as a
    sampling temperature that now and then breaks an answer.
  - ``faithfulness``: a per-turn level ``f_t`` in [0.4, 0.95] plus Gaussian
    run-to-run noise (sd 0.10), clipped to [0, 1].
  - ``forgetfulness`` (multi-turn conversations): the conversation forgets
    with probability ``q_c``: 0.05 for 90% of them, 0.40 for the rest.

  A drop of ``d`` in correctness scales every ``p_t`` so that the mean falls
  by ``d``; in faithfulness it lowers every ``f_t`` by ``d``; the forgetting
  change raises every ``q_c`` by ``d``.
- **The decision is the plugin's own**: per-conversation tables (turn-level
  metrics: the conversation's mean over its turns, with the count), a
  baseline metric as ``build_baseline`` stores it (mean/min/max of the runs'
  suite values, per-conversation values), the band row of
  ``baseline.gate_row`` and the paired test of ``baseline.paired_rows``
  (what ``baseline.check`` runs on scored conversations), with the example's
  tolerances (0.03; forgetfulness 0.05) and ``gate.inconclusive = "rerun"``
  (2 reruns): an inconclusive suite gets another simulated run, pooled per
  conversation, as the plugin does. Each trial records a fresh baseline, so
  the baseline's own noise counts too.

A PR is "flagged" when any gated metric of the suite fails in the end.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_ragdive.baseline import GateRow, baseline_table, gate_row, paired_rows  # noqa: E402
from pytest_ragdive.metrics.registry import METRICS  # noqa: E402
from pytest_ragdive.paired import ConvValue, Table, alpha_for_look, power  # noqa: E402
from pytest_ragdive.records import BaselineMetric  # noqa: E402

GATE = {"correctness": 0.03, "faithfulness": 0.03, "forgetfulness": 0.05}
MAX_RERUNS = 2
Run = dict[str, Table]  # metric -> one run's table (one value per conversation)


@dataclass(frozen=True)
class Shape:
    """One suite: conversation ids and their turn counts."""

    name: str
    ids: tuple[str, ...]
    turns: np.ndarray  # per conversation


def shape(suite: str) -> Shape:
    g = ROOT / "golden" / suite
    single = [json.loads(line)["question_id"] for line in (g / "single_turn.jsonl").read_text().splitlines() if line.strip()]
    multi = yaml.safe_load((g / "conversations.yaml").read_text())["conversations"]
    return Shape(suite, tuple(single + [c["id"] for c in multi]), np.array([1] * len(single) + [len(c["turns"]) for c in multi]))


@dataclass
class Bot:
    """The synthetic target: per-turn and per-conversation parameters."""

    p: np.ndarray  # correctness probability per turn (all conversations' turns, in order)
    f: np.ndarray  # faithfulness level per turn
    q: np.ndarray  # forgetting probability per conversation (nan: single-turn)

    @classmethod
    def healthy(cls, s: Shape, seed: int = 7) -> Bot:
        rng = np.random.default_rng(seed)
        t = int(s.turns.sum())
        q = np.where(rng.random(len(s.ids)) < 0.9, 0.05, 0.40)
        return cls(np.where(rng.random(t) < 0.75, 0.95, 0.40), rng.uniform(0.4, 0.95, t), np.where(s.turns > 1, q, np.nan))

    def changed(self, metric: str | None, d: float) -> Bot:
        if metric == "correctness":
            return Bot(self.p * (1 - d / self.p.mean()), self.f, self.q)
        if metric == "faithfulness":
            return Bot(self.p, self.f - d, self.q)
        if metric == "forgetfulness":
            return Bot(self.p, self.f, self.q + d)
        return self

    def run(self, s: Shape, rng: np.random.Generator) -> Run:
        conv = np.repeat(np.arange(len(s.ids)), s.turns)
        ok = (rng.random(len(self.p)) < self.p).astype(float)
        faith = np.clip(self.f + rng.normal(0, 0.10, len(self.f)), 0, 1)
        forgot = (rng.random(len(self.q)) < np.nan_to_num(self.q)).astype(float)
        out: Run = {}
        for name, per_turn in (("correctness", ok), ("faithfulness", faith)):
            means = np.bincount(conv, per_turn) / s.turns
            out[name] = {k: [ConvValue(value=float(v), count=int(n))] for k, v, n in zip(s.ids, means, s.turns, strict=True)}
        out["forgetfulness"] = {k: [ConvValue(value=float(v))] for k, v, m in zip(s.ids, forgot, s.turns, strict=True) if m > 1}
        return out


def suite_value(t: Table) -> float:
    """One run's suite value: the mean over all scored turns (as aggregate)."""
    vals = [v for runs in t.values() for v in runs]
    return sum(v.value * v.count for v in vals) / sum(v.count for v in vals)


def record(runs: list[Run], metric: str) -> BaselineMetric:
    per_run = np.array([suite_value(r[metric]) for r in runs])
    ids = sorted(runs[0][metric])
    return BaselineMetric(
        mean=float(per_run.mean()), std=float(per_run.std(ddof=1)), min=float(per_run.min()), max=float(per_run.max()),
        runs=len(runs), direction=METRICS[metric].direction, tolerance=GATE[metric],
        conversations={k: [(r[metric][k][0].value, r[metric][k][0].count) for r in runs] for k in ids},
    )


def decide(stored: dict[str, BaselineMetric], bot: Bot, s: Shape, method: str, rng: np.random.Generator) -> tuple[bool, int]:
    """The final verdict of one PR (flagged?) and the runs it took."""
    runs: list[Run] = []
    looks = 1 + (MAX_RERUNS if method == "band+paired" else 0)
    for look in range(looks):
        runs.append(bot.run(s, rng))
        rows: list[GateRow] = []
        pooled: dict[str, Table] = {}
        for m, tol in GATE.items():
            pooled[m] = {k: [r[m][k][0] for r in runs] for k in runs[0][m]}
            current = float(np.mean([suite_value(r[m]) for r in runs]))  # the mean of the runs' values, as aggregate
            row = gate_row(s.name, m, current, stored[m], tol)
            row.look, row.looks, row.on_inconclusive = look, looks, "rerun"
            rows.append(row)
        if method == "band+paired":
            paired_rows(rows, stored, pooled, alpha_for_look(looks - 1), 0.5)
        if not any(r.wants_rerun for r in rows):
            return any(r.failed for r in rows), look + 1
    raise AssertionError("unreachable: the last look never reruns")


CASES: list[tuple[str, str | None, float]] = [
    ("healthy (false alarm)", None, 0.0),
    *[(f"correctness -{d:.2f}", "correctness", d) for d in (0.02, 0.05, 0.10)],
    *[(f"faithfulness -{d:.2f}", "faithfulness", d) for d in (0.02, 0.05, 0.10)],
    *[(f"forgetfulness +{d:.2f}", "forgetfulness", d) for d in (0.05, 0.10)],
]


def cell(args: tuple[str, int, str, str | None, float, int, int]) -> tuple[str, str, float, float, float, float | None]:
    suite, runs, label, metric, d, trials, seed = args
    s = shape(suite)
    healthy = Bot.healthy(s)
    bot = healthy.changed(metric, d)
    rng = np.random.default_rng(seed)
    band = paired = looks = 0
    mdrs = []
    for _ in range(trials):
        base = [healthy.run(s, rng) for _ in range(runs)]  # a fresh baseline each trial: its own noise counts too
        stored = {m: record(base, m) for m in GATE}
        band += decide(stored, bot, s, "band", rng)[0]
        flagged, n = decide(stored, bot, s, "band+paired", rng)
        paired += flagged
        looks += n
        if metric is not None:  # the plugin's own power figure for the changed metric, as the report prints it
            mdrs.append(power(baseline_table(stored[metric]), GATE[metric], alpha_for_look(MAX_RERUNS), metrics=len(GATE)).mdr or 0.0)
    return suite, label, band / trials, paired / trials, looks / trials, float(np.mean(mdrs)) if mdrs else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--runs", type=int, default=5, help="baseline runs")
    ap.add_argument("--suites", default="core,extended")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    jobs = [
        (suite, a.runs, label, metric, d, a.trials, 1000 * k + 17)
        for suite in a.suites.split(",")
        for k, (label, metric, d) in enumerate(CASES)
    ]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(a.workers) as ex:
        rows = list(ex.map(cell, jobs))
    for suite in a.suites.split(","):
        s = shape(suite)
        print(f"\n{suite}: {len(s.ids)} conversations, {int(s.turns.sum())} turns; baseline {a.runs} runs; {a.trials} PRs per row")
    print()
    print("| suite | change | band: flagged | band+paired: flagged | band+paired: runs per PR | detectable drop (report) |")
    print("|---|---|---|---|---|---|")
    for suite, label, band, paired, looks, mdr in rows:
        print(f"| {suite} | {label} | {band:.1%} | {paired:.1%} | {looks:.2f} | {'-' if mdr is None else f'{mdr:.3f}'} |")
    print(f"\n({time.perf_counter() - t0:.0f} s; tolerances: correctness, faithfulness 0.03; forgetfulness 0.05)")


if __name__ == "__main__":
    main()
