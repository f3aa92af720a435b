from __future__ import annotations

import pytest

from pytest_ragdive.core.records import Context
from pytest_ragdive.metrics import grounding
from pytest_ragdive.metrics.lexical import (
    answer_f1,
    citation_markers,
    content_tokens,
    context_recall,
    exact_match,
    is_abstention,
    is_unanswerable,
    normalize_answer,
    split_sentences,
    strip_citations,
)

# ---------------------------------------------------------------- normalisation


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The  Cat, sat!", "cat sat"),
        ("An apple a day", "apple day"),
        ("Don't   PANIC.\n", "dont panic"),
        ("theatre anthem", "theatre anthem"),  # articles only as whole words
        ("“Quoted” — text…", "quoted text"),
        ("", ""),
    ],
)
def test_normalize_answer(text: str, expected: str) -> None:
    assert normalize_answer(text) == expected


def test_content_tokens_drop_stopwords_keep_negation_and_numbers() -> None:
    assert content_tokens("The refund is NOT issued within 30 days to you.") == [
        "refund",
        "not",
        "issued",
        "within",
        "30",
        "days",
    ]


def test_split_sentences() -> None:
    text = "Returns take 30 days. E.g. shoes, e.g. hats! Is it 2.5 kg? Yes.\n- first bullet\n\n- second"
    assert split_sentences(text) == [
        "Returns take 30 days.",
        "E.g. shoes, e.g. hats!",
        "Is it 2.5 kg?",
        "Yes.",
        "- first bullet",
        "- second",
    ]


def test_citation_markers_and_strip() -> None:
    text = "Refunds take 5 days [doc-1]. See [kb/2, kb/3] and [a link](http://x.example)."
    assert citation_markers(text) == ["doc-1", "kb/2", "kb/3"]
    assert "doc-1" not in strip_citations(text)
    assert "[a link]" in strip_citations(text)


# ---------------------------------------------------------------- F1 / EM


def test_answer_f1_hand_computed() -> None:
    # on match terms (issue 11: stopwords such as "on" no longer count):
    # pred: cat sat mat (3), gold: cat sat (2); common 2 -> P=2/3, R=1, F1=0.8
    assert answer_f1("The cat sat on the mat", "the cat sat") == pytest.approx(0.8)
    # pred: cat sat (2), gold: cat sat down (3), P=1, R=2/3 -> F1 = 0.8
    assert answer_f1("the cat sat", "a cat sat down") == pytest.approx(0.8)


def test_answer_f1_counts_duplicates_as_multiset() -> None:
    # pred: "red red" vs gold "red blue": common = min(2,1) = 1, P=1/2, R=1/2, F1=1/2
    assert answer_f1("red red", "red blue") == pytest.approx(0.5)


def test_answer_f1_edge_cases() -> None:
    assert answer_f1("", "") == 1.0
    assert answer_f1("", "something") == 0.0
    assert answer_f1("banana", "apple") == 0.0
    # citation markers are not answer content
    assert answer_f1("Thirty days [doc-7]", "thirty days") == 1.0


def test_exact_match() -> None:
    assert exact_match("The Answer!", "answer") == 1.0
    assert exact_match("the answer is", "answer") == 0.0


def test_courtesy_costs_answer_f1_and_exact_match_nothing() -> None:
    # issue 27: on 8bb042a a "Happy to help!" prefix cost answer_f1 (1.0 -> 0.67) and failed the gate
    gt = "Refunds are issued within 14 days."
    plain = "Refunds are issued within 14 days."
    for polite in (f"Happy to help! {plain}", f"{plain} Let me know if you have any other questions."):
        assert answer_f1(polite, gt) == answer_f1(plain, gt) == 1.0
        assert exact_match(polite, gt) == 1.0


def test_f1_and_em_on_unanswerable_reward_abstention() -> None:
    assert answer_f1("I don't know.", "Not answerable from the document") == 1.0
    assert exact_match("I can't find that in the help centre.", "Not answerable") == 1.0
    assert answer_f1("It is 30 days.", "Not answerable") == 0.0


# ---------------------------------------------------------------- abstention


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "   ",
        "I can't find that in the help centre.",
        "Sorry! I couldn't find anything about that.",
        "I don't know.",
        "I don’t have any information about that.",
        "That is not in the help centre.",
        "This isn't covered in the provided documents.",
        "I cannot answer that question.",
        "The documents don't mention shipping to Mars.",
        "I'm unable to find that [doc-1].",
        "Not answerable.",
        "Sorry!",  # only fillers: no answer at all
        "[doc-1]",  # only a citation marker
    ],
)
def test_is_abstention_true(answer: str) -> None:
    assert is_abstention(answer) is True


@pytest.mark.parametrize(
    "answer",
    [
        "Refunds are processed within 5 business days.",
        "We cannot provide refunds on opened items.",
        "The return window is 30 days. I can't find anything about exchanges.",
        "No.",
    ],
)
def test_is_abstention_false(answer: str) -> None:
    assert is_abstention(answer) is False


