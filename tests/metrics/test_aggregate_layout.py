"""aggregate reads each metric's values laid out flat (issue 28) and must give the very
numbers of reading conversation by conversation: the same sums in the same order, bit
for bit, with several runs, errored and missing conversations, unscored turns and
conversation-level metrics."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest

from pytest_ragdive.core.records import Conversation, Turn
from pytest_ragdive.core.stats import cluster_bootstrap, mean, percentile_interval
from pytest_ragdive.metrics.aggregate import aggregate

TURN_METRICS = ("correctness", "answer_f1", "recall_at_k")


def _reference(convs: list[Conversation], n_boot: int) -> dict[str, tuple]:  # type: ignore[type-arg]
    """Each metric's figures, conversation by conversation (the rule of metrics/aggregate.py)."""
    convs = sorted((c for c in convs if c.sharded is None), key=lambda c: (c.run, c.id))
    ok = [c for c in convs if c.error is None]
    runs = sorted({c.run for c in convs})
    keys = sorted({c.id for c in ok})
    out = {}
    for m in (*TURN_METRICS, "forgetfulness"):
        turn = m != "forgetfulness"
        vals = {id(c): ([t.scores.get(m) for t in c.turns] if turn else [c.scores.get(m)]) for c in ok}
        if not any(v is not None for vs in vals.values() for v in vs):
            continue
        per_run = [mean(v for c in ok if c.run == r for v in vals[id(c)]) for r in runs]
        by_idx: dict[int, list[float | None]] = defaultdict(list)
        by_type: dict[str, list[float | None]] = defaultdict(list)
        if turn:
            for c in ok:
                for t, v in zip(c.turns, vals[id(c)], strict=True):
                    by_idx[t.index].append(v)
                    by_type[t.question_type].append(v)
        clusters: list[list[float]] = [[] for _ in keys]
        for c in ok:
            clusters[keys.index(c.id)].extend(v for v in vals[id(c)] if v is not None)
        ci = (None, None)
        if len(keys) > 1:
            draws = cluster_bootstrap([[sum(v) for v in clusters]], [[len(v) for v in clusters]], n_boot=n_boot, seed=0)
            ci = percentile_interval(draws[0])
        out[m] = (mean(per_run), per_run, {str(k): mean(v) for k, v in sorted(by_idx.items())},
                  {k: mean(v) for k, v in sorted(by_type.items())}, ci)
    return out


def _conversations(rng: random.Random) -> list[Conversation]:
    out = []
    for run in range(rng.randint(1, 3)):
        for i in range(rng.randint(0, 25)):
            if run and rng.random() < 0.2:
                continue  # not run again
            turns = [
                Turn(rag_input="q", answer="a", index=t, question_type=rng.choice(["Initial", "Follow-up", "Single"]),
                     scores={m: None if rng.random() < 0.2 else rng.choice([rng.random(), 0.0, 1.0]) for m in TURN_METRICS})
                for t in range(rng.randint(0, 6))
            ]
            out.append(Conversation(id=f"c{i:02d}", run=run, turns=turns, error="boom" if rng.random() < 0.05 else None,
                                    scores={"forgetfulness": rng.choice([None, 0.0, 1.0])}))
    rng.shuffle(out)
    return out


@pytest.mark.parametrize("seed", range(40))
def test_the_flat_layout_gives_the_same_figures_bit_for_bit(seed: int) -> None:
    convs = _conversations(random.Random(seed))
    got = aggregate("core", convs, n_boot=50)
    want = _reference(convs, 50)
    assert set(want) <= set(got.metrics)
    for m, (value, per_run, per_idx, per_type, ci) in want.items():
        mv = got.metrics[m]
        assert (mv.value, mv.per_run, mv.per_turn_index, mv.per_question_type, (mv.ci_low, mv.ci_high)) == (
            value, per_run, per_idx, per_type, ci), m
