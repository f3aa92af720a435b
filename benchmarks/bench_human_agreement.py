"""How well the offline metrics rank real answers, against people's ratings, out of fold.

    python benchmarks/bench_human_agreement.py --data ../shared/data/mtrag-human-dev.json

The data is the MTRAG human-evaluation subset (IBM mt-rag-benchmark): for each task, a
multi-turn conversation, the passages shown to the model, a reference answer, and three
rated answers (the reference, GPT-4o, Llama-3.1-405B), each rated 1-4 by 2-3 people for
faithfulness, completeness, appropriateness and naturalness; the file also carries the
automatic scores the benchmark ships (the proxies to beat; rb_llm, rl_f and
conditional_idk are judged by an LLM).

Every rated answer is scored by the project's own functions: the last user turn is the
question, the passages are the contexts, the reference is the ground truth, and the
earlier turns are the conversation, grounded by the plugin's own rule
(``offline.conversation_supports``: the user's statements, and the units of earlier
answers that their own turn's passages support; an earlier turn's passages are those of
the task of that turn when the file has it, else none).

**Choices are made inside the folds.** The support rule of faithfulness and the coverage
rule of correctness (``grounding.Rule``: lexical alone, or lexical and semantic evidence
combined, with the cosine's floor and full points, and a cap for coverage) are chosen
from a fixed grid by 5-fold cross-validation over tasks: on each fold's training tasks
the variant with the highest Spearman correlation with the median human rating
(faithfulness for faithfulness, completeness for correctness), applied to the held-out
tasks. The figures reported for them are out of fold (the held-out scores of the five
folds pooled); the rule shipped is the one the same procedure chooses on the whole half.

Every Spearman has a 95% percentile interval over tasks (the answers of a task are
resampled together; ``core.stats.cluster_draws``, the draws of the project's cluster
bootstrap, since a rank correlation is not a ratio of cluster sums), and the paired
difference with each proxy is on the same resamples. The project never reads this file
at run time; only this benchmark does.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_ragdive.core.records import Context, Turn  # noqa: E402
from pytest_ragdive.core.stats import cluster_draws, percentile_interval  # noqa: E402
from pytest_ragdive.metrics.grounding import (  # noqa: E402
    COVERAGE_RULE,
    LEXICAL_COVERAGE,
    LEXICAL_SUPPORT,
    SUPPORT_RULE,
    Rule,
    correctness,
)
from pytest_ragdive.metrics.offline import Grounding, conversation_support, grounded_faithfulness, score_turn  # noqa: E402
from pytest_ragdive.metrics.text import asserted_units, match_terms  # noqa: E402

DIMENSIONS = ("faithfulness", "completeness", "appropriateness", "naturalness")
PROXIES = ("RougeL", "Bert-Rec", "Bert-KPrec", "rb_agg", "rb_llm", "rl_f", "conditional_idk")
LLM_PROXIES = frozenset({"rb_llm", "rl_f", "conditional_idk"})  # judged by an LLM; the others are algorithmic
FIXED = ("answer_f1", "answer_attempt_rate")  # nothing chosen: scored once by score_turn
CANDIDATES = ("question_coverage",)  # a lexical answer-relevance proxy that was tried and is not shipped


def _semantic_grid(cap: int | None = None) -> list[Rule]:
    return [
        Rule(combine, floor, round(floor + width, 2), cap)
        for combine in ("max", "mean", "semantic")
        for floor in (0.3, 0.4, 0.5, 0.6)
        for width in (0.2, 0.3, 0.4, 0.5)
        if floor + width <= 1.0 + 1e-9
    ]


CAPS = (None, 12, 24, 36, 48)
#: the variants the folds choose from (widened once, after a first run whose choices sat
#: at the edge of the grid: widths up to 0.4, caps None, 12 and 24; docs/metrics.md, "Agreement with people")
SUPPORT_GRID: list[Rule] = [LEXICAL_SUPPORT, *_semantic_grid()]
COVERAGE_GRID: list[Rule] = [
    *(Rule("lexical", cap=c) for c in CAPS),
    *(r for c in CAPS for r in _semantic_grid(c)),
]


@dataclass
class Rated:
    task: str
    conversation: str
    model: str
    human: dict[str, float]
    scores: dict[str, float | None]
    turns: list[Turn] = field(default_factory=list)  # earlier turns, then the rated one

    @property
    def turn(self) -> Turn:
        return self.turns[-1]


def _value(entry: dict) -> float:
    return float(next(iter(entry.values()))["value"])


def _contexts(task: dict, docs: dict[str, str]) -> list[Context]:
    return [
        Context(id=f"{c['document_id']}#{i}", doc_id=c["document_id"], text=docs[c["document_id"]])
        for i, c in enumerate(task["contexts"])
    ]


def load(path: Path) -> list[Rated]:
    """Every rated answer as a conversation of Turns (earlier turns with their own task's
    passages where the file has that task), scored once by ``score_turn`` for the metrics
    nothing is chosen for."""
    data = json.loads(path.read_text())
    docs = {d["document_id"]: d["text"] for d in data["documents"]}
    tasks = {t["task_id"]: t for t in data["tasks"]}
    out = []
    for ev in data["evaluations"]:
        task = tasks[ev["task_id"]]
        conv_id = ev["task_id"].split("<::>")[0]
        msgs = task["input"]
        turns: list[Turn] = []
        for i in range(0, len(msgs) - 1, 2):  # (user, agent) pairs before the rated question
            earlier = tasks.get(f"{conv_id}<::>{i // 2 + 1}")
            contexts = _contexts(earlier, docs) if earlier is not None else []
            turns.append(Turn(index=i // 2, rag_input=msgs[i]["text"], answer=msgs[i + 1]["text"], contexts=contexts))
        turns.append(
            Turn(
                index=len(turns),
                rag_input=msgs[-1]["text"],
                ground_truth=task["targets"][0]["text"],
                answer=ev["model_response"],
                contexts=_contexts(task, docs),
            )
        )
        ann = ev["annotations"]
        rated = Rated(
            ev["task_id"], conv_id, ev["model_id"],
            {d: statistics.median(float(v["value"]) for v in ann[d].values()) for d in DIMENSIONS},
            {p: _value(ann[p]) for p in PROXIES}, turns,
        )
        fixed = score_turn(rated.turn, conversation=conversation_support(turns, len(turns) - 1))
        rated.scores.update({m: fixed[m] for m in FIXED})
        rated.scores["question_coverage"] = question_coverage(rated.turn.rag_input, ev["model_response"])
        out.append(rated)
    return out


def question_coverage(question: str, answer: str) -> float:
    """Share of the question's match terms that the answer's asserted units contain (1.0 for
    a question without terms): the answer-relevance proxy that was tried."""
    asked = set(match_terms(question))
    said = {t for u in asserted_units(answer) for t in match_terms(u)}
    return len(asked & said) / len(asked) if asked else 1.0


# --------------------------------------------------------------------------- variants


def faithfulness_scores(rows: Sequence[Rated], rule: Rule, strict: bool = False) -> list[float | None]:
    """Faithfulness of every row by ``rule`` (the plugin's grounded_faithfulness, the
    conversation grounded by the same rule)."""
    g = Grounding(support=rule)
    out = []
    for r in rows:
        conv = () if strict else conversation_support(r.turns, len(r.turns) - 1, rule)
        out.append(grounded_faithfulness(r.turn.answer, r.turn.contexts, conv, g))
    return out


def correctness_scores(rows: Sequence[Rated], rule: Rule) -> list[float | None]:
    return [correctness(r.turn.answer, r.turn.ground_truth, rule) for r in rows]


# --------------------------------------------------------------------------- statistics


def ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks from 0 (ties share the mean of their positions), as Spearman wants."""
    order = np.argsort(x, kind="stable")
    xs = x[order]
    out = np.empty(len(xs), dtype=float)
    new = xs[1:] != xs[:-1]
    if new.all():  # no ties: the rank is the position
        out[order] = np.arange(len(xs), dtype=float)
        return out
    start = np.flatnonzero(np.concatenate(([True], new)))  # the first sorted position of every distinct value
    cnt = np.diff(start, append=len(xs))
    out[order] = np.repeat(start + (cnt - 1) / 2, cnt)
    return out


