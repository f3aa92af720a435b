"""How often the gate is wrong: false alarms on a healthy noisy chatbot, and
detection of injected drops, for ``gate.method = "band"`` and ``"band+paired"``.

    python benchmarks/bench_gate.py                 # the README table (~10 min on 2 cores)
    python benchmarks/bench_gate.py --trials 60     # quick

What is simulated, and what is real:

- **The chatbot and its scores are simulated** (a documented synthetic
  target): the suites have the shape of the bundled example's golden suites
  (the same conversation ids and turn counts, read from golden/), and each
  turn of each run is scored afresh:

  - ``correctness``: the turn is answered correctly with probability ``p_t``;
    ``p_t`` is fixed per turn: 75% of turns are "easy" (0.95) and 25% "hard"
    (0.40), as a sampling temperature that now and then breaks an answer.
  - ``faithfulness``: a per-turn level ``f_t`` in [0.4, 0.95] plus Gaussian
    run-to-run noise (sd 0.10), clipped to [0, 1].
  - ``forgetfulness`` (multi-turn conversations): the conversation forgets
    with probability ``q_c``: 0.05 for 90% of them, 0.40 for the rest.

  A drop of ``d`` in correctness scales every ``p_t`` so the mean falls by
  ``d``; in faithfulness it lowers every ``f_t`` by ``d``; the forgetting
  change raises every ``q_c`` by ``d``.
- **The gate is the plugin's own**: the baseline is built with
  ``build_baseline`` from ``--runs`` simulated runs, and each simulated PR
  run is decided by ``baseline.check`` on the scored ``Conversation``
  records, with the example's tolerances (0.03; forgetfulness 0.05). With
  ``band+paired`` and ``gate.inconclusive = "rerun"`` (the default, 2 reruns)
  an inconclusive suite is run again and decided on all runs pooled, as the
  plugin does; the table counts the final verdict and the mean runs per PR.

A row is "flagged" when any gated metric of the suite fails in the end.
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

from pytest_ragdive.aggregate import aggregate  # noqa: E402
from pytest_ragdive.baseline import build_baseline, check  # noqa: E402
from pytest_ragdive.records import Baseline, Conversation, Turn  # noqa: E402

GATE = {"correctness": 0.03, "faithfulness": 0.03, "forgetfulness": 0.05}
MAX_RERUNS = 2


@dataclass(frozen=True)
class Shape:
    """One suite: conversation ids and their turn counts."""

    name: str
    convs: tuple[tuple[str, int], ...]


def shape(suite: str) -> Shape:
    g = ROOT / "golden" / suite
    single = [json.loads(line)["question_id"] for line in (g / "single_turn.jsonl").read_text().splitlines() if line.strip()]
    multi = yaml.safe_load((g / "conversations.yaml").read_text())["conversations"]
    return Shape(suite, tuple([(q, 1) for q in single] + [(c["id"], len(c["turns"])) for c in multi]))


@dataclass
class Bot:
    """The synthetic target's per-turn and per-conversation parameters."""

    p: list[np.ndarray]  # per conversation: correctness probability of each turn
    f: list[np.ndarray]  # per conversation: faithfulness level of each turn
    q: np.ndarray  # per conversation: forgetting probability (nan for single-turn)

    @classmethod
    def healthy(cls, s: Shape, seed: int = 7) -> Bot:
        rng = np.random.default_rng(seed)
        p = [np.where(rng.random(n) < 0.75, 0.95, 0.40) for _, n in s.convs]
        f = [rng.uniform(0.4, 0.95, n) for _, n in s.convs]
        q = np.array([(0.05 if rng.random() < 0.9 else 0.40) if n > 1 else np.nan for _, n in s.convs])
        return cls(p, f, q)

    def changed(self, metric: str | None, d: float) -> Bot:
        if metric == "correctness":
            mean = float(np.mean(np.concatenate(self.p)))
            return Bot([x * (1 - d / mean) for x in self.p], self.f, self.q)
        if metric == "faithfulness":
            return Bot(self.p, [x - d for x in self.f], self.q)
        if metric == "forgetfulness":
            return Bot(self.p, self.f, self.q + d)
        return self

    def run(self, s: Shape, run: int, rng: np.random.Generator) -> list[Conversation]:
        out = []
        for i, (cid, n) in enumerate(s.convs):
            ok = rng.random(n) < self.p[i]
            faith = np.clip(self.f[i] + rng.normal(0, 0.10, n), 0, 1)
            turns = [
                Turn(index=t, rag_input=f"{cid} turn {t + 1}", scores={"correctness": float(ok[t]), "faithfulness": float(faith[t])})
                for t in range(n)
            ]
            scores = {} if np.isnan(self.q[i]) else {"forgetfulness": float(rng.random() < self.q[i])}
            out.append(Conversation(id=cid, suite=s.name, run=run, turns=turns, scores=scores))
        return out


