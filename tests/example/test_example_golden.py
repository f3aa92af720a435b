"""The golden data of the bundled example (golden/core, golden/extended): it loads
with the plugin's loaders and is consistent with the help-centre corpus."""

from __future__ import annotations

import re
import string
from collections import Counter
from pathlib import Path

import pytest

from pytest_ragdive.core.config import load_config
from pytest_ragdive.sources.golden import (
    load_conversations,
    load_corpus,
    load_single_turn,
    scripted_conversation,
    single_turn_conversation,
)

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "golden"
CORPUS = ROOT / "example_project" / "corpus" / "helpcentre.jsonl"
FOLLOW_UP_TYPES = {"Follow-up", "Clarification", "Correction", "Comparative"}
_STOP = set("a an the of to in on for and or is are be it its this that with by at as from your you".split())


def content_tokens(text: str) -> set[str]:
    text = "".join(ch for ch in text.lower() if ch not in string.punctuation)
    return {t for t in re.sub(r"\b(a|an|the)\b", " ", text).split() if t not in _STOP}


@pytest.fixture(scope="module")
def corpus() -> dict[str, str]:
    return {d.id: d.text for d in load_corpus(CORPUS)}


@pytest.fixture(scope="module", params=["core", "extended"])
def suite(request: pytest.FixtureRequest) -> str:
    return request.param


def test_sizes() -> None:
    core_convs = load_conversations(GOLDEN / "core" / "conversations.yaml")
    core_single = load_single_turn(GOLDEN / "core" / "single_turn.jsonl")
    ext_convs = load_conversations(GOLDEN / "extended" / "conversations.yaml")
    ext_single = load_single_turn(GOLDEN / "extended" / "single_turn.jsonl")
    assert 8 <= len(core_convs) <= 12 and all(3 <= len(c.turns) <= 5 for c in core_convs)
    assert len(core_single) == 20
    assert len(ext_convs) >= 30 and all(3 <= len(c.turns) <= 7 for c in ext_convs)
    assert len(ext_single) >= 60
    assert {c.difficulty for c in ext_single} == {"easy", "medium", "hard"}
    assert len({c.category for c in ext_single}) >= 8
    # context-dependent turns of every kind
    kinds = Counter(t.question_type for c in ext_convs for t in c.turns[1:])
    assert set(kinds) == FOLLOW_UP_TYPES
    assert kinds["Correction"] >= 2 and kinds["Comparative"] >= 2


def test_ids_are_unique_across_suites() -> None:
    ids: list[str] = []
    for s in ("core", "extended"):
        ids += [c.id for c in load_conversations(GOLDEN / s / "conversations.yaml")]
        ids += [c.question_id for c in load_single_turn(GOLDEN / s / "single_turn.jsonl")]
    assert len(ids) == len(set(ids))


def test_turns_name_their_documents_and_standalone_question(suite: str, corpus: dict[str, str]) -> None:
    for conv in load_conversations(GOLDEN / suite / "conversations.yaml"):
        assert conv.turns[0].question_type == "Initial", conv.id
        for i, turn in enumerate(conv.turns):
            assert turn.standalone_question and turn.ground_truth, (conv.id, i)
            assert turn.relevant_doc_ids and set(turn.relevant_doc_ids) <= set(corpus), (conv.id, i)
            if i:
                assert turn.question_type in FOLLOW_UP_TYPES, (conv.id, i)
        # the plugin's conversion keeps what the runner needs
        converted = scripted_conversation(conv, suite, 0)
        assert [t.standalone_question for t in converted.turns] == [t.standalone_question for t in conv.turns]
    for case in load_single_turn(GOLDEN / suite / "single_turn.jsonl"):
        assert case.expected_answer and case.category and case.difficulty
        assert case.relevant_doc_ids and set(case.relevant_doc_ids) <= set(corpus), case.question_id
        assert single_turn_conversation(case, suite, 0).turns[0].question_type == "Single"


def _rows(suite: str) -> list[tuple[str, str, list[str], list[str]]]:
    """(id, ground truth, relevant doc ids, negative assertions) of every turn and case."""
    rows = []
    for conv in load_conversations(GOLDEN / suite / "conversations.yaml"):
        for i, t in enumerate(conv.turns):
            rows.append((f"{conv.id}/{i}", t.ground_truth, t.relevant_doc_ids, t.negative_assertions))
    for c in load_single_turn(GOLDEN / suite / "single_turn.jsonl"):
        rows.append((c.question_id, c.expected_answer, c.relevant_doc_ids, c.negative_assertions))
    return rows


def test_ground_truths_are_short_facts_from_the_relevant_documents(suite: str, corpus: dict[str, str]) -> None:
    for rid, truth, docs, _ in _rows(suite):
        assert len(truth.split()) <= 30, rid
        wanted = content_tokens(truth)
        found = content_tokens(" ".join(corpus[d] for d in docs))
        assert len(wanted & found) / len(wanted) >= 0.8, (rid, wanted - found)


def test_negative_assertions_are_outdated_facts(suite: str, corpus: dict[str, str]) -> None:
    rows = [r for r in _rows(suite) if r[3]]
    assert len(rows) >= 5
    everything = " ".join(corpus.values())
    for rid, _, docs, negatives in rows:
        current = " ".join(corpus[d] for d in docs)
        for text in negatives:
            assert text in everything, (rid, text)  # something the help centre says somewhere...
            assert text not in current, (rid, text)  # ...but not in the articles that answer the turn


def test_example_config_points_at_the_golden_data() -> None:
    cfg = load_config(ROOT / "example_project" / "pyproject.toml")
    assert cfg.corpus is not None and cfg.path(cfg.corpus) == CORPUS
    assert set(cfg.suites) == {"core", "extended", "diagnosis", "attacks"}
    assert cfg.suites["diagnosis"].sharded and not cfg.suites["diagnosis"].single_turn
    for suite in cfg.suites.values():
        for p in suite.single_turn + suite.conversations + suite.sharded + (suite.attacks.files if suite.attacks else []):
            assert cfg.path(p).is_file(), p
