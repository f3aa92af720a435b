from __future__ import annotations

import math

import pytest

from pytest_ragdive.core.records import Context
from pytest_ragdive.metrics.retrieval import (
    context_precision,
    distinct_source_ids,
    is_relevant_context,
    mrr,
    ndcg_at_k,
    recall_at_k,
)


def ctx(cid: str, doc: str | None = None, text: str = "") -> Context:
    return Context(id=cid, doc_id=doc, text=text or f"text of {cid}")


def test_distinct_source_ids_keeps_first_rank() -> None:
    contexts = [ctx("c1", "A"), ctx("c2", "B"), ctx("c3", "A"), ctx("c4")]
    assert distinct_source_ids(contexts) == ["A", "B", "c4"]


# ---------------------------------------------------------------- recall@k


def test_recall_at_k() -> None:
    retrieved = ["C", "A", "D", "B", "E"]
    assert recall_at_k(retrieved, ["A", "B"]) == 1.0
    assert recall_at_k(retrieved, ["A", "B"], k=2) == 0.5
    assert recall_at_k(retrieved, ["A", "B"], k=1) == 0.0
    assert recall_at_k(retrieved, ["A", "Z", "Y"]) == pytest.approx(1 / 3)


def test_recall_counts_a_document_once_across_chunks() -> None:
    # doc A comes back as three chunks: with k=2 the top-2 distinct docs are A and B
    ids = distinct_source_ids([ctx("c1", "A"), ctx("c2", "A"), ctx("c3", "A"), ctx("c4", "B")])
    assert recall_at_k(ids, ["A", "B"], k=2) == 1.0
    # the raw (duplicated) list is deduplicated too
    assert recall_at_k(["A", "A", "B"], ["A", "B"], k=2) == 1.0


def test_recall_edge_cases() -> None:
    assert recall_at_k(["A"], []) is None
    assert recall_at_k([], ["A"]) == 0.0
    with pytest.raises(ValueError):
        recall_at_k(["A"], ["A"], k=0)


# ---------------------------------------------------------------- MRR


def test_mrr() -> None:
    assert mrr(["A", "B", "C"], ["B"]) == 0.5
    assert mrr(["A", "B", "C"], ["C", "B"]) == 0.5
    assert mrr(["A", "B", "C"], ["A"]) == 1.0
    assert mrr(["A", "B"], ["Z"]) == 0.0
    assert mrr([], ["Z"]) == 0.0
    assert mrr(["A"], []) is None


def test_mrr_counts_a_document_once_across_chunks() -> None:
    # chunks of A at ranks 1-2, B's chunk at rank 3: B is the 2nd distinct doc
    ids = distinct_source_ids([ctx("c1", "A"), ctx("c2", "A"), ctx("c3", "B")])
    assert mrr(ids, ["B"]) == 0.5
    assert mrr(["A", "A", "B"], ["B"]) == 0.5


# ---------------------------------------------------------------- nDCG


def test_ndcg_relevant_at_rank_two() -> None:
    assert ndcg_at_k(["X", "A", "Y"], ["A"]) == pytest.approx(1 / math.log2(3))


def test_ndcg_hand_computed() -> None:
    # relevant {A, B}; retrieved A at 1, B at 3: DCG = 1 + 1/log2(4) = 1.5, IDCG = 1 + 1/log2(3)
    assert ndcg_at_k(["A", "X", "B"], ["A", "B"]) == pytest.approx(1.5 / (1 + 1 / math.log2(3)))
    assert ndcg_at_k(["A", "B", "X"], ["A", "B"]) == pytest.approx(1.0)


def test_ndcg_ideal_uses_min_k_relevant() -> None:
    # k=1, three relevant docs: the ideal holds one relevant doc, so a hit at rank 1 is perfect
    assert ndcg_at_k(["A", "X"], ["A", "B", "C"], k=1) == pytest.approx(1.0)
    # k=None: ideal over all 3 relevant; one hit at rank 1 -> 1 / (1 + 1/log2 3 + 1/2)
    assert ndcg_at_k(["A", "X"], ["A", "B", "C"]) == pytest.approx(1 / (1 + 1 / math.log2(3) + 0.5))
    # hit beyond k does not count
    assert ndcg_at_k(["X", "A"], ["A"], k=1) == 0.0


