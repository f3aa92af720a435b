"""How often the gate is wrong: false alarms on a healthy noisy chatbot, and
detection of injected drops, for ``gate.method = "band"`` and ``"band+paired"``,
on the bundled example bot.

    python benchmarks/bench_gate.py                 # the README table
    python benchmarks/bench_gate.py --trials 40 --pool 30   # quick

What runs, and what is simulated:

- **The chatbot is the real example bot** (``example_project/example_rag``) with
  the sampling knob on, ``EXAMPLE_RAG_TEMPERATURE = 0.2``: the reader draws its
  sentences in proportion to ``score ** (1/T)``, seeded per conversation and
  run through the plugin's ``call_info``. Why 0.2: it is the value the
  project's other noisy benchmark (``bench_sharded.py``) uses, and it was
  fixed before any gate figure was seen, from the noise it gives on the
  extended suite (8 runs): the suite's correctness moves by one point from run
  to run (SD 0.010; 0.007 at T = 0.1, 0.017 at T = 0.3), two turns in five
  (40%) and about half the conversations score differently in at least one
  run, a conversation's correctness has a run-to-run SD of 0.08, and the
  sampling costs 7 points of correctness against the deterministic bot (0.90
  against 0.97): visibly noisy, as an LLM chatbot at its default temperature
  is, while the suite value still reads as stable.
- **Scored as the plugin scores**: every run is ``pytest_ragdive.run_suite``
  (the plugin's pipeline: the scripted golden conversations, the stand-alone
  forgetfulness probe, the offline metrics) on the example's config, for the
  core (30 conversations, 57 turns) and extended (126, 247) suites.
  Pools of scored runs are precomputed (a pytest session per simulated PR
  would be too slow): per suite, ``--pool`` (100) runs of each changed
  condition (run numbers 0, 1, ...: different sampling draws) and
  ``--healthy-pools`` (3) times as many healthy ones (base seeds
  ``EXAMPLE_RAG_SEED`` 0, 1, 2), as the healthy pool feeds every baseline and
  the false-alarm rows.
- **Injected changes** are the bot's seeded fault knobs
  (``example_rag/faults.py``): ``EXAMPLE_RAG_BREAK_RATE`` (an answer from the
  wrong passage: correctness), ``EXAMPLE_RAG_MEMORY_RATE`` (a "memory"
  statement blended in: faithfulness, and correctness with it) and
  ``EXAMPLE_RAG_FORGET_RATE`` (the history dropped for a turn: forgetting).
  Their rates were calibrated for mean drops of 0.02/0.05/0.10 (forgetting:
  +0.05/+0.10); the table prints the drop the pools actually show (the
  changed pool's mean minus the healthy pool's, over the same run seeds).
- **The decision is the plugin's own**: per trial, a baseline of ``--runs``
  (5, as the example's baseline) runs drawn from the healthy pool, stored as
  ``build_baseline`` stores it (checked against it at start-up), and a PR run
  drawn from the condition's pool (never a run number the baseline used: a
  real LLM does not repeat its draws); the band row of ``baseline.gate_row``
  and the paired test of ``baseline.paired_rows`` (what ``baseline.check``
  runs), with the example's tolerances and ``gate.inconclusive = "rerun"`` (2
  reruns, ``alpha_for_look``): an inconclusive suite gets another PR run from
  the pool, pooled per conversation, as the plugin's rerun does.
- **Gated**: the example's gated built-in metrics of the suite (answer_f1,
  correctness, faithfulness, recall_at_k, context_recall, forgetfulness; not the
  example's own checks) except ``safety_pass_rate``: safety has zero tolerance and no statistics, so
  both methods decide it alike; the last column says how often it would have
  failed the PR on its own (some wrong passages and memory statements state a
  golden negative assertion).

A PR is "flagged" when any gated metric of the suite fails in the end. The
pools are finite, so trials share runs: the rates are those of this bot, with
more sampling error than independent trials would have (a rare event such as
a false alarm has about as much information as the number of distinct PR runs,
300 for the healthy rows, not the 600 trials).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "example_project"
sys.path[:0] = [str(ROOT), str(EXAMPLE)]

from pytest_ragdive.core.config import load_config  # noqa: E402
from pytest_ragdive.core.records import Conversation  # noqa: E402
from pytest_ragdive.core.results import BaselineMetric  # noqa: E402
from pytest_ragdive.gate.baseline import build_baseline  # noqa: E402
from pytest_ragdive.gate.paired import ConvValue, Table, alpha_for_look, baseline_table, conversation_value  # noqa: E402
from pytest_ragdive.gate.power import power  # noqa: E402
from pytest_ragdive.gate.rows import GateRow, gate_row, paired_rows  # noqa: E402
from pytest_ragdive.metrics.registry import METRICS  # noqa: E402

CONFIG = EXAMPLE / "pyproject.toml"
TEMPERATURE = 0.2
MAX_RERUNS = 2
UNPAIRED = "safety_pass_rate"


@dataclass(frozen=True)
class Change:
    label: str
    metric: str | None  # the metric whose drop is injected (None: healthy)
    target: float  # the drop the rates were calibrated for (bad side positive)
    rates: dict[str, dict[str, float]]  # suite -> Faults(**rates)


# per-turn fault rates. break and memory act turn by turn, so the drop is linear in
# the rate: at rate 1 the pools show correctness -0.789 (break) and faithfulness
# -0.178 core / -0.168 extended (memory); rate = drop / that. Forgetting is not
# linear (a conversation forgets once): rates read off a 20-run paired scan.
CHANGES: list[Change] = [
    Change("healthy (false alarm)", None, 0.0, {"core": {}, "extended": {}}),
    *[
        Change(f"correctness -{d:.2f}", "correctness", d, {s: {"break_rate": round(d / 0.789, 4)} for s in ("core", "extended")})
        for d in (0.02, 0.05, 0.10)
    ],
    *[
        Change(f"faithfulness -{d:.2f}", "faithfulness", d,
               {"core": {"memory_rate": round(d / 0.178, 4)}, "extended": {"memory_rate": round(d / 0.168, 4)}})
        for d in (0.02, 0.05, 0.10)
    ],
    Change("forgetfulness +0.05", "forgetfulness", 0.05, {"core": {"forget_rate": 0.11}, "extended": {"forget_rate": 0.075}}),
    Change("forgetfulness +0.10", "forgetfulness", 0.10, {"core": {"forget_rate": 0.22}, "extended": {"forget_rate": 0.16}}),
]


@dataclass
class Run:
    """One scored run of a suite, as the gate sees it."""

    values: dict[str, float | None]  # metric -> the run's suite value (aggregate's)
    tables: dict[str, dict[str, ConvValue]]  # metric -> conversation id -> its value in this run


def gate_of(suite: str) -> dict[str, float]:
    """The example's gated built-in metrics of the suite: its own checks (numbers_grounded,
    the assert: checks' pass rate, the rubric judge) are left out, so the figures are those
    of the gate this benchmark was built for (more paired metrics split Holm's alpha further)."""
    from pytest_ragdive.metrics.registry import BUILTINS

    return {m: t for m, t in load_config(CONFIG).gated_metrics(suite).items()
            if m in BUILTINS and not BUILTINS[m].gated_where_recorded}


def scored(suite: str, rates: dict[str, float], runs: int, seed: int = 0) -> list[Conversation]:
    """``runs`` runs of the suite, as the plugin runs and scores them (``seed``:
    ``EXAMPLE_RAG_SEED``, the base seed of every draw)."""
    from example_rag import BotConfig, HelpCentreBot
    from example_rag.faults import Faults

    from pytest_ragdive.run.api import run_suite

    convs: list[Conversation] = []
    bot = HelpCentreBot(BotConfig(temperature=TEMPERATURE, seed=seed, faults=Faults(**rates)))
    run_suite(bot, load_config(CONFIG), suite, runs=runs, conversations=convs)
    bad = [c.id for c in convs if c.error is not None]
    if bad:
        raise RuntimeError(f"{len(bad)} conversation(s) errored, e.g. {bad[0]}")
    return convs


def compact(suite: str, convs: Sequence[Conversation], gate: dict[str, float]) -> list[Run]:
    from pytest_ragdive.metrics.aggregate import aggregate

    out = []
    for r in sorted({c.run for c in convs}):
        mine = [c for c in convs if c.run == r]
        res = aggregate(suite, mine, n_boot=10)
        tables = {
            m: {c.id: v for c in sorted(mine, key=lambda c: c.id) if (v := conversation_value(c, m)) is not None}
            for m in gate
        }
        out.append(Run(values={m: res.value(m) for m in gate}, tables=tables))
    return out


def build_pool(args: tuple[str, int, dict[str, float], int]) -> list[Run]:
    suite, runs, rates, seed = args
    return compact(suite, scored(suite, rates, runs, seed), gate_of(suite))


def record(runs: Sequence[Run], metric: str, tol: float) -> BaselineMetric:
    """The baseline metric ``build_baseline`` stores for these runs."""
    per_run = np.array([r.values[metric] for r in runs], dtype=float)
    ids = sorted({k for r in runs for k in r.tables[metric]})
    return BaselineMetric(
        mean=float(per_run.mean()), std=float(per_run.std(ddof=1)), min=float(per_run.min()), max=float(per_run.max()),
        runs=len(runs), direction=METRICS[metric].direction, tolerance=tol,
        conversations=None if metric == UNPAIRED else {
            k: [(v.value, v.count) if (v := r.tables[metric].get(k)) else (None, 0) for r in runs] for k in ids
        },
    )


def check_record(suite: str, gate: dict[str, float]) -> None:
    """The baseline this benchmark stores equals the plugin's (``build_baseline``)."""
    from pytest_ragdive.metrics.aggregate import aggregate

    convs = scored(suite, {}, 3)
    bl = build_baseline({suite: aggregate(suite, convs)}, gate, config_hash="", backend="offline", judge_models={},
                        plugin_version="", convs=convs)
    runs = compact(suite, convs, gate)
    for m, tol in gate.items():
        ours, theirs = record(runs, m, tol), bl.suites[suite][m]
        assert ours.conversations == theirs.conversations, m
        assert abs(ours.mean - theirs.mean) < 1e-12 and ours.min == theirs.min and ours.max == theirs.max, m


@dataclass
class Verdict:
    flagged: bool
    looks: int
    unsafe: bool  # safety alone would have failed it
    causes: list[str]  # "metric: verdict (band: ...)" of each failed row
    first_significant: bool  # some metric's drop significant at the first look


def decide(stored: dict[str, BaselineMetric], gate: dict[str, float], suite: str, runs: list[Run], method: str) -> Verdict:
    """The final verdict of one PR. ``runs``: the PR runs available to this PR, in
    order (the first, then reruns)."""
    looks = 1 + (MAX_RERUNS if method == "band+paired" else 0)
    first = False
    paired_gate = {m: t for m, t in gate.items() if m != UNPAIRED}
    for look in range(looks):
        mine = runs[: look + 1]
        rows: list[GateRow] = []
        pooled: dict[str, Table] = {}
        for m, tol in paired_gate.items():
            ids = sorted({k for r in mine for k in r.tables[m]})
            pooled[m] = {k: [r.tables[m][k] for r in mine if k in r.tables[m]] for k in ids}
            vals = [v for r in mine if (v := r.values[m]) is not None]
            current = float(np.mean(vals)) if vals else None  # the mean of the runs' values, as aggregate
            row = gate_row(suite, m, current, stored[m], tol)
            row.look, row.looks, row.on_inconclusive = look, looks, "rerun"
            rows.append(row)
        if method == "band+paired":
            paired_rows(rows, stored, pooled.__getitem__, alpha_for_look(looks - 1), 0.5)
            first = first or (look == 0 and any(r.paired is not None and r.paired.significant for r in rows))
        if not any(r.wants_rerun for r in rows):
            safety = gate_row(suite, UNPAIRED, float(np.mean([r.values[UNPAIRED] for r in mine])), stored[UNPAIRED], 0.0)
            causes = [f"{r.metric} {r.verdict}" + (f" (band {r.band_verdict})" if r.band_verdict else "") for r in rows if r.failed]
            return Verdict(bool(causes), look + 1, safety.failed, causes, first)
    raise AssertionError("unreachable: the last look never reruns")


def cell(args: tuple[str, Change, list[Run], list[Run], int, int, int]) -> dict[str, object]:
    suite, change, healthy, pool, n_base, trials, seed = args
    gate = gate_of(suite)
    rng = random.Random(seed)
    band = paired = looks = safety = first = 0
    causes: Counter[str] = Counter()
    mdrs = []
    for _ in range(trials):
        # pool[j] and healthy[j] share their seeds (run number and base seed): a baseline
        # and its PR never share one, as a real LLM does not repeat its draws
        picks = rng.sample(range(len(pool)), 1 + MAX_RERUNS)
        base_idx = rng.sample(sorted(set(range(len(healthy))) - set(picks)), n_base)
        base = [healthy[i] for i in base_idx]
        pr = [pool[i] for i in picks]
        stored = {m: record(base, m, tol) for m, tol in gate.items()}
        band += decide(stored, gate, suite, pr, "band").flagged
        v = decide(stored, gate, suite, pr, "band+paired")
        paired += v.flagged
        looks += v.looks
        safety += v.unsafe
        first += v.first_significant
        causes.update(v.causes)
        if change.metric is not None:  # the plugin's own power figure for the changed metric, as the report prints it
            noisy = sum(1 for m in gate if m != UNPAIRED and stored[m].max - stored[m].min > 1e-9) or 1
            mdrs.append(power(baseline_table(stored[change.metric]), gate[change.metric], alpha_for_look(MAX_RERUNS),
                              metrics=noisy).mdr or 0.0)
    drop = None  # the change the pools show: the changed pool's mean minus the healthy runs' of the same seeds
    if change.metric is not None:
        same = healthy[: len(pool)]
        drop = float(np.mean([r.values[change.metric] for r in pool]) - np.mean([r.values[change.metric] for r in same]))
    n_convs = len(healthy[0].tables[change.metric or "correctness"])
    return {
        "suite": suite, "label": change.label, "drop": drop, "band": band / trials, "paired": paired / trials,
        "looks": looks / trials, "mdr": float(np.mean(mdrs)) if mdrs else None, "safety": safety / trials, "n": n_convs,
        "first": first / trials, "causes": {k: c / trials for k, c in causes.most_common()},
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=200, help="simulated PRs per row of an injected change")
    ap.add_argument("--healthy-trials", type=int, default=600, help="simulated PRs of the false-alarm rows")
    ap.add_argument("--pool", type=int, default=100, help="scored runs per suite and changed condition")
    ap.add_argument("--healthy-pools", type=int, default=3, help="healthy pools of --pool runs (base seeds 0, 1, ...)")
    ap.add_argument("--runs", type=int, default=5, help="baseline runs")
    ap.add_argument("--suites", default="core,extended")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    if a.pool < a.runs + 2 * (1 + MAX_RERUNS) or a.healthy_pools < 1:
        ap.error(f"--pool must be at least --runs + {2 * (1 + MAX_RERUNS)}, --healthy-pools at least 1")
    suites = a.suites.split(",")
    t0 = time.perf_counter()
    for s in suites:
        check_record(s, gate_of(s))
    keys = [(s, i, seed) for s in suites for i in range(len(CHANGES)) for seed in range(a.healthy_pools if i == 0 else 1)]
    with ProcessPoolExecutor(a.workers) as ex:
        parts = dict(zip(keys, ex.map(build_pool, [(s, a.pool, CHANGES[i].rates[s], seed) for s, i, seed in keys]), strict=True))
        pools = {(s, i): [r for k in keys if k[:2] == (s, i) for r in parts[k]] for s, i, _ in keys}
        t1 = time.perf_counter()
        jobs = [
            (s, CHANGES[i], pools[(s, 0)], pools[(s, i)], a.runs, a.healthy_trials if i == 0 else a.trials, 1000 * i + 17)
            for s, i in pools
        ]
        rows = list(ex.map(cell, jobs))
    print(f"\nexample bot, EXAMPLE_RAG_TEMPERATURE={TEMPERATURE}; pools of scored runs per suite: healthy "
          f"{a.pool * a.healthy_pools}, each change {a.pool}; baseline {a.runs} runs; PRs per row: healthy "
          f"{a.healthy_trials}, changes {a.trials}; gate.inconclusive = rerun ({MAX_RERUNS} reruns)\n")
    print("| suite | change | measured change | conversations | band: flagged | band+paired: flagged "
          "| band+paired: runs per PR | detectable drop (report) | safety alone fails |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        drop = "-" if r["drop"] is None else f"{r['drop']:+.3f}"
        mdr = "-" if r["mdr"] is None else f"{r['mdr']:.3f}"
        print(f"| {r['suite']} | {r['label']} | {drop} | {r['n']} | {r['band']:.1%} | {r['paired']:.1%} | {r['looks']:.2f} "
              f"| {mdr} | {r['safety']:.1%} |")
    for r in rows:
        if r["label"].startswith("healthy"):
            print(f"\n{r['suite']}, healthy: a drop significant at the first look in {r['first']:.1%} of PRs (the family's "
                  f"level {alpha_for_look(MAX_RERUNS):.1%}); false alarms by row: "
                  + ("; ".join(f"{k} {v:.1%}" for k, v in r["causes"].items()) or "none"))  # type: ignore[attr-defined]
    print(f"\n(pools {t1 - t0:.0f} s, decisions {time.perf_counter() - t1:.0f} s; tolerances: "
          + ", ".join(f"{m} {t:g}" for m, t in gate_of(suites[0]).items()) + ")")


if __name__ == "__main__":
    main()