def _centred_ranks(x: np.ndarray) -> tuple[np.ndarray, float]:
    """The ranks minus their mean ((n - 1) / 2 for average ranks), and their sum of squares."""
    r = ranks(x)
    r -= (len(r) - 1) / 2
    return r, float(r @ r)


def _pearson(a: tuple[np.ndarray, float], b: tuple[np.ndarray, float]) -> float:
    (ra, saa), (rb, sbb) = a, b
    if saa == 0 or sbb == 0:  # a constant side
        return float("nan")
    return max(-1.0, min(1.0, float(ra @ rb) / math.sqrt(saa * sbb)))


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson's r of the average ranks (a constant side: nan). Written out rather than
    ``np.corrcoef`` because the cross-validation grids call it some 100,000 times."""
    return _pearson(_centred_ranks(a), _centred_ranks(b))


def _rho(scores: Sequence[float | None] | np.ndarray, human: Sequence[float], idx: np.ndarray | None = None) -> float:
    s = scores if isinstance(scores, np.ndarray) else np.array([np.nan if v is None else v for v in scores], dtype=float)
    h = np.asarray(human, dtype=float)
    if idx is not None:
        s, h = s[idx], h[idx]
    keep = ~np.isnan(s)
    return spearman(s[keep], h[keep]) if keep.sum() > 2 else float("nan")


Stat = Callable[[np.ndarray], float]  # row indexes (with repeats) -> statistic


def bootstrap(rows: Sequence[Rated], stats: Sequence[Stat], n: int, seed: int) -> list[tuple[float, float, float]]:
    """Each statistic on all rows and its 95% percentile interval over tasks (resampled
    whole, with the project's cluster-bootstrap draws; every statistic on the same draws)."""
    tasks = sorted({r.task for r in rows})
    where = {t: i for i, t in enumerate(tasks)}
    groups: list[list[int]] = [[] for _ in tasks]
    for i, r in enumerate(rows):
        groups[where[r.task]].append(i)
    garr = [np.array(g) for g in groups]
    everything = np.arange(len(rows))
    draws: list[list[float]] = [[] for _ in stats]
    for chunk in cluster_draws(len(tasks), n, seed):
        for pick in chunk:
            idx = np.concatenate([garr[j] for j in pick])
            for k, st in enumerate(stats):
                v = st(idx)
                if not np.isnan(v):
                    draws[k].append(v)
    out = []
    for st, d in zip(stats, draws, strict=True):
        lo, hi = percentile_interval(np.array(d))
        out.append((st(everything), float("nan") if lo is None else lo, float("nan") if hi is None else hi))
    return out


# --------------------------------------------------------------------------- cross-validation


def fold_of(rows: Sequence[Rated], k: int, seed: int, by: str) -> list[int]:
    """The fold of every row: clusters (tasks, or conversations) shuffled, dealt round-robin."""
    key = [r.task if by == "task" else r.conversation for r in rows]
    clusters = sorted(set(key))
    order = np.random.default_rng(seed).permutation(len(clusters))
    fold = {clusters[j]: n % k for n, j in enumerate(order)}
    return [fold[c] for c in key]


def choose(variants: Sequence[Sequence[float | None] | np.ndarray], human: Sequence[float], idx: np.ndarray) -> int:
    """The variant with the highest Spearman on the rows ``idx`` (the first on a tie)."""
    best, best_v = 0, -np.inf
    hs = np.asarray(human, dtype=float)[idx]
    people: dict[bytes, tuple[np.ndarray, float]] = {}  # the people's ranks, per set of scored rows
    for i, scores in enumerate(variants):
        s = (scores if isinstance(scores, np.ndarray) else np.array([np.nan if v is None else v for v in scores]))[idx]
        keep = ~np.isnan(s)
        if keep.sum() <= 2:
            continue
        key = keep.tobytes()
        if key not in people:
            people[key] = _centred_ranks(hs[keep])
        v = _pearson(_centred_ranks(s[keep]), people[key])
        if not np.isnan(v) and v > best_v + 1e-12:
            best, best_v = i, v
    return best


@dataclass
class CrossValidated:
    oof: list[float | None]  # each row's score by the variant its fold's training part chose
    chosen: list[int]  # per fold
    refit: int  # chosen on every row


def cross_validate(variants: Sequence[list[float | None]], human: Sequence[float], folds: Sequence[int], k: int) -> CrossValidated:
    f = np.asarray(folds)
    arrays = [np.array([np.nan if v is None else v for v in s], dtype=float) for s in variants]  # converted once
    oof: list[float | None] = [None] * len(human)
    chosen = []
    for fold in range(k):
        c = choose(arrays, human, np.flatnonzero(f != fold))
        chosen.append(c)
        for i in np.flatnonzero(f == fold):
            oof[i] = variants[c][i]
    return CrossValidated(oof, chosen, choose(arrays, human, np.arange(len(human))))


# --------------------------------------------------------------------------- the tables


def _cell(v: tuple[float, float, float], signed: bool = False) -> str:
    x, lo, hi = v
    if np.isnan(x):
        return "n/a (constant)"
    f = "+.3f" if signed else ".3f"
    g = "+.2f" if signed else ".2f"
    return f"{x:{f}} [{lo:{g}}, {hi:{g}}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="mtrag-human-dev.json (or the other half)")
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--folds-by", choices=("task", "conversation"), default="task")
    ap.add_argument("--without-reference", action="store_true",
                    help="leave out the rated reference answers (a reference-based metric gives them 1.0)")
    args = ap.parse_args()
    if not args.data.is_file():
        sys.exit(f"--data: no such file: {args.data}")
    rows = [r for r in load(args.data) if not (args.without_reference and r.model == "reference")]
    human = {d: [r.human[d] for r in rows] for d in DIMENSIONS}
    folds = fold_of(rows, args.folds, args.seed, args.folds_by)

    support_variants = [faithfulness_scores(rows, rule) for rule in SUPPORT_GRID]
    coverage_variants = [correctness_scores(rows, rule) for rule in COVERAGE_GRID]
    faith = cross_validate(support_variants, human["faithfulness"], folds, args.folds)
    corr = cross_validate(coverage_variants, human["completeness"], folds, args.folds)
    strict = [None] * len(rows)
    f_arr = np.asarray(folds)
    for fold, c in enumerate(faith.chosen):
        s = faithfulness_scores(rows, SUPPORT_GRID[c], strict=True)
        for i in np.flatnonzero(f_arr == fold):
            strict[i] = s[i]
    lexical_faith = support_variants[0]
    lexical_corr = coverage_variants[COVERAGE_GRID.index(LEXICAL_COVERAGE)]
    previous = [None if c is None or f is None else c * f for c, f in zip(lexical_corr, lexical_faith, strict=True)]

    series: dict[str, tuple[str, list[float | None]]] = {
        "faithfulness": ("offline, out of fold", faith.oof),
        "faithfulness_strict": ("offline, out of fold", strict),
        "correctness": ("offline, out of fold", corr.oof),
        "faithfulness (lexical rule)": ("offline, lexical only", lexical_faith),
        "correctness (lexical rule)": ("offline, lexical only", lexical_corr),
        "coverage x faithfulness (lexical)": ("the previous definition of correctness", previous),
        **{m: ("offline", [r.scores[m] for r in rows]) for m in FIXED},
        **{m: ("tried, not shipped", [r.scores[m] for r in rows]) for m in CANDIDATES},
        **{p: ("proxy (LLM)" if p in LLM_PROXIES else "proxy", [r.scores[p] for r in rows]) for p in PROXIES},
    }

    def rho_stat(scores: list[float | None], dim: str) -> Stat:
        return lambda idx: _rho(scores, human[dim], idx)

    def diff_stat(a: Stat, b: Stat) -> Stat:
        return lambda idx: a(idx) - b(idx)

    names = list(series)
    stats = [rho_stat(series[m][1], d) for m in names for d in DIMENSIONS]
    pairs = (("faithfulness", "faithfulness"), ("correctness", "completeness"), ("correctness", "faithfulness"))
    diffs = [diff_stat(rho_stat(series[m][1], d), rho_stat(series[p][1], d)) for m, d in pairs for p in PROXIES]
    tracks = [
        diff_stat(rho_stat(series[m][1], "completeness"), rho_stat(series[m][1], "faithfulness"))
        for m in ("correctness", "coverage x faithfulness (lexical)")
    ]
    values = bootstrap(rows, stats + diffs + tracks, args.resamples, args.seed)
    tasks = len({r.task for r in rows})
    which = " (the reference answers left out)" if args.without_reference else ""
    print(f"{len(rows)} rated answers{which}, {tasks} tasks; Spearman with the median human rating, 95% CI over tasks "
          f"({args.resamples} resamples, seed {args.seed}); {args.folds}-fold cross-validation by {args.folds_by}\n")
    print("| metric | kind | n | " + " | ".join(DIMENSIONS) + " |")
    print("|---|---|---|" + "---|" * len(DIMENSIONS))
    for i, m in enumerate(names):
        n = sum(v is not None for v in series[m][1])
        cells = [_cell(values[i * len(DIMENSIONS) + j]) for j in range(len(DIMENSIONS))]
        print(f"| {m} | {series[m][0]} | {n} | " + " | ".join(cells) + " |")
    base = len(stats)
    print("\nPaired difference in Spearman (offline metric, out of fold, minus proxy), 95% CI over tasks:\n")
    print("| offline metric | human dimension | " + " | ".join(PROXIES) + " |")
    print("|---|---|" + "---|" * len(PROXIES))
    for k, (m, d) in enumerate(pairs):
        cells = [_cell(values[base + k * len(PROXIES) + j], signed=True) for j in range(len(PROXIES))]
        print(f"| {m} | {d} | " + " | ".join(cells) + " |")
    base += len(diffs)
    print("\nWhich dimension correctness tracks: Spearman with completeness minus Spearman with faithfulness:\n")
    print("| metric | completeness - faithfulness |")
    print("|---|---|")
    for k, m in enumerate(("correctness (out of fold)", "coverage x faithfulness (lexical, previous)")):
        print(f"| {m} | {_cell(values[base + k], signed=True)} |")
    print("\nVariants chosen inside the folds (training part of each fold), and on the whole half:\n")
    print("| rule | grid | " + " | ".join(f"fold {i + 1}" for i in range(args.folds)) + " | whole half | shipped |")
    print("|---|---|" + "---|" * (args.folds + 2))
    for label, cv, grid, shipped in (("support (faithfulness)", faith, SUPPORT_GRID, SUPPORT_RULE),
                                     ("coverage (correctness)", corr, COVERAGE_GRID, COVERAGE_RULE)):
        cells = [grid[c].label() for c in cv.chosen]
        mark = "" if grid[cv.refit] == shipped else " (differs!)"
        print(f"| {label} | {len(grid)} | " + " | ".join(cells) + f" | {grid[cv.refit].label()} | {shipped.label()}{mark} |")


if __name__ == "__main__":
    main()
