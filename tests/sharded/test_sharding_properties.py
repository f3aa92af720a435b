"""The sharding properties P1-P6 (sharded/properties.py): each error and each flag fires on a
question made to break it, and stays silent on a question that keeps it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ragdive.core.errors import ShardedFileError
from pytest_ragdive.sharded.properties import MIN_PRESERVATION, check_question, flag_question, preservation, specifics
from pytest_ragdive.sharded.questions import ShardedQuestion, load_sharded

QUESTION = "How many requests per minute does the Business plan allow?"
CLEAN = {
    "id": "q1",
    "question": QUESTION,
    "answer": "600",
    "supporting_doc_ids": ["api-rate-limits"],
    "shards": [
        {"shard_id": 1, "shard": "How many requests per minute does the plan allow?"},
        {"shard_id": 2, "shard": "It is the Business plan."},
    ],
}


def _q(*shards: str, ids: list[int] | None = None, **over: object) -> ShardedQuestion:
    rows = [{"shard_id": i, "shard": s} for i, s in zip(ids or range(1, len(shards) + 1), shards, strict=True)]
    return ShardedQuestion.model_validate({**CLEAN, **({"shards": rows} if shards else {}), **over})


def test_the_clean_question_has_no_error_and_no_flag() -> None:
    assert check_question(_q()) == []
    assert flag_question(_q()) == []
    assert preservation(_q()) == (1.0, [])


def test_specifics_are_numbers_and_mid_sentence_capitals_grouped_into_entities() -> None:
    assert specifics("It is the Lumio Sensor, at 3,000 feet.") == [["Lumio", "Sensor"], ["3,000"]]
    assert specifics("Business is good. The plan is Business.") == [["Business"]]  # sentence starts are not
    assert specifics("Can I use 2FA?") == [["2FA"]]  # "I" is not a name


# (shards, needle of the error it fires): every other check stays silent on the clean question above
ERRORS = [
    pytest.param(("How many requests per minute does the plan allow?", "It is the cheapest paid tier."),
                 "P1: shard 2 uses words that are not in the question: cheapest, paid, tier", id="P1-added"),
    pytest.param(("How many requests?", "It is the Business plan."),
                 "P1: the shards keep 57% of the question's content words", id="P1-preservation"),
    pytest.param(("How many requests per minute does the plan allow?", "It is the business plan."),
                 "P1: no shard states the question's Business verbatim", id="P1-specific-dropped"),
    pytest.param(("How many requests per minute does the plan allow?", "It is the BUSINESS plan."),
                 "P6: shard 2 does not keep the question's own form of: BUSINESS", id="P6-verbatim"),
    pytest.param(("How many requests per minute does the plan allow?", "It allows 600."),
                 "P2: shard 2 contains the answer or an alias ('600')", id="P2-answer"),
    pytest.param(("Requests per minute does the plan allow?", "It is the Business plan."),
                 "P3: the first shard (shard 1) does not ask what the question asks ('how')", id="P3-intent"),
    pytest.param((QUESTION, "It is the Business plan."),
                 "P3: the first shard (shard 1) states the whole question", id="P3-whole-question"),
    pytest.param(("How many requests per minute does the plan allow?", "It is the Business plan.", "It is the plan."),
                 "P5: shard 3 adds nothing that the earlier shards did not state", id="P5-no-information"),
]


@pytest.mark.parametrize(("shards", "needle"), ERRORS)
def test_each_error_fires(shards: tuple[str, ...], needle: str) -> None:
    problems = check_question(_q(*shards))
    assert any(p.startswith(needle) for p in problems), problems


def test_the_intermediate_entity_check_fires_only_when_declared() -> None:
    q = _q("How many requests per minute does the plan allow?", "It is the Business plan.",
           intermediate_entities=["Business"])
    assert check_question(q) == ["P2: shard 2 names the intermediate entity 'Business'"]
    assert check_question(_q(intermediate_entities=["Enterprise"])) == []


def test_preservation_is_the_share_of_content_words_kept() -> None:
    share, missing = preservation(_q("How many requests per minute does the plan have?", "It is the Business plan."))
    assert share == pytest.approx(6 / 7) and missing == ["allow"]
    assert MIN_PRESERVATION == 0.8


# (shards, ids, question, needle of the flag it raises)
FLAGS = [
    pytest.param(("How many requests per minute does the plan have?", "It is the Business plan."), None, QUESTION,
                 "P1: no shard states the question's allow (86% of its content words kept)", id="P1-missing"),
    pytest.param(("How many API requests per minute does the plan allow?", "It is the Business plan."), None,
                 "How many API requests per minute does the Business plan allow?",
                 "P3: the first shard names API", id="P3-names"),
    pytest.param(("How many requests per minute does the plan allow?", "It is the Business plan."), [1, 3], QUESTION,
                 "P4: shard ids are 1, 3, not 1..2", id="P4-ids"),
    pytest.param(("How many requests per minute does the plan allow?", "It is the Business plan of Lumio."), None,
                 "How many requests per minute does the Business plan of Lumio allow?",
                 "P5: shard 2 names Business, Lumio", id="P5-packed"),
    pytest.param(("How many requests per minute does the plan allow?", "Is it the Business plan?"), None, QUESTION,
                 "P5: shard 2 asks a question", id="P5-question"),
]


@pytest.mark.parametrize(("shards", "ids", "question", "needle"), FLAGS)
def test_each_flag_fires_and_is_not_an_error(shards: tuple[str, ...], ids: list[int] | None, question: str,
                                             needle: str) -> None:
    q = _q(*shards, ids=ids, question=question)
    flags = flag_question(q)
    assert any(f.startswith(needle) for f in flags), flags
    assert check_question(q) == [], check_question(q)


def test_the_loader_refuses_an_error_and_accepts_a_flag(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    flagged = {**CLEAN, "shards": [{"shard_id": 1, "shard": "How many requests per minute does the plan allow?"},
                                   {"shard_id": 2, "shard": "Is it the Business plan?"}]}
    path.write_text(json.dumps(flagged) + "\n")
    assert [q.id for q in load_sharded(path)] == ["q1"]
    broken = {**CLEAN, "shards": [{"shard_id": 1, "shard": QUESTION}, {"shard_id": 2, "shard": "It is the Business plan."}]}
    path.write_text(json.dumps(broken) + "\n")
    with pytest.raises(ShardedFileError, match="P3: the first shard .* states the whole question"):
        load_sharded(path)


def test_flags_and_an_empty_intermediate_list_leave_the_golden_fingerprint_alone(tmp_path: Path) -> None:
    from pytest_ragdive.sources.fingerprint import _cases

    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(CLEAN) + "\n")
    plain = _cases("sharded", path)
    path.write_text(json.dumps({**CLEAN, "flags": ["P3: the first shard names X"], "intermediate_entities": []}) + "\n")
    assert _cases("sharded", path) == plain  # review notes are not content
    path.write_text(json.dumps({**CLEAN, "intermediate_entities": ["Business"]}) + "\n")
    assert _cases("sharded", path) != plain  # a declared entity is