def test_is_unanswerable() -> None:
    assert is_unanswerable("Not answerable: the document does not say.")
    assert is_unanswerable("  NOT ANSWERABLE")
    assert not is_unanswerable("It is not answerable by phone, only by email.")
    assert not is_unanswerable("")


# ---------------------------------------------------------------- correctness, faithfulness (lexical rule)
# the lexical evidence alone (faithfulness_backend = "lexical"): the arithmetic of the term shares


def correctness(answer: str, gt: str) -> float | None:
    return grounding.correctness(answer, gt, grounding.LEXICAL_COVERAGE)


def faithfulness(answer: str, contexts: list) -> float | None:
    return grounding.faithfulness(answer, contexts, rule=grounding.LEXICAL_SUPPORT)


GT = "Refunds are issued within 14 days to the original payment method."
# GT content tokens: refunds issued within 14 days original payment method (8)


def test_correctness_is_graded_coverage() -> None:
    # issue 11: graded coverage instead of a yes/no at 60%
    # 5 of 8
    assert correctness("Refunds issued within 14 days.", GT) == pytest.approx(5 / 8)
    # 4 of 8
    assert correctness("Refunds within 14 days.", GT) == pytest.approx(4 / 8)
    assert correctness("alpha beta gamma", "alpha beta gamma delta epsilon") == pytest.approx(3 / 5)
    assert correctness("alpha beta", "alpha beta gamma delta epsilon") == pytest.approx(2 / 5)


def test_correctness_abstention_and_unanswerable() -> None:
    # an abstention that happens to repeat the question's words is still wrong
    assert correctness("I can't find refunds issued within 14 days original payment method.", GT) == 0.0
    assert correctness("I don't know.", "Not answerable") == 1.0
    assert correctness("", "Not answerable") == 1.0
    assert correctness("Refunds take 14 days.", "Not answerable") == 0.0


def test_correctness_none_without_ground_truth() -> None:
    assert correctness("anything", "") is None


def test_correctness_stopword_only_ground_truth_uses_all_tokens() -> None:
    assert correctness("Yes, you can.", "you can") == 1.0
    assert correctness("Maybe later.", "you can") == 0.0


# ---------------------------------------------------------------- faithfulness

CTX = [
    Context(id="c1", text="Refunds are issued within 14 days to the original payment method."),
    Context(id="c2", text="Shipping to Canada costs 10 dollars and takes a week."),
]


def test_faithfulness_is_term_weighted_support() -> None:
    # issue 11: graded support weighted by terms, not a count of sentences over 60%
    answer = (
        "Refunds are issued within 14 days. "  # 5 terms, all in c1
        "Shipping to Canada costs 10 dollars. "  # 5 terms, all in c2
        "Gift cards never expire."  # 4 terms (gift card not expire), none supported
    )
    assert faithfulness(answer, CTX) == pytest.approx(10 / 14)


def test_faithfulness_uses_the_union_of_contexts() -> None:
    # issue 11 (measured on rated answers): support is judged against all retrieved contexts
    assert faithfulness("Refunds issued Canada costs dollars.", CTX) == 1.0
    assert faithfulness("Refunds issued within Canada costs dollars week.", CTX) == 1.0


def test_faithfulness_accepts_strings_and_strips_citations() -> None:
    assert faithfulness("Refunds are issued within 14 days [c1].", [c.text for c in CTX]) == 1.0


def test_faithfulness_abstention_and_zero_cases() -> None:
    # issue 11: a pure abstention asserts nothing unsupported (it costs correctness instead)
    assert faithfulness("I can't find that in the help centre.", CTX) == 1.0
    assert faithfulness("Refunds are issued within 14 days.", []) == 0.0
    # issue 27: a reply with nothing of substance is no answer, not a perfect faithfulness
    assert faithfulness("", CTX) is None
    assert faithfulness("Let me know if you have any other questions.", CTX) is None


# ---------------------------------------------------------------- context recall


def test_context_recall() -> None:
    # GT content tokens: 8; c2 holds none of them, c1 all
    assert context_recall(GT, CTX) == 1.0
    assert context_recall(GT, CTX[1:]) == 0.0
    # "refunds issued within 14 days shipping canada" -> c1 covers 5, c2 covers 2 (union 7 of 7)
    assert context_recall("Refunds issued within 14 days, shipping to Canada.", CTX) == 1.0
    # 5 of 6 tokens: "gift" missing
    assert context_recall("Gift refunds issued within 14 days.", CTX) == pytest.approx(5 / 6)


def test_context_recall_none_cases() -> None:
    assert context_recall("", CTX) is None
    assert context_recall("Not answerable", CTX) is None
    assert context_recall(GT, []) == 0.0
