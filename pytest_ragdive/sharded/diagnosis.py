"""The sharded diagnosis of one suite: scored conversations -> :class:`ShardedReport` (pure).

Input: the suite's conversations that carry ``conv.sharded`` (one per question,
condition and run; errored ones are left out), each turn with ``turn.sharded``
filled by the scorer (:mod:`pytest_ragdive.sharded.conditions` classifies and scores
every reply). Per condition:

- ``mean_score``: mean of the condition's defined score over conversations: BEST
  (the maximum over the conversation's answer attempts, 0 without any), except for
  RECAP, which is scored on its recap turn (:attr:`ShardedInfo.score_f1`);
  ``mean_best``: BEST for every condition (RECAP's second, labelled figure);
- ``aptitude`` / ``unreliability``: per question, the 90th percentile / the 90th
  minus the 10th percentile of its defined scores over the runs (linear
  interpolation), averaged over questions (:mod:`pytest_ragdive.sharded.aptitude`);
- ``answer_attempt_rate`` and the response-class counts over every turn;
- supporting-document recall per turn index, at the final turn, and
  cumulatively over the union of the conversation's contexts.

Decomposition (pairs: the same question in the same run): ``gap`` = FULL -
SHARDED, ``wording`` = FULL - CONCAT, ``delivery`` = CONCAT - SHARDED (so gap =
wording + delivery), each with a paired question-cluster bootstrap 95% CI
(5,000 resamples, as the study);
``recovery[X]`` = (X - SHARDED) / (FULL - SHARDED) for RECAP and SNOWBALL on the
defined scores (None when the gap is not positive), ``recovery_best["recap"]`` the
same on RECAP's BEST over the conversation; ``concat_preservation``: CONCAT / FULL
(the study's information-preservation criterion is 80%); ``gap_full_coverage``: FULL -
SHARDED over the pairs whose FULL turn and whose SHARDED conversation (cumulatively)
retrieved every supporting document: what is left is the reader's share.

The judge robustness check (when the correctness judge scored every FULL/SHARDED pair):
``gap_judged`` is the gap on the judge's BEST; ``judge_gap_difference`` the F1 gap minus
the judged gap, paired per (question, run) with its question-cluster CI (an interval
that holds 0: the two measures agree); ``judge_gap_correlation`` the Pearson correlation
over questions of the two gaps (each question's mean over its runs).

:func:`gate_metrics` turns the report into the suite metrics the gate reads:
``sharded_gap`` (with its CI), and SHARDED's ``aptitude`` and ``unreliability``.
``answer_attempt_rate`` stays a turn-level metric: the scorer sets it on every
sharded turn (1 for an answer attempt), and the suite aggregate averages it.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence

from ..core.config_models import CONDITIONS
from ..core.records import Conversation
from ..core.results import MetricValue
from ..core.stats import mean
from .aptitude import DEFAULT_BOOT, DEFAULT_SEED, aptitude, paired_difference, question_ratio, unreliability
from .records import Condition, ConditionStats, QuestionEstimate, ShardedReport

__all__ = ["CONDITIONS", "build_report", "gate_metrics", "pearson", "recall", "turn_recall"]

_Key = tuple[str, int]  # (question id, run)


def recall(retrieved: set[str] | list[str], supporting: Sequence[str]) -> float | None:
    """Share of the supporting documents among ``retrieved`` (None without supporting docs)."""
    if not supporting:
        return None
    got = set(retrieved)
    return sum(1 for d in set(supporting) if d in got) / len(set(supporting))


def turn_recall(conv: Conversation) -> list[float | None]:
    """Supporting-document recall of each run turn's contexts."""
    sup = conv.sharded.supporting_doc_ids if conv.sharded else []
    return [recall({c.source_id for c in t.contexts}, sup) for t in conv.turns if t.answer is not None]


def _cumulative(conv: Conversation) -> float | None:
    sup = conv.sharded.supporting_doc_ids if conv.sharded else []
    return recall({c.source_id for t in conv.turns for c in t.contexts}, sup)


def _over_questions(
    by_q: dict[str, list[float]], fn: Callable[[Sequence[float]], float], n_boot: int, seed: int
) -> QuestionEstimate:
    """``fn`` per question, averaged, with a question bootstrap 95% CI."""

    kept = {q: fn(g) for q, g in by_q.items() if g}
    value, lo, hi = question_ratio(kept, dict.fromkeys(kept, 1.0), n_boot=n_boot, seed=seed)
    return QuestionEstimate(value=value, ci_low=lo, ci_high=hi, questions=len(by_q), pairs=sum(len(v) for v in by_q.values()))


