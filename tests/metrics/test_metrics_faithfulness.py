"""The graded offline rules of issue 11, pinned on hand-made answers with the lexical
evidence alone (its arithmetic of term shares): faithfulness (partial answers,
paraphrases, answers grounded only in an earlier turn), correctness (graded coverage of
the reference, beside faithfulness since issue 27) and abstentions. The semantic
evidence is pinned in test_metrics_grounding.py."""

from __future__ import annotations

import pytest

from pytest_ragdive.core.records import Context, Conversation, Turn
from pytest_ragdive.metrics import grounding
from pytest_ragdive.metrics.grounding import LEXICAL_COVERAGE, LEXICAL_SUPPORT
from pytest_ragdive.metrics.offline import (
    LEXICAL_GROUNDING,
    conversation_support,
    score_conversation,
    user_statements,
)


def faithfulness(answer: str, contexts: list[Context]) -> float | None:
    return grounding.faithfulness(answer, contexts, rule=LEXICAL_SUPPORT)


def grounded_units(answer: str, contexts: list[Context]) -> list[str]:
    return grounding.grounded_units(answer, contexts, LEXICAL_SUPPORT)


def correctness(answer: str, gt: str) -> float | None:
    return grounding.correctness(answer, gt, LEXICAL_COVERAGE)


def coverage(answer: str, gt: str) -> float | None:
    return grounding.coverage(answer, gt, LEXICAL_COVERAGE)

CTX = [
    Context(id="p#1", doc_id="plans", text="The Pro plan costs $12 per month and includes 30 days of video history."),
    Context(id="r#1", doc_id="refunds", text="Refunds are issued within 14 days to the original payment method."),
]

# ------------------------------------------------------------------ faithfulness


def test_long_unsupported_sentence_weighs_more_than_a_short_one() -> None:
    supported = "Refunds are issued within 14 days."  # 5 terms, all supported
    short = faithfulness(f"{supported} Cards expire.", CTX)  # + 2 unsupported terms
    # + 8 terms (gift card buy abroad expire after 9 month), only "month" in a context
    long = faithfulness(f"{supported} Gift cards bought abroad expire after nine months.", CTX)
    assert short == pytest.approx(5 / 7)
    assert long == pytest.approx(6 / 13)
    assert long < short


def test_a_partly_supported_sentence_gets_partial_credit() -> None:
    # refund issu within 14 day (supported) + weekend (not): 5 of 6
    assert faithfulness("Refunds are issued within 14 days, weekends too.", CTX) == pytest.approx(5 / 6)


def test_paraphrase_is_not_punished() -> None:
    source = faithfulness("The Pro plan costs $12 per month and includes 30 days of video history.", CTX)
    # reordered, synonyms from the general list (priced = cost, contains = include, monthly =
    # month), a number word: fully supported
    para = "Thirty days of video history are contained in the Pro plan, which is priced at $12 monthly."
    assert source == 1.0
    assert faithfulness(para, CTX) == 1.0
    # a synonym outside the list ("inside" for "within") costs only its own term: 7 of 8
    text = "Inside fourteen days, refunds are issued to the original payment method."
    assert faithfulness(text, CTX) == pytest.approx(7 / 8)


def test_partial_answer_is_scored_on_what_it_asserts() -> None:
    # the abstaining clause is not scored; the rest is
    ans = "The documents do not specify gift cards, but refunds are issued within 14 days."
    assert faithfulness(ans, CTX) == 1.0
    ans = "The documents do not specify gift cards, but gift cards never expire."
    assert faithfulness(ans, CTX) == pytest.approx(0.0)


def test_apology_is_a_pure_abstention_and_asserts_nothing_false() -> None:
    assert faithfulness("I am sorry, I don't have any specific knowledge about gift cards.", CTX) == 1.0
    assert faithfulness("Sorry, I do not have that information at the moment.", CTX) == 1.0


