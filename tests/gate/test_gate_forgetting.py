"""The gate on a bot that already forgets: the binary verdict saturates, the share of
turns forgotten does not (issue 31)."""

from __future__ import annotations

import factories

from pytest_ragdive.core.records import Conversation, Turn
from pytest_ragdive.gate.rows import check
from pytest_ragdive.metrics.aggregate import aggregate
from pytest_ragdive.metrics.multiturn import apply_forgetfulness_probe

GATE = {"forgetfulness": 0.05, "forgotten_turn_share": 0.05}
FACTS = [
    "Refunds are issued within 14 days to the original payment method.",
    "Exchanges are free within 30 days for unworn shoes.",
    "Gift cards never expire and can be used online.",
]
WRONG = "Could you tell me which order you mean?"


def conv(cid: str, forgotten: int, standalone_right: bool = True) -> Conversation:
    """Three follow-ups, the first ``forgotten`` answered wrongly in the conversation."""
    turns = [Turn(index=0, rag_input="Can I return shoes?", answer="Yes.")]
    for i, fact in enumerate(FACTS, start=1):
        turns.append(Turn(index=i, rag_input="and?", standalone_question=f"q{i}?", ground_truth=fact,
                          answer=WRONG if i <= forgotten else fact,
                          standalone_answer=fact if standalone_right else WRONG))
    c = Conversation(id=cid, turns=turns)
    apply_forgetfulness_probe(c)
    return c


def gate_rows(base: list[Conversation], now: list[Conversation]) -> dict[str, str]:
    baseline = factories.baseline_of(base, GATE)
    rows = check({"core": aggregate("core", now, n_boot=10)}, baseline, GATE, method="band")
    return {r.metric: r.verdict for r in rows}


def test_a_bot_that_forgets_more_fails_on_the_share() -> None:
    # healthy: every conversation already forgets one follow-up of three (verdict 1.0)
    base = [conv(f"c{i}", 1) for i in range(7)]
    now = [conv(f"c{i}", 3) for i in range(7)]  # history dropped: every follow-up forgotten
    verdicts = gate_rows(base, now)
    assert verdicts["forgetfulness"] == "pass"  # saturated: 1.0 -> 1.0
    assert verdicts["forgotten_turn_share"] == "regression"  # 1/3 -> 1


def test_the_same_bot_passes() -> None:
    base = [conv(f"c{i}", 1) for i in range(7)]
    assert set(gate_rows(base, [conv(f"c{i}", 1) for i in range(7)]).values()) == {"pass"}


def test_nothing_answered_is_no_data_not_an_improvement() -> None:
    base = [conv(f"c{i}", 1) for i in range(7)]
    broken = [conv(f"c{i}", 3, standalone_right=False) for i in range(7)]  # retrieval broke
    assert all(c.scores["forgetfulness"] is None for c in broken)
    verdicts = gate_rows(base, broken)
    assert verdicts == {"forgetfulness": "no data", "forgotten_turn_share": "no data"}