def test_ndcg_edge_cases() -> None:
    assert ndcg_at_k(["A"], []) is None
    assert ndcg_at_k([], ["A"]) == 0.0
    # duplicates of one doc are counted once: A,A,B -> A at 1, B at 2 -> perfect
    assert ndcg_at_k(["A", "A", "B"], ["A", "B"]) == pytest.approx(1.0)


# ---------------------------------------------------------------- context precision


def test_context_precision_pattern_1_0_1() -> None:
    contexts = [ctx("c1", "A"), ctx("c2", "X"), ctx("c3", "B")]
    assert context_precision(contexts, ["A", "B"]) == pytest.approx((1 / 1 + 2 / 3) / 2)


def test_context_precision_pattern_0_1() -> None:
    contexts = [ctx("c1", "X"), ctx("c2", "A")]
    assert context_precision(contexts, ["A"]) == pytest.approx(0.5)


def test_context_precision_works_on_chunks_not_documents() -> None:
    # two chunks of relevant doc A then an irrelevant one: [1, 1, 0] -> (1 + 1) / 2
    contexts = [ctx("c1", "A"), ctx("c2", "A"), ctx("c3", "X")]
    assert context_precision(contexts, ["A"]) == pytest.approx(1.0)


def test_context_precision_edge_cases() -> None:
    assert context_precision([], ["A"]) is None
    assert context_precision([ctx("c1", "X")], ["A"]) == 0.0
    # no relevant ids and nothing to judge lexically by
    assert context_precision([ctx("c1", "X")], [], "") is None
    assert context_precision([ctx("c1", "X")], [], "Not answerable") is None


def test_context_precision_lexical_fallback() -> None:
    gt = "Refunds are issued within 14 days to the original payment method."  # 8 content tokens
    contexts = [
        ctx("c1", text="Shipping to Canada takes a week."),  # 0 of 8
        ctx("c2", text="Refunds are issued after inspection."),  # 2 of 8 = 25% < 30%
        ctx("c3", text="Refunds issued to original payment method."),  # 5 of 8 >= 30%
    ]
    assert not is_relevant_context(contexts[1], [], gt)
    assert is_relevant_context(contexts[2], [], gt)
    # pattern [0, 0, 1] -> precision@3 = 1/3
    assert context_precision(contexts, [], gt) == pytest.approx(1 / 3)
    # with relevant ids, lexical relevance is not used
    assert context_precision(contexts, ["c1"], gt) == pytest.approx(1.0)


def test_recall_at_k_is_taken_at_the_configured_k_not_over_every_document() -> None:
    # seed 001: recall@5 gated, 3 and 10 reported; a relevant document at rank 7 is a miss at 5
    from pytest_ragdive.core.records import Context, Turn
    from pytest_ragdive.metrics.offline import score_turn
    from pytest_ragdive.metrics.retrieval import RECALL_K

    ctx = [Context(id=f"c{i}", doc_id=f"d{i}", text=f"text {i}") for i in range(1, 11)]
    turn = Turn(rag_input="q", answer="a", contexts=ctx, relevant_doc_ids=["d2", "d7"])
    assert RECALL_K == 5
    s = score_turn(turn)
    assert (s["recall_at_3"], s["recall_at_k"], s["recall_at_10"]) == (0.5, 0.5, 1.0)
    assert score_turn(turn, k=10)["recall_at_k"] == 1.0
    assert score_turn(turn, k=None)["recall_at_k"] == 1.0  # None: every retrieved document


def test_a_turn_with_no_relevant_document_is_not_applicable_for_every_rank_metric() -> None:
    from pytest_ragdive.core.records import Context, Turn
    from pytest_ragdive.metrics.offline import score_turn

    turn = Turn(rag_input="q", answer="a", contexts=[Context(id="c", doc_id="d", text="t")])
    s = score_turn(turn)
    assert all(s[m] is None for m in ("recall_at_k", "recall_at_3", "recall_at_10", "mrr", "ndcg_at_k"))
