"""The evidence behind offline faithfulness and correctness: per asserted unit its support
and what supports it (context id and span, or the conversation), per reference fact its
coverage; the score is read from the same rows, so the evidence never changes it."""

from __future__ import annotations

import re

import pytest
from example_outcome import example_outcome

from pytest_ragdive.core.records import Context, Conversation, Evidence, Turn
from pytest_ragdive.gate.outcome import RunOutcome
from pytest_ragdive.metrics.evidence import reference_coverage, support_units, weighted_support
from pytest_ragdive.metrics.grounding import LEXICAL_COVERAGE, faithfulness
from pytest_ragdive.metrics.offline import conversation_support, score_conversation, score_turn

PRO = Context(id="plans#0", doc_id="plans", text="Plans and prices. The Pro plan costs $12 per month per site. Starter is free.")
SHIP = Context(id="shipping#1", doc_id="shipping", text="Orders ship within 2 business days.")


@pytest.fixture(scope="module")
def invented() -> RunOutcome:
    return example_outcome(history="full", reader="memory", markup=False)


def test_weighted_support_is_the_faithfulness_score_on_every_turn(invented: RunOutcome) -> None:
    turns = [(c, t) for c in invented.conversations for t in c.turns if t.answer is not None]
    assert len(turns) == 57
    for conv, t in turns:
        assert t.evidence is not None
        assert weighted_support(t.evidence.support) == t.scores["faithfulness"]  # exactly: the same rows
        support = conversation_support(conv.turns, t.index)
        assert weighted_support(support_units(t.answer, t.contexts, support)) == faithfulness(t.answer, t.contexts, support)
        for u in t.evidence.support:
            if u.start is not None and u.end is not None:  # located: the unit's words, in the answer's order
                assert t.answer[u.start:u.end].split() == u.text.split()
    bad = [u for _, t in turns for u in (t.evidence.support if t.evidence else []) if u.verdict == "unsupported"]
    assert {u.text for u in bad} >= {"Business comes with unlimited cloud storage for every camera on the site."}


def test_each_unit_names_its_support() -> None:
    answer = "The Pro plan costs $12 per month per site [plans#0]. Refunds are paid in gold bars."
    units = support_units(answer, [SHIP, PRO])
    assert [u.verdict for u in units] == ["supported", "unsupported"]
    ok, bad = units
    assert (ok.by, ok.context_id, ok.span) == ("context", "plans#0", "The Pro plan costs $12 per month per site.")
    assert answer[ok.start or 0:ok.end or 0].startswith("The Pro plan costs $12") and ok.missing == []
    assert ok.score == 1.0 and ok.weight == 7.0  # pro, plan, cost, 12, month, per... its distinct match terms
    assert bad.by == "none" and bad.context_id is None and bad.score == 0.0
    assert bad.missing == ["refunds", "paid", "gold", "bars"]  # the unit's own words, not their stems
    assert weighted_support(units) == pytest.approx(faithfulness(answer, [SHIP, PRO]) or 0)
    assert support_units(None, [PRO]) == [] and weighted_support([]) == 1.0  # a pure abstention asserts nothing


def test_a_restatement_of_the_conversation_is_supported_by_it() -> None:
    said = ["My order number is 4471 and it shipped to Lyon."]
    units = support_units("Your order 4471 shipped to Lyon.", [SHIP], said)
    assert [(u.verdict, u.by, u.span) for u in units] == [("supported", "conversation", said[0])]
    assert support_units("Your order 4471 shipped to Lyon.", [SHIP])[0].verdict != "supported"


def test_reference_coverage_says_which_facts_the_answer_states() -> None:
    gt = "The Pro plan costs $12 per month. It includes five cameras."
    facts = reference_coverage("Pro is $12 a month [plans#0].", gt, LEXICAL_COVERAGE)
    assert [(f.text, round(f.covered, 2)) for f in facts] == [("The Pro plan costs $12 per month.", 0.5),
                                                             ("It includes five cameras.", 0.0)]
    # the default rule adds the semantic evidence: a paraphrase covers more of the first fact, nothing of the second
    semantic = reference_coverage("Pro is $12 a month [plans#0].", gt)
    assert semantic[0].covered > facts[0].covered and semantic[1].covered == 0.0
    assert facts[0].missing == ["plan", "costs", "per"] and facts[1].missing == ["includes", "five", "cameras"]
    assert reference_coverage("I can't find that in the help centre.", gt)[0].covered == 0.0
    assert reference_coverage("No.", "Not answerable from the help centre.") == []


def test_scoring_stores_the_evidence_idempotently_and_it_survives_json() -> None:
    conv = Conversation(id="c", turns=[
        Turn(index=0, rag_input="How much is Pro?", ground_truth="The Pro plan costs $12 per month per site.",
             answer="The Pro plan costs $12 per month per site. It comes with a free drone.", contexts=[PRO]),
    ])
    score_conversation(conv)
    first = conv.model_copy(deep=True)
    score_conversation(conv)
    assert conv == first
    ev = conv.turns[0].evidence
    assert isinstance(ev, Evidence) and ev.worst() is not None and ev.worst().text == "It comes with a free drone."  # type: ignore[union-attr]
    assert ev.reference[0].covered == 1.0
    assert Conversation.model_validate_json(conv.model_dump_json()) == conv
    assert score_turn(conv.turns[0]) == {k: v for k, v in conv.turns[0].scores.items() if k in score_turn(conv.turns[0])}
    assert re.search(r'"evidence":\{"support":\[\{"text":"The Pro plan', conv.model_dump_json())