def test_answer_grounded_only_in_an_earlier_turn() -> None:
    earlier = Turn(index=0, rag_input="How long do refunds take?", answer="Refunds are issued within 14 days.", contexts=CTX[1:])
    later = Turn(
        index=1,
        rag_input="I'm on the Pro plan. And what does Pro cost?",
        answer="Refunds are issued within 14 days. You are on the Pro plan.",
        contexts=CTX[:1][:0] + [Context(id="x", text="Lumio ships to Canada.")],
    )
    conv = Conversation(id="c", turns=[earlier, later])
    support = conversation_support(conv.turns, 1, LEXICAL_SUPPORT)
    assert "Refunds are issued within 14 days." in support  # the earlier grounded answer
    assert "I'm on the Pro plan." in support  # the user's statement...
    assert not any(s.endswith("?") for s in support)  # ...but not their questions
    score_conversation(conv, grounding=LEXICAL_GROUNDING)
    assert later.scores["faithfulness"] == 1.0
    assert later.scores["faithfulness_strict"] == 0.0


def test_an_ungrounded_earlier_answer_grounds_nothing_later() -> None:
    assert grounded_units("Gift cards never expire.", CTX) == []
    assert grounded_units("Refunds are issued within 14 days. Gift cards never expire.", CTX) == [
        "Refunds are issued within 14 days."
    ]


def test_echoing_the_question_as_a_fact_is_not_grounded() -> None:
    assert user_statements("Does the Pro plan include single sign-on?") == []
    turn = Turn(rag_input="Does the Pro plan include single sign-on?", answer="The Pro plan includes single sign-on.", contexts=[])
    conv = Conversation(id="c", turns=[turn])
    score_conversation(conv, grounding=LEXICAL_GROUNDING)
    assert turn.scores["faithfulness"] == pytest.approx(0.0)


# ------------------------------------------------------------------ correctness

GT = "Refunds are issued within 14 days to the original payment method."  # 8 terms


def test_correctness_is_coverage_beside_faithfulness() -> None:
    full = "Refunds are issued within 14 days to the original payment method."
    assert correctness(full, GT) == 1.0
    # half the reference covered
    assert correctness("Refunds are issued within 14 days.", GT) == pytest.approx(5 / 8)
    # issue 27: the whole reference plus an invented detail is complete (correctness 1.0, on
    # 8bb042a coverage x faithfulness = 0.6) and caught by faithfulness, gated beside it
    invented = f"{full} You also get a bonus voucher worth fifty dollars."
    s = faithfulness(invented, CTX)
    assert s is not None and s < 1.0
    assert correctness(invented, GT) == 1.0


def test_coverage_of_a_long_reference_is_capped() -> None:
    # words without digits (a term with a digit is a number, a key fact of its own: keyfacts.py)
    words = [f"zq{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(30)]
    long_gt = " ".join(words)
    assert coverage(" ".join(words[:12]), long_gt) == 1.0
    assert coverage(" ".join(words[:6]), long_gt) == pytest.approx(0.5)


def test_abstention_costs_correctness_only_when_the_question_is_answerable() -> None:
    assert correctness("I can't find that in the help centre.", GT) == 0.0
    apology_gt = "I'm sorry, but I can't find anything about gift cards in the documents."
    assert correctness("I can't find that in the help centre.", apology_gt) == 1.0
    assert correctness("Gift cards never expire.", apology_gt) == 0.0
    # a partial answer that says it cannot answer the asked part, on an unanswerable question
    assert correctness("The documents do not mention gift cards, but refunds take 14 days.", apology_gt) == 1.0


def test_partial_answer_covers_with_what_it_asserts() -> None:
    ans = "I don't have information about the original payment method, but refunds are issued within 14 days."
    # "original payment method" only appears in the abstaining clause: not credited
    assert correctness(ans, GT) == pytest.approx(5 / 8)


def test_restated_reference_counts_as_covered() -> None:
    assert correctness("Within fourteen days refunds get issued to the original method of payment.", GT) == 1.0