def record(bot: Bot, s: Shape, runs: int, rng: np.random.Generator) -> Baseline:
    convs = [c for r in range(runs) for c in bot.run(s, r, rng)]
    res = {s.name: aggregate(s.name, convs, n_boot=10)}
    return build_baseline(res, GATE, config_hash="", backend="offline", judge_models={}, plugin_version="", convs=convs)


def decide(bl: Baseline, bot: Bot, s: Shape, method: str, rng: np.random.Generator) -> tuple[bool, int]:
    """The final verdict of one PR (flagged?) and the runs it took."""
    convs: list[Conversation] = []
    for look in range(MAX_RERUNS + 1):
        convs += bot.run(s, look, rng)
        res = {s.name: aggregate(s.name, convs, n_boot=10)}
        rows = check(res, bl, GATE, convs, method=method, max_reruns=MAX_RERUNS, look=look)  # type: ignore[arg-type]
        if not any(r.wants_rerun for r in rows):
            return any(r.failed for r in rows), look + 1
    raise AssertionError("unreachable: the last look never reruns")


CASES: list[tuple[str, str | None, float]] = [
    ("healthy (false alarm)", None, 0.0),
    *[(f"correctness -{d:.2f}", "correctness", d) for d in (0.02, 0.05, 0.10)],
    *[(f"faithfulness -{d:.2f}", "faithfulness", d) for d in (0.02, 0.05, 0.10)],
    *[(f"forgetfulness +{d:.2f}", "forgetfulness", d) for d in (0.05, 0.10)],
]


def cell(args: tuple[str, int, str, str | None, float, int, int]) -> tuple[str, str, str, float, float, float]:
    suite, runs, label, metric, d, trials, seed = args
    s = shape(suite)
    healthy = Bot.healthy(s)
    bot = healthy.changed(metric, d)
    rng = np.random.default_rng(seed)
    band = paired = looks = 0
    for _ in range(trials):
        bl = record(healthy, s, runs, rng)  # a fresh baseline each trial: its own noise counts too
        band += decide(bl, bot, s, "band", rng)[0]
        flagged, n = decide(bl, bot, s, "band+paired", rng)
        paired += flagged
        looks += n
    return suite, label, f"{runs}", band / trials, paired / trials, looks / trials


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
        print(f"\n{suite}: {len(s.convs)} conversations, {sum(n for _, n in s.convs)} turns; baseline {a.runs} runs; {a.trials} PRs per row")
    print()
    print("| suite | change | band: flagged | band+paired: flagged | band+paired: runs per PR |")
    print("|---|---|---|---|---|")
    for suite, label, _runs, band, paired, looks in rows:
        print(f"| {suite} | {label} | {band:.1%} | {paired:.1%} | {looks:.2f} |")
    print(f"\n({time.perf_counter() - t0:.0f} s; tolerances: correctness, faithfulness 0.03; forgetfulness 0.05)")


if __name__ == "__main__":
    main()
