from __future__ import annotations

import factories
import pytest

from pytest_ragdive.core.records import Conversation, Turn
from pytest_ragdive.metrics.multiturn import FORGETFUL_FLAG, apply_forgetfulness_probe, probe_forgetfulness

GT1 = "Refunds are issued within 14 days to the original payment method."
GT2 = "Exchanges are free within 30 days for unworn shoes."
RIGHT1 = "Refunds are issued within 14 days to your original payment method."
RIGHT2 = "Exchanges are free within 30 days for unworn shoes."
WRONG = "Could you tell me which order you mean?"


def conversation(*turns: Turn) -> Conversation:
    return Conversation(id="c", turns=[factories.turn("Can I return shoes?", answer="Yes."), *turns])


def turn(index: int, answer: str | None, standalone: str | None, gt: str) -> Turn:
    return factories.turn("and?", index, ground_truth=gt, answer=answer, standalone_answer=standalone)


def test_forgetful_conversation() -> None:
    conv = conversation(
        turn(1, RIGHT1, RIGHT1, GT1),  # retained
        turn(2, WRONG, RIGHT2, GT2),  # forgetful: right alone, wrong in conversation
    )
    res = apply_forgetfulness_probe(conv)
    assert res.forgetful == [2]
    assert res.probed == [1, 2]
    assert res.standalone_correct == [1, 2]
    assert conv.scores["forgetfulness"] == 1.0
    assert conv.scores["context_retention"] == pytest.approx(0.5)
    assert conv.turns[2].flags == [FORGETFUL_FLAG]
    assert conv.turns[1].flags == []
    verdict = conv.verdicts["forgetfulness"]
    assert verdict.value == 1.0
    assert "turn 3" in verdict.reason  # turns are numbered from 1 for people (index 2)


def test_non_forgetful_conversation() -> None:
    conv = conversation(
        turn(1, RIGHT1, RIGHT1, GT1),
        # wrong both ways: a knowledge gap, not forgetfulness, and not stand-alone correct
        turn(2, WRONG, WRONG, GT2),
    )
    apply_forgetfulness_probe(conv)
    assert conv.scores["forgetfulness"] == 0.0
    assert conv.scores["context_retention"] == 1.0
    assert all(FORGETFUL_FLAG not in t.flags for t in conv.turns)
    assert conv.verdicts["forgetfulness"].value == 0.0
    assert "no forgetful turn" in conv.verdicts["forgetfulness"].reason


def test_first_turn_is_not_probed() -> None:
    conv = Conversation(
        id="c",
        turns=[
            Turn(index=0, rag_input="q", ground_truth=GT1, answer=WRONG, standalone_answer=RIGHT1),
            turn(1, RIGHT2, RIGHT2, GT2),
        ],
    )
    res = probe_forgetfulness(conv)
    assert res.probed == [1]
    assert res.forgetfulness == 0.0


def test_single_turn_conversation_is_not_applicable() -> None:
    conv = Conversation(id="c", turns=[Turn(rag_input="q", ground_truth=GT1, answer=WRONG, standalone_answer=RIGHT1)])
    apply_forgetfulness_probe(conv)
    assert conv.scores["forgetfulness"] is None
    assert conv.scores["context_retention"] is None
    assert "forgetfulness" not in conv.verdicts


def test_unprobed_turns_give_none() -> None:
    conv = conversation(
        turn(1, WRONG, None, GT1),  # no stand-alone answer
        turn(2, WRONG, RIGHT2, ""),  # no ground truth
        turn(3, None, RIGHT2, GT2),  # not run
    )
    res = apply_forgetfulness_probe(conv)
    assert res.probed == []
    assert conv.scores["forgetfulness"] is None
    assert conv.scores["context_retention"] is None
    assert conv.verdicts["forgetfulness"].value is None


def test_no_standalone_correct_turn_is_not_scored() -> None:
    # nothing the target knows stand-alone: nothing to forget, so n/a (not "not forgetful")
    conv = conversation(turn(1, WRONG, WRONG, GT1))
    res = apply_forgetfulness_probe(conv)
    assert res.forgetfulness is None
    assert res.forgotten_turn_share is None
    assert res.context_retention is None
    assert conv.scores["forgetfulness"] is None and conv.scores["forgotten_turn_share"] is None
    assert "not scored" in conv.verdicts["forgetfulness"].reason


def test_forgotten_turn_share_moves_when_a_forgetful_bot_forgets_more() -> None:
    # the binary verdict saturates at 1.0; the share of eligible turns forgotten does not
    some = conversation(turn(1, RIGHT1, RIGHT1, GT1), turn(2, WRONG, RIGHT2, GT2))
    more = conversation(turn(1, WRONG, RIGHT1, GT1), turn(2, WRONG, RIGHT2, GT2))
    a, b = apply_forgetfulness_probe(some), apply_forgetfulness_probe(more)
    assert a.forgetfulness == b.forgetfulness == 1.0
    assert a.forgotten_turn_share == pytest.approx(0.5)
    assert b.forgotten_turn_share == 1.0
    assert "2 of 2 eligible turns" in b.reason
    # eligible turns only: a turn wrong stand-alone is neither forgotten nor retained
    gap = conversation(turn(1, WRONG, RIGHT1, GT1), turn(2, WRONG, WRONG, GT2))
    assert probe_forgetfulness(gap).forgotten_turn_share == 1.0


def test_unanswerable_turn_uses_abstention_as_correct() -> None:
    # stand-alone the target abstains (correct); in the conversation it makes something up
    conv = conversation(turn(1, "Yes, for 90 days.", "I can't find that in the help centre.", "Not answerable"))
    res = probe_forgetfulness(conv)
    assert res.forgetful == [1]


def test_probe_is_idempotent() -> None:
    conv = conversation(turn(1, WRONG, RIGHT1, GT1))
    apply_forgetfulness_probe(conv)
    first = conv.model_dump()
    apply_forgetfulness_probe(conv)
    assert conv.model_dump() == first
    assert conv.turns[1].flags == [FORGETFUL_FLAG]


def test_stale_forgetful_flag_is_removed() -> None:
    conv = conversation(turn(1, RIGHT1, RIGHT1, GT1))
    conv.turns[1].flags = ["other", FORGETFUL_FLAG]
    apply_forgetfulness_probe(conv)
    assert conv.turns[1].flags == ["other"]
