"""Diversity of questions per turn index across runs (RAG-DIVE Table 3)."""

from __future__ import annotations

import pytest
from factories import conversation, turn

from pytest_ragdive.core.records import Conversation
from pytest_ragdive.metrics.diversity import (
    cluster_questions,
    diversity_by_turn,
    mean_diversity,
    normalize_question,
    question_similarity,
)


def conv(cid: str, run: int, questions: list[str], doc: str = "d1") -> Conversation:
    return conversation(cid, *(turn(f"raw {q}", standalone_question=q) for q in questions),
                        run=run, document_id=doc, role="default", source="generated")


def test_squad_normalisation_and_similarity() -> None:
    assert normalize_question("Who directed The Film?") == "who directed film"
    assert question_similarity("Who directed the film?", "who directed a film") == 1.0
    assert question_similarity("Who directed the film?", "When was it released?") == 0.0
    assert question_similarity("", "") == 1.0


def test_greedy_clustering_in_order() -> None:
    qs = [
        "When was the Eiffel Tower built?",
        "When was the Eiffel Tower built ?",
        "Who designed the Eiffel Tower?",
        "when was eiffel tower built",
    ]
    clusters = cluster_questions(qs)
    assert [len(c) for c in clusters] == [3, 1]


def test_runs_converge_on_turn_one_and_diverge_later() -> None:
    runs = [
        ["When was the Eiffel Tower built?", "Who designed it then?", "How tall is the tower today?"],
        ["When was the Eiffel Tower built?", "Who was the designer of the tower?", "What is it made of?"],
        ["When was the Eiffel Tower built?", "Why was the tower built for the fair?", "How many visitors a year?"],
        ["When was the Eiffel Tower built", "Who designed it then?", "Is it painted every seven years?"],
    ]
    convs = [conv("gen-000-d1-default", r, qs) for r, qs in enumerate(runs)]
    # a second planned conversation: two runs, both turn-1 questions the same, turn 2 differs
    convs += [
        conv("gen-001-d2-default", 0, ["What is the refund window?", "Does that include sale items?"], doc="d2"),
        conv("gen-001-d2-default", 1, ["What is the refund window?", "Can I get cash back?"], doc="d2"),
    ]
    div = diversity_by_turn(convs)
    assert div[0] == pytest.approx(2 / 6)  # 1 + 1 distinct of 4 + 2 questions
    assert div[1] == pytest.approx((3 + 2) / 6)  # "who designed it then" twice
    assert div[2] == pytest.approx(4 / 4)
    assert div[0] < div[1] < div[2]
    assert mean_diversity(div) == pytest.approx((2 / 6 + 5 / 6 + 1) / 3)


def test_single_run_groups_and_short_conversations_are_skipped() -> None:
    convs = [
        conv("a", 0, ["q one here", "q two here"]),
        conv("a", 1, ["q one here"]),  # shorter run: turn 2 has one question only
        conv("b", 0, ["lonely question"]),
    ]
    assert diversity_by_turn(convs) == {0: 0.5}
    assert diversity_by_turn([]) == {}
    assert mean_diversity({}) is None


def test_custom_group_key_and_threshold() -> None:
    convs = [conv("x", 0, ["Who directed the film?"]), conv("y", 0, ["Who directed the movie?"])]
    by_doc = diversity_by_turn(convs, key=lambda c: c.document_id)
    assert by_doc == {0: 1.0}  # Jaccard 0.5 < 0.7: distinct
    assert diversity_by_turn(convs, threshold=0.5, key=lambda c: c.document_id) == {0: 0.5}
