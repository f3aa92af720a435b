"""How well the offline metrics rank real answers, against people's ratings.

    python benchmarks/bench_human_agreement.py --data ../shared/data/mtrag-human-dev.json

The data is the MTRAG human-evaluation subset (IBM mt-rag-benchmark): for each
task, a multi-turn conversation, the passages shown to the model, a reference
answer, and three rated answers (the reference, GPT-4o, Llama-3.1-405B), each
rated 1-4 by 2-3 people for faithfulness, completeness, appropriateness and
naturalness; the file also carries the automatic scores the benchmark ships.

Every rated answer goes through the project's own scorer
(``metrics.offline.score_turn``): the last user turn is the question, the
passages are the contexts, the reference is the ground truth, and the earlier
turns are the conversation (their user statements and their agent answers, which
in MTRAG are reference answers, grounded by construction). The table gives the
Spearman rank correlation of every offline metric and every shipped proxy with
the median human rating, per dimension, with a 95% percentile bootstrap
interval over tasks (the three answers of a task are resampled together; fixed
seed). A second table gives, per dimension, the paired difference between the
best offline metric and each proxy, on the same resamples.

The project never reads this file at run time; only this benchmark does.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_ragdive.core.records import Context, Turn  # noqa: E402
from pytest_ragdive.metrics.lexical import split_sentences  # noqa: E402
from pytest_ragdive.metrics.offline import score_turn, user_statements  # noqa: E402
from pytest_ragdive.metrics.text import asserted_units, match_terms  # noqa: E402

DIMENSIONS = ("faithfulness", "completeness", "appropriateness", "naturalness")
OFFLINE = ("faithfulness", "faithfulness_strict", "correctness", "answer_f1", "answer_attempt_rate")
# a lexical answer-relevance proxy that was tried and is not shipped (offline answer_relevance is None)
CANDIDATES = ("question_coverage",)
PROXIES = ("RougeL", "Bert-Rec", "Bert-KPrec", "rb_agg", "rb_llm", "rl_f", "conditional_idk")
LLM_PROXIES = frozenset({"rb_llm", "rl_f", "conditional_idk"})  # judged by an LLM; the others are algorithmic


@dataclass
class Rated:
    task: str
    model: str
    human: dict[str, float]
    scores: dict[str, float | None]


def _value(entry: dict) -> float:
    return float(next(iter(entry.values()))["value"])


def load(path: Path) -> list[Rated]:
    data = json.loads(path.read_text())
    docs = {d["document_id"]: d["text"] for d in data["documents"]}
    tasks = {t["task_id"]: t for t in data["tasks"]}
    out = []
    for ev in data["evaluations"]:
        task = tasks[ev["task_id"]]
        ann = ev["annotations"]
        history, question = task["input"][:-1], task["input"][-1]["text"]
        conversation: list[str] = []
        for msg in history:
            if msg["speaker"] == "user":
                conversation.extend(user_statements(msg["text"]))
            else:
                conversation.extend(split_sentences(msg["text"]))
        conversation.extend(user_statements(question))
        turn = Turn(
            rag_input=question,
            ground_truth=task["targets"][0]["text"],
            answer=ev["model_response"],
            contexts=[
                Context(id=f"{c['document_id']}#{i}", doc_id=c["document_id"], text=docs[c["document_id"]])
                for i, c in enumerate(task["contexts"])
            ],
        )
        scores = score_turn(turn, conversation=conversation)
        row: dict[str, float | None] = {m: scores[m] for m in OFFLINE}
        row["question_coverage"] = question_coverage(question, ev["model_response"])
        row.update({p: _value(ann[p]) for p in PROXIES})
        human = {d: statistics.median(float(v["value"]) for v in ann[d].values()) for d in DIMENSIONS}
        out.append(Rated(ev["task_id"], ev["model_id"], human, row))
    return out


def question_coverage(question: str, answer: str) -> float:
    """Share of the question's match terms that the answer's asserted units contain (1.0 for
    a question without terms): the answer-relevance proxy that was tried."""
    asked = set(match_terms(question))
    said = {t for u in asserted_units(answer) for t in match_terms(u)}
    return len(asked & said) / len(asked) if asked else 1.0


def ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks (ties share the mean of their positions), as Spearman wants."""
    order = np.argsort(x, kind="mergesort")
    sx = x[order]
    r = np.empty(len(x))
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and sx[j + 1] == sx[i]:
            j += 1
        r[order[i : j + 1]] = (i + j) / 2
        i = j + 1
    return r


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = ranks(a), ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def bootstrap(
    rows: Sequence[Rated], stat: Callable[[Sequence[Rated]], float], n: int, seed: int
) -> tuple[float, float, float]:
    """The statistic on all rows and its 95% percentile interval over tasks (resampled whole)."""
    by_task: dict[str, list[Rated]] = {}
    for r in rows:
        by_task.setdefault(r.task, []).append(r)
    groups = list(by_task.values())
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(n):
        pick = rng.integers(0, len(groups), len(groups))
        v = stat([r for i in pick for r in groups[i]])
        if not np.isnan(v):
            vals.append(v)
    if not vals:  # constant on every resample (e.g. a metric that never varies)
        return stat(rows), float("nan"), float("nan")
    lo, hi = np.percentile(vals, [2.5, 97.5])
    return stat(rows), float(lo), float(hi)


