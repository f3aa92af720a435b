"""Every production signal (pytest_ragdive.online.signals), pinned on hand-made requests."""

from __future__ import annotations

import pytest

from pytest_ragdive.core.records import Context, TargetResponse, Turn
from pytest_ragdive.metrics.grounding import faithfulness
from pytest_ragdive.metrics.offline import score_turn
from pytest_ragdive.online.signals import RequestSignals, detect_language, is_hedged, request_signals

REFUND = Context(id="refund#0", doc_id="refund-policy", text="Hardware can be returned within 30 days for a full refund.", score=7.5)
SHIP = Context(id="ship#0", doc_id="shipping", text="Orders ship within two business days.", score=2.25)
HISTORY = [
    {"role": "system", "content": "be nice"},
    {"role": "user", "content": "Can I return my hub?"},
    {"role": "assistant", "content": "Yes."},
    {"role": "user", "content": "Within how many days?"},
]


def test_a_grounded_cited_answer() -> None:
    resp = TargetResponse(
        answer="Hardware can be returned within 30 days for a full refund.", contexts=[REFUND, SHIP], citations=["refund-policy"]
    )
    s = request_signals(HISTORY, resp, retrieval_s=0.01, generation_s=0.02, total_s=0.035)
    assert s == RequestSignals(
        n_contexts=2,
        empty_retrieval=False,
        top_score=7.5,
        response_chars=len(resp.answer),
        has_citation=True,
        hedging=False,
        abstained=False,
        language="en",
        grounding=1.0,
        user_turns=2,
        retrieval_s=0.01,
        generation_s=0.02,
        total_s=0.035,
    )


def test_an_empty_retrieval_abstention() -> None:
    resp = TargetResponse(answer="I can't find that in the help centre.")
    s = request_signals([{"role": "user", "content": "xyzzy?"}], resp)
    assert (s.n_contexts, s.empty_retrieval, s.top_score) == (0, True, None)
    assert s.has_citation is False
    assert s.abstained is True
    assert s.grounding is None  # abstentions are not graded, as offline
    assert (s.retrieval_s, s.generation_s, s.total_s) == (None, None, None)
    assert s.user_turns == 1


def test_an_ungrounded_answer_without_context_scores_zero() -> None:
    s = request_signals([{"role": "user", "content": "q"}], TargetResponse(answer="Refunds take ninety weeks."))
    assert s.grounding == 0.0
    assert s.empty_retrieval is True


def test_grounding_is_the_offline_faithfulness() -> None:
    answer = "Hardware can be returned within 30 days. Shipping to Mars costs 900 euros."
    resp = TargetResponse(answer=answer, contexts=[REFUND, SHIP])
    s = request_signals([{"role": "user", "content": "q"}], resp)
    # issue 11: graded (terms, not sentences): 5 of 5 terms of the first sentence supported,
    # 1 of 5 of the second ("ship") -> 6/10
    assert s.grounding == faithfulness(answer, [REFUND, SHIP]) == pytest.approx(0.6)


def test_top_score_is_the_highest_score_and_ignores_unscored_contexts() -> None:
    unscored = Context(id="x", text="Orders ship fast.")
    resp = TargetResponse(answer="a", contexts=[SHIP, unscored, REFUND])
    assert request_signals([], resp).top_score == 7.5
    assert request_signals([], TargetResponse(answer="a", contexts=[unscored])).top_score is None


@pytest.mark.parametrize(
    ("answer", "citations", "cited"),
    [
        ("Returns take 30 days [refund-policy].", [], True),  # inline marker
        ("Returns take 30 days.", ["refund-policy"], True),  # structured citation
        ("Returns take 30 days.", [], False),
        ("See [the docs](https://example.com).", [], False),  # a markdown link is no citation
        ("Returns take 30 days.", ["  "], False),  # blank ids do not count
    ],
)
def test_citation_presence_is_the_offline_citation_rule(answer: str, citations: list[str], cited: bool) -> None:
    s = request_signals([{"role": "user", "content": "q"}], TargetResponse(answer=answer, citations=citations))
    assert s.has_citation is cited
    # the same rule as the offline citation_rate, for a turn that expects that citation
    turn = Turn(rag_input="q", answer=answer, citations=citations, expected_citations=["refund-policy"])
    assert (score_turn(turn)["citation_rate"] == 1.0) is cited


@pytest.mark.parametrize(
    ("answer", "hedged"),
    [
        ("It is probably 30 days.", True),
        ("I'm not sure, but returns may be accepted.", True),
        ("I think so.", True),
        ("Maybe.", True),
        ("This needs to be confirmed by support.", True),
        ("Returns are accepted within 30 days.", False),
        ("The Mighty plan is unlikely to change.", False),  # whole words only
    ],
)
def test_hedging(answer: str, hedged: bool) -> None:
    assert is_hedged(answer) is hedged
    assert request_signals([], TargetResponse(answer=answer)).hedging is hedged


def test_response_length_counts_characters() -> None:
    assert request_signals([], TargetResponse(answer="héllo")).response_chars == 5
    assert request_signals([], TargetResponse(answer="")).response_chars == 0


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("The refund is paid to your card within five days.", "en"),
        ("Die Rückerstattung ist nicht möglich, wenn Sie das Gerät nicht zurücksenden.", "de"),
        ("Le remboursement est possible pour les achats dans la boutique.", "fr"),
        ("El reembolso es posible para las compras en la tienda.", "es"),
        ("환불은 30일 이내에 가능합니다.", "ko"),
        ("返品は30日以内に可能です。", "ja"),
        ("退款在三十天内可以办理。", "zh"),
        ("Возврат возможен в течение 30 дней.", "ru"),
        ("E429 42 !!", "und"),
        ("", "und"),
    ],
)
def test_language(text: str, lang: str) -> None:
    assert detect_language(text) == lang


def test_signals_are_pure() -> None:
    resp = TargetResponse(answer="Returns take 30 days [refund-policy].", contexts=[REFUND])
    before = resp.model_dump()
    history = [dict(m) for m in HISTORY]
    assert request_signals(history, resp) == request_signals(history, resp)
    assert resp.model_dump() == before and history == HISTORY