def _condition_stats(cond: Condition, convs: list[Conversation], n_boot: int, seed: int) -> ConditionStats:
    by_q: dict[str, list[float]] = defaultdict(list)
    for c in sorted(convs, key=lambda c: c.run):
        assert c.sharded is not None
        by_q[c.sharded.question_id].append(c.sharded.score_f1)
    classes: Counter[str] = Counter()
    per_turn: dict[int, list[float | None]] = defaultdict(list)
    finals: list[float | None] = []
    for c in convs:
        for t in c.turns:
            if t.sharded is not None and t.sharded.response_class is not None:
                classes[t.sharded.response_class] += 1
        rec = turn_recall(c)
        for i, r in enumerate(rec, 1):
            per_turn[i].append(r)
        finals.append(rec[-1] if rec else None)
    turns = sum(classes.values())
    judged = [c.sharded.best_judged for c in convs if c.sharded is not None]
    return ConditionStats(
        condition=cond,
        conversations=len(convs),
        questions=len(by_q),
        mean_score=mean(c.sharded.score_f1 for c in convs if c.sharded is not None),
        mean_score_judged=mean(c.sharded.score_judged for c in convs if c.sharded is not None),
        mean_best=mean(c.sharded.best_f1 for c in convs if c.sharded is not None),
        mean_best_em=mean(c.sharded.best_em for c in convs if c.sharded is not None),
        mean_best_judged=mean(judged),
        aptitude=_over_questions(by_q, aptitude, n_boot, seed),
        unreliability=_over_questions(by_q, unreliability, n_boot, seed),
        answer_attempt_rate=classes["answer_attempt"] / turns if turns else None,
        classes=dict(sorted(classes.items())),
        recall_final=mean(finals),
        recall_cumulative=mean(_cumulative(c) for c in convs),
        recall_per_turn={str(k): mean(v) for k, v in sorted(per_turn.items())},
    )


def _score(c: Conversation) -> float:
    assert c.sharded is not None
    return c.sharded.score_f1


def _best(c: Conversation) -> float:
    assert c.sharded is not None
    return c.sharded.best_f1


def _pairs(
    a: dict[_Key, Conversation], b: dict[_Key, Conversation], score: Callable[[Conversation], float] = _score
) -> dict[str, list[tuple[float, float]]]:
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for key in sorted(a.keys() & b.keys()):
        out[key[0]].append((score(a[key]), score(b[key])))
    return out


def _judged_pairs(a: dict[_Key, Conversation], b: dict[_Key, Conversation]) -> dict[str, list[tuple[float, float]]]:
    """(a, b) judged-score pairs by question; empty unless the judge scored every pair."""
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for key in sorted(a.keys() & b.keys()):
        sa, sb = a[key].sharded, b[key].sharded
        if sa is None or sb is None or sa.score_judged is None or sb.score_judged is None:
            return {}
        out[key[0]].append((sa.score_judged, sb.score_judged))
    return out


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """The Pearson correlation of two equally long series (None under three points or without spread)."""
    n = len(xs)
    if n < 3 or n != len(ys):
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx <= 0 or syy <= 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / math.sqrt(sxx * syy)


def _judge_robustness(
    f1: dict[str, list[tuple[float, float]]], judged: dict[str, list[tuple[float, float]]], n_boot: int, seed: int
) -> tuple[QuestionEstimate, float | None]:
    """(F1 gap - judged gap with its paired CI, the two gaps' correlation over questions);
    the pairs of both are the same (question, run) pairs in the same order."""
    diffs = {q: [(a - b, c - d) for (a, b), (c, d) in zip(f1[q], judged[q], strict=True)] for q in sorted(judged)}
    est = paired_difference(diffs, n_boot=n_boot, seed=seed)
    qs = [q for q in sorted(diffs) if diffs[q]]
    r = pearson([mean(x for x, _ in diffs[q]) or 0.0 for q in qs], [mean(y for _, y in diffs[q]) or 0.0 for q in qs])
    return est, r


def _recovery(
    full: dict[_Key, Conversation], sharded: dict[_Key, Conversation], other: dict[_Key, Conversation], n_boot: int,
    seed: int, score: Callable[[Conversation], float] = _score,
) -> QuestionEstimate | None:
    keys = sorted(full.keys() & sharded.keys() & other.keys())
    if not keys:
        return None
    clusters: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for k in keys:
        clusters[k[0]].append((_score(full[k]), _score(sharded[k]), score(other[k])))

    # the share of the gap won back: sum(other - sharded) / sum(full - sharded), resamples without a gap skipped
    value, lo, hi = question_ratio(
        {q: sum(o - s for _, s, o in rows) for q, rows in clusters.items()},
        {q: sum(f - s for f, s, _ in rows) for q, rows in clusters.items()},
        n_boot=n_boot, seed=seed, min_denom=1e-9,
    )
    return QuestionEstimate(value=value, ci_low=lo, ci_high=hi, questions=len(clusters), pairs=len(keys))


