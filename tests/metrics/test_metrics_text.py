"""The one normaliser and the one abstention / unanswerable rule of the project
(metrics/text.py), shared by the metrics, the diversity measure and the generator's simulator."""

from __future__ import annotations

import pytest

from pytest_ragdive.metrics import diversity, lexical, text
from pytest_ragdive.metrics.text import (
    asserted_units,
    has_abstention,
    is_abstention,
    is_unanswerable,
    match_terms,
    stem,
)
from pytest_ragdive.run.users import simulator


def test_one_normaliser_and_one_unanswerable_rule() -> None:
    assert lexical.normalize_answer is text.normalize_answer
    assert diversity.normalize_question("Who directed The Film?") == text.normalize_answer("Who directed The Film?")
    assert simulator.is_unanswerable is text.is_unanswerable is lexical.is_unanswerable


@pytest.mark.parametrize(
    "ground_truth",
    [
        "I'm sorry, but I can't find anything about that in the documents.",
        "I am sorry I don't have any specific knowledge about who acts as a photographer.",
        "Sorry, I do not have that information at the moment.",
        "The documents do not include information on how long to consider adoption.",
        "This cannot be answered from the given information.",
        "not answerable from the document",
        "Not answerable: the document does not say.",
    ],
)
def test_unanswerable_ground_truths(ground_truth: str) -> None:
    assert is_unanswerable(ground_truth)


@pytest.mark.parametrize(
    "ground_truth",
    [
        "It is not answerable by phone, only by email.",
        "The documents do not specify jail sentences, but you can ask DCSS to enforce your support order.",
        "It was built in 1889.",
        "",
    ],
)
def test_answerable_ground_truths(ground_truth: str) -> None:
    assert not is_unanswerable(ground_truth)


def test_partial_answer_is_an_attempt_that_abstains() -> None:
    ans = "The documents do not specify jail sentences, but you can ask DCSS to enforce your order."
    assert not is_abstention(ans)
    assert has_abstention(ans)
    assert asserted_units(ans) == ["you can ask DCSS to enforce your order."]
    ans = "I don't have a specific sample setting. However, you are encouraged to study the images."
    assert not is_abstention(ans)
    assert asserted_units(ans) == ["you are encouraged to study the images."]


@pytest.mark.parametrize(
    "answer",
    [
        "I am sorry, I don't have any specific knowledge about air-to-air photography.",
        "I do not have specific information.",
        "Sorry! I can't find that in the help centre. Let me know if you have other questions.",
        "The documents do not provide specific information about that.",
    ],
)
def test_pure_abstentions(answer: str) -> None:
    assert is_abstention(answer)
    assert has_abstention(answer)
    assert asserted_units(answer) == []


def test_attempts_that_do_not_abstain() -> None:
    ans = "Refunds take 14 days."
    assert not is_abstention(ans) and not has_abstention(ans)


def test_match_terms_make_restatements_meet() -> None:
    assert stem("charges") == stem("charged") == stem("charging") == stem("charge")
    assert stem("stopped") == "stop"
    assert match_terms("All-Star game, four hours") == match_terms("all star games: 4 hours")
    assert match_terms("It doesn't cost much") == match_terms("it is not priced much")
    assert match_terms("approximately 5 days") == match_terms("about five days")
