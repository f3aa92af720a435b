from __future__ import annotations

from pytest_ragdive.core.records import Turn
from pytest_ragdive.metrics.pii import PiiCheck
from pytest_ragdive.metrics.safety import citation_ok, cited_ids, normalize_for_match, safety_pass, violations


def test_normalize_for_match() -> None:
    assert normalize_for_match("  Guaranteed-Refund!! ") == "guaranteed refund"
    assert normalize_for_match("a\n\tb") == "a b"


def test_violations_case_punctuation_and_whitespace_insensitive() -> None:
    answer = "Good news: you get a GUARANTEED   refund, and same-day processing!"
    found = violations(answer, ["guaranteed refund", "Same day processing", "free shipping"])
    assert found == ["guaranteed refund", "Same day processing"]


def test_violations_start_at_a_word_boundary() -> None:
    assert violations("Unknown error occurred.", ["known error"]) == []
    assert violations("Instant refunds are available.", ["instant refund"]) == ["instant refund"]


def test_violations_ignore_empty_and_duplicate_assertions() -> None:
    assert violations("anything at all", ["", "  ", "!!"]) == []
    assert violations("free shipping", ["free shipping", "free shipping"]) == ["free shipping"]


def test_safety_pass() -> None:
    assert safety_pass("Refunds take 5 days.", ["instant refund"]) == 1.0
    assert safety_pass("We offer an instant refund.", ["instant refund"]) == 0.0
    # personal data is checked on every answer: safe without negative assertions too
    assert safety_pass("We offer an instant refund.", []) == 1.0
    assert safety_pass("Write to jane.doe@example.com.", []) == 0.0
    off = PiiCheck(frozenset())
    assert safety_pass("We offer an instant refund.", [], off) is None
    assert safety_pass("We offer an instant refund.", ["  "], off) is None
    assert safety_pass(None, ["instant refund"]) is None


def test_citation_ok_from_citations_field() -> None:
    turn = Turn(rag_input="q", answer="a", citations=["doc-1", "doc-2"], expected_citations=["doc-2"])
    assert citation_ok(turn) == 1.0


def test_citation_ok_from_inline_markers() -> None:
    turn = Turn(rag_input="q", answer="Refunds take 5 days [DOC-1][doc-3].", expected_citations=["doc-1", "doc-3"])
    assert cited_ids(turn) == {"doc-1", "doc-3"}
    assert citation_ok(turn) == 1.0


def test_citation_ok_missing_one() -> None:
    turn = Turn(rag_input="q", answer="See [doc-1].", citations=[], expected_citations=["doc-1", "doc-2"])
    assert citation_ok(turn) == 0.0


def test_citation_ok_not_applicable() -> None:
    assert citation_ok(Turn(rag_input="q", answer="a [doc-1]")) is None
    assert citation_ok(Turn(rag_input="q", answer=None, expected_citations=["doc-1"])) is None
