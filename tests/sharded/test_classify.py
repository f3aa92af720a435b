"""The offline response-class rule, answer extraction and answer scoring."""

from __future__ import annotations

import pytest

from pytest_ragdive.sharded.classify import classify_response, extract_answer, score_answer

CASES = [
    ("The Business plan allows 600 requests per minute.\nAnswer: 600 requests per minute", "answer_attempt"),
    ("**Answer:** Rotterdam", "answer_attempt"),
    ("", "missing"),
    ("   [doc-1] ...", "missing"),
    (None, "missing"),
    ("I can't find that in the help centre.", "refusal"),
    ("Sorry, I cannot help with that request.", "refusal"),
    ("Which plan are you on?", "clarification"),
    ("Sure. Do you mean the Cam or the Sensor?", "clarification"),
    ("Which plan are you on? And is it billed monthly?", "interrogation"),
    ("Is the order to the EU? Which carrier did you choose? When did you order?", "interrogation"),
    ("It depends on your plan: the limit is 60 or 600 requests per minute.", "hedge"),
    ("That could be error H101 or possibly H204.", "hedge"),
]


@pytest.mark.parametrize(("reply", "expected"), CASES)
def test_offline_rule(reply: str | None, expected: str) -> None:
    assert classify_response(reply) == expected


def test_every_class_is_pinned_at_least_twice() -> None:
    cases = [*CASES, ("Rate limits protect the API and differ by plan.", "discussion"),
             ("Lumio has four plans with different limits.", "discussion")]
    counts: dict[str, int] = {}
    for reply, expected in cases:
        got = classify_response(reply, require_answer_line=expected == "discussion")
        assert got == expected, reply
        counts[got] = counts.get(got, 0) + 1
    assert set(counts) == {"answer_attempt", "clarification", "interrogation", "discussion", "hedge", "refusal", "missing"}
    assert min(counts.values()) >= 2


def test_unmarked_plain_answer_is_an_attempt_unless_answers_are_marked() -> None:
    reply = "The Business plan allows 600 requests per minute."
    assert classify_response(reply) == "answer_attempt"
    assert classify_response(reply, require_answer_line=True) == "discussion"


def test_extract_takes_the_last_answer_line_else_the_reply() -> None:
    assert extract_answer("Let me think.\nAnswer: 60\nAnswer: 600 [api-rate-limits]") == "600"
    assert extract_answer("Orders ship from Rotterdam [shipping-options].") == "Orders ship from Rotterdam ."
    assert extract_answer(None) == ""


def test_score_is_the_best_over_answer_and_aliases() -> None:
    f1, em = score_answer("1 year", ["1-year", "1 year"])
    assert (f1, em) == (1.0, 1.0)
    f1, em = score_answer("The Business plan allows 600 requests per minute", ["600"])
    assert em == 0.0 and f1 == pytest.approx(2 * (1 / 7) / (1 / 7 + 1))  # "the" is dropped: 7 tokens
    assert score_answer("60", ["600"]) == (0.0, 0.0)
    assert score_answer("anything", []) == (0.0, 0.0)