def build_report(
    suite: str, convs: list[Conversation], *, n_boot: int = DEFAULT_BOOT, seed: int = DEFAULT_SEED
) -> ShardedReport | None:
    """The decomposition table of the suite's sharded conversations (None when it has none)."""
    mine = [c for c in convs if c.sharded is not None and c.error is None]
    if not mine:
        return None
    by_cond: dict[str, dict[_Key, Conversation]] = defaultdict(dict)
    for c in mine:
        assert c.sharded is not None
        by_cond[c.sharded.condition][(c.sharded.question_id, c.run)] = c
    report = ShardedReport(suite=suite, runs=len({c.run for c in mine}))
    for cond in CONDITIONS:
        if by_cond.get(cond):
            report.conditions[cond] = _condition_stats(cond, list(by_cond[cond].values()), n_boot, seed)
    full, concat, sharded = (by_cond.get(k, {}) for k in ("full", "concat", "sharded"))

    def diff(a: dict[_Key, Conversation], b: dict[_Key, Conversation]) -> QuestionEstimate | None:
        pairs = _pairs(a, b)
        return paired_difference(pairs, n_boot=n_boot, seed=seed) if pairs else None

    report.gap = diff(full, sharded)
    for run in sorted({c.run for c in mine}):
        one = diff({k: v for k, v in full.items() if k[1] == run}, {k: v for k, v in sharded.items() if k[1] == run})
        report.gap_per_run.append(None if one is None else one.value)
    report.wording = diff(full, concat)
    report.delivery = diff(concat, sharded)
    for cond in ("recap", "snowball"):
        rec = _recovery(full, sharded, by_cond.get(cond, {}), n_boot, seed)
        if rec is not None:
            report.recovery[cond] = rec
    rec_best = _recovery(full, sharded, by_cond.get("recap", {}), n_boot, seed, _best)
    if rec_best is not None:
        report.recovery_best["recap"] = rec_best
    if full and concat:
        both = _pairs(full, concat)
        value, lo, hi = question_ratio({q: sum(c for _, c in v) for q, v in both.items()},
                                       {q: sum(f for f, _ in v) for q, v in both.items()},
                                       n_boot=n_boot, seed=seed, min_denom=1e-9)
        report.concat_preservation = QuestionEstimate(value=value, ci_low=lo, ci_high=hi, questions=len(both),
                                                      pairs=sum(len(v) for v in both.values()))
    covered = {
        k: (full[k], sharded[k])
        for k in full.keys() & sharded.keys()
        if (turn_recall(full[k]) or [None])[-1] == 1.0 and _cumulative(sharded[k]) == 1.0
    }
    judged = _judged_pairs(full, sharded)
    if judged:
        report.gap_judged = paired_difference(judged, n_boot=n_boot, seed=seed)
        report.judge_gap_difference, report.judge_gap_correlation = _judge_robustness(
            _pairs(full, sharded), judged, n_boot, seed
        )
    if full and sharded:
        report.full_coverage_share = len(covered) / max(1, len(full.keys() & sharded.keys()))
        report.gap_full_coverage = diff({k: v[0] for k, v in covered.items()}, {k: v[1] for k, v in covered.items()})
    return report


def gate_metrics(report: ShardedReport) -> dict[str, MetricValue]:
    """The gateable suite metrics of the report: sharded_gap and SHARDED's aptitude and
    unreliability (only those that have a value)."""
    out: dict[str, MetricValue] = {}
    if report.gap is not None and report.gap.value is not None:
        out["sharded_gap"] = MetricValue(
            value=report.gap.value, n=report.gap.pairs, ci_low=report.gap.ci_low, ci_high=report.gap.ci_high,
            per_run=list(report.gap_per_run),
        )
    sh = report.conditions.get("sharded")
    if sh is not None:
        for name in ("aptitude", "unreliability"):
            est: QuestionEstimate | None = getattr(sh, name)
            if est is not None and est.value is not None:
                # one value per session: it is computed over all of its runs
                out[name] = MetricValue(value=est.value, n=est.questions, ci_low=est.ci_low, ci_high=est.ci_high,
                                        per_run=[est.value])
    return out
