"""Correctness checks the reference's key facts: numbers with their units, names and
negations must be present and not contradicted (issue 31)."""

from __future__ import annotations

import pytest

from pytest_ragdive.metrics.grounding import CORRECTNESS_THRESHOLD, correctness
from pytest_ragdive.metrics.keyfacts import key_check

DEPOSIT = "The deposit for a city bike is 150 euros."


def test_a_wrong_number_is_not_correct() -> None:
    # the case: most words shared (city bike, euros), the number wrong: it scored 0.6
    wrong = correctness("A city bike costs 4 euros per hour or 18 euros per day.", DEPOSIT)
    assert wrong is not None and wrong < CORRECTNESS_THRESHOLD
    assert wrong == 0.0
    assert correctness("The deposit for a city bike is 150 euros.", DEPOSIT) == 1.0


@pytest.mark.parametrize("answer", [
    "You pay a 150 euro deposit for a city bike.",
    "A city bike needs a deposit of 150 euros.",
])
def test_the_right_number_in_other_words_stays_correct(answer: str) -> None:
    value = correctness(answer, DEPOSIT)
    assert value is not None and value >= CORRECTNESS_THRESHOLD


def test_a_number_needs_its_unit() -> None:
    check = key_check(DEPOSIT, ("The deposit for a city bike is 150 km.",))
    assert check.missing == ("150 euro",)
    # a sign stuck to the number is its unit, either way round
    assert key_check("The Pro plan costs $19 a month.", ("Pro is 19 dollars per month.",)).missing == ()
    assert key_check(DEPOSIT, ("The city bike deposit is €150.",)).missing == ()
    assert key_check("Pro costs $19.", ("Pro costs 19 euros.",)).missing == ("19 dollar",)


def test_a_negation_must_not_be_flipped() -> None:
    ref = "The deposit is refundable within 14 days."
    flipped = correctness("The deposit is not refundable within 14 days.", ref)
    assert flipped == 0.0
    assert key_check(ref, ("The deposit is not refundable within 14 days.",)).contradicted
    dropped = correctness("Gift cards expire.", "Gift cards never expire.")
    assert dropped is not None and dropped < CORRECTNESS_THRESHOLD
    assert correctness("Gift cards do not expire.", "Gift cards never expire.") == 1.0


def test_a_missing_name_costs_its_fact() -> None:
    ref = "Single sign-on is included in Lumio Enterprise."
    assert key_check(ref, ("Single sign-on is included in the Pro plan.",)).missing == ("enterpris", "lumio")
    value = correctness("Single sign-on is included in the Pro plan.", ref)
    assert value is not None and value < CORRECTNESS_THRESHOLD


def test_a_fact_without_key_terms_is_covered_as_before() -> None:
    ref = "Refunds go back to the original payment method."
    assert key_check(ref, ("Refunds go back to the card you paid with.",)).share == 1.0


DAY_PASS = "A day pass for all zones costs 14 euros."
HEDGE = "As far as I can tell from our published information, "


def test_a_rewording_inside_a_hedge_that_keeps_the_key_facts_stays_correct() -> None:
    # "costs" -> "comes to" inside a hedging sentence: the sentence's embedding is diluted by
    # the hedge, the stretch after the comma states the fact (grounding.clause_windows)
    plain = correctness(HEDGE + "a day pass for all zones costs 14 euros.", DAY_PASS)
    reworded = correctness(HEDGE + "a day pass for all zones comes to 14 euros.", DAY_PASS)
    assert plain == 1.0
    assert reworded is not None and reworded >= 0.97
    ticket = "A single ticket within zone A costs 3.20 euros."
    value = correctness(HEDGE + "a single ticket inside zone A comes to 3.20 euros.", ticket)
    assert value is not None and value >= 0.95


def test_a_wrong_number_inside_a_hedge_is_still_not_correct() -> None:
    assert correctness(HEDGE + "a day pass for all zones comes to 28 euros.", DAY_PASS) == 0.0
    assert correctness(HEDGE + "a day pass for all zones costs 28 euros.", DAY_PASS) == 0.0
    value = correctness(HEDGE + "a day pass for zone A costs 14 euros, and a week pass 40 euros.",
                        "A week pass costs 45 euros.")
    assert value is not None and value < CORRECTNESS_THRESHOLD


def test_the_determiner_no_negates_its_noun_not_the_predicate() -> None:
    free = "Rooms can be cancelled free of charge up to 2 hours before the start."
    idiom = "Rooms are booked in the app and are able to be cancelled at no cost up to 2 hours ahead of the start"
    check = key_check(free, (idiom,))
    assert not check.contradicted and check.missing == ()
    value = correctness(idiom, free)
    assert value is not None and value >= CORRECTNESS_THRESHOLD
    # a "no" still negates its noun, and "not" its predicate
    assert key_check("Cancellation costs 5 euros.", ("Cancellation is possible at no cost.",)).contradicted
    assert key_check("Every room comes with a projector.", ("Every room comes with no projector.",)).contradicted
    assert key_check("The deposit is refundable.", ("The deposit is not refundable.",)).contradicted
    assert not key_check("The deposit is refundable.", ("The deposit is refundable.",)).contradicted


def test_a_negation_in_another_stretch_of_the_sentence_is_no_contradiction() -> None:
    merged = "A cleaning by the hygienist is priced at 70 euros and needs 40 minutes, and whitening is not part of a cleaning."
    assert not key_check("A cleaning takes 40 minutes.", (merged,)).contradicted
    value = correctness(merged, "A cleaning takes 40 minutes.")
    assert value is not None and value >= CORRECTNESS_THRESHOLD
    # a negation the whole sentence puts on the fact still counts, asides or not
    assert key_check("The deposit is refundable within 14 days.", ("The deposit, sadly, is not refundable within 14 days.",)).contradicted
