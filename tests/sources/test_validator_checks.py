"""The validator's deterministic parts: pre-check, normalisation, counts."""

from __future__ import annotations

import pytest

from pytest_ragdive.core.records import Conversation, TurnVerdict, ValidationCounts, ValidationStats
from pytest_ragdive.metrics.text import is_unanswerable
from pytest_ragdive.sources.validator import (
    CHECKS,
    GeneratedTurn,
    ValidatorOutput,
    mentions_document,
    normalize_check,
    precheck,
)


@pytest.mark.parametrize(
    "text",
    [
        "According to the document, when was it built?",
        "What is mentioned in the passage?",
        "What does the text say about refunds?",
        "Based on the provided text what is the fee?",
        "What does this excerpt cover?",
        "Does the document mention a deadline?",
    ],
)
def test_document_mentions_are_caught(text: str) -> None:
    assert mentions_document(text)


@pytest.mark.parametrize(
    "text",
    [
        "How do I upload a document?",
        "In the document management system, how do I share a folder?",
        "Can I reply in the text message?",
        "What is the text of article 5?",
        "When was it built?",
    ],
)
def test_domain_uses_of_document_words_pass(text: str) -> None:
    assert not mentions_document(text)


def _turn(**kw: object) -> GeneratedTurn:
    base: dict[str, object] = {
        "rag_input": "When was it built?",
        "standalone_question": "When was the Eiffel Tower built?",
        "ground_truth": "1887 to 1889",
        "question_type": "Follow-up",
    }
    base.update(kw)
    return GeneratedTurn.model_validate(base)


def test_precheck_passes_a_good_turn() -> None:
    assert precheck(_turn(), first=False) is None


def test_precheck_document_mentioned_and_type() -> None:
    v = precheck(_turn(rag_input="According to the text, when was it built?", question_type="Initial"), first=False)
    assert v is not None and not v.valid and v.source == "precheck"
    assert v.failed_checks == ["document_mentioned", "wrong_question_type"]
    assert "rag_input" in v.reason and "Initial" in v.reason


def test_precheck_first_turn_ignores_type_and_empty_standalone() -> None:
    assert precheck(_turn(question_type="Initial", standalone_question=""), first=True) is None
    v = precheck(_turn(standalone_question=""), first=False)
    assert v is not None and v.failed_checks == ["standalone_not_self_contained"]


def test_ground_truth_may_say_not_answerable() -> None:
    t = _turn(ground_truth="not answerable from the document")
    assert precheck(t, first=False) is None
    assert is_unanswerable(t.ground_truth)
    assert is_unanswerable("This cannot be answered from the given information.")
    assert not is_unanswerable("It was built in 1889.")


@pytest.mark.parametrize(
    "raw, expected",
    [("follow up", "Follow-up"), ("FOLLOW-UP", "Follow-up"), ("followup", "Follow-up"), ("comparison", "Comparative")],
)
def test_question_type_normalised(raw: str, expected: str) -> None:
    assert _turn(question_type=raw).question_type == expected


def test_unknown_question_type_is_a_schema_error() -> None:
    with pytest.raises(ValueError):
        _turn(question_type="Rhetorical")


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("groundTruth", "ground_truth_unsupported"),
        ("notStandalone", "standalone_not_self_contained"),
        ("RAG_InputNotConnected", "rag_input_not_connected"),
        ("questionNotConsistent", "standalone_inconsistent"),
        ("documentMentioned", "document_mentioned"),
        ("type", "wrong_question_type"),
        ("wrong_question_type", "wrong_question_type"),
        ("vibes", "other"),
    ],
)
def test_check_names_normalised(raw: str, expected: str) -> None:
    assert normalize_check(raw) == expected


def test_validator_output_accepts_a_string_of_checks() -> None:
    out = ValidatorOutput.model_validate({"valid": False, "reason": "r", "failed_checks": "groundTruth, type"})
    assert out.failed_checks == ["groundTruth", "type"]


def test_counts_record_and_merge_per_role() -> None:
    a = ValidationCounts()
    a.record(TurnVerdict(valid=False, reason="x", failed_checks=["ground_truth_unsupported"]))
    a.record(TurnVerdict(valid=False, reason="y", failed_checks=["document_mentioned"], source="precheck"))
    a.record(TurnVerdict(valid=True))
    a.regenerations, a.accepted, a.recovered, a.turns = 2, 1, 1, 1
    b = ValidationCounts()
    b.record(TurnVerdict(valid=False, reason="z", failed_checks=[]))
    b.record(TurnVerdict(valid=True, source="validator_error"))
    b.dropped, b.turns = 1, 1
    s = ValidationStats.for_role("default", a).merge(ValidationStats.for_role("confused", b))
    s = s.merge(ValidationStats.for_role("default", a))
    assert s.candidates == 8 and s.invalid == 5 and s.prechecked == 2 and s.validator_errors == 1
    assert s.by_check == {"document_mentioned": 2, "ground_truth_unsupported": 2, "other": 1}
    assert set(s.by_role) == {"default", "confused"}
    assert s.by_role["default"].candidates == 6 and s.by_role["default"].regenerations == 4
    assert s.by_role["confused"].dropped == 1
    assert s.invalid_rate() == pytest.approx(5 / 8)
    # typed on the conversation, and merging from conversations
    convs = [
        Conversation(id="x", validation=ValidationStats.for_role("default", a)),
        Conversation(id="y", validation=ValidationStats.for_role("confused", b)),
        Conversation(id="z"),
    ]
    merged = ValidationStats.from_conversations(convs)
    assert merged.candidates == 5 and merged.by_role["confused"].invalid == 1
    assert set(CHECKS) >= set(k for k in merged.by_check if k != "other")