def rho(metric: str, dim: str) -> Callable[[Sequence[Rated]], float]:
    def stat(rows: Sequence[Rated]) -> float:
        kept = [r for r in rows if r.scores[metric] is not None]
        return spearman(np.array([r.scores[metric] for r in kept]), np.array([r.human[dim] for r in kept]))

    return stat


def diff(a: str, b: str, dim: str) -> Callable[[Sequence[Rated]], float]:
    fa, fb = rho(a, dim), rho(b, dim)
    return lambda rows: fa(rows) - fb(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="mtrag-human-dev.json (or the other half)")
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    if not args.data.is_file():
        sys.exit(f"--data: no such file: {args.data}")
    rows = load(args.data)
    tasks = len({r.task for r in rows})
    print(f"{len(rows)} rated answers, {tasks} tasks; Spearman with the median human rating, "
          f"95% bootstrap CI over tasks ({args.resamples} resamples, seed {args.seed})\n")
    print("| metric | kind | n | " + " | ".join(DIMENSIONS) + " |")
    print("|---|---|---|" + "---|" * len(DIMENSIONS))
    for m in OFFLINE + CANDIDATES + PROXIES:
        if m in OFFLINE or m in CANDIDATES:
            kind = "offline" if m in OFFLINE else "tried, not shipped"
        else:
            kind = "proxy (LLM)" if m in LLM_PROXIES else "proxy"
        n = sum(r.scores[m] is not None for r in rows)
        cells = []
        for d in DIMENSIONS:
            v, lo, hi = bootstrap(rows, rho(m, d), args.resamples, args.seed)
            cells.append("n/a (constant)" if np.isnan(v) else f"{v:.3f} [{lo:.2f}, {hi:.2f}]")
        print(f"| {m} | {kind} | {n} | " + " | ".join(cells) + " |")
    print("\nPaired difference in Spearman (offline metric minus proxy), 95% bootstrap CI:\n")
    pairs = (("faithfulness", "faithfulness"), ("correctness", "completeness"))
    print("| offline metric | human dimension | " + " | ".join(PROXIES) + " |")
    print("|---|---|" + "---|" * len(PROXIES))
    for m, d in pairs:
        cells = []
        for p in PROXIES:
            v, lo, hi = bootstrap(rows, diff(m, p, d), args.resamples, args.seed)
            cells.append("n/a" if np.isnan(v) else f"{v:+.3f} [{lo:+.2f}, {hi:+.2f}]")
        print(f"| {m} | {d} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
