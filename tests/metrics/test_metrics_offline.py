from __future__ import annotations

import pytest

from pytest_ragdive.core.records import Context, Conversation, Turn
from pytest_ragdive.metrics.offline import TURN_METRICS, score_conversation, score_turn
from pytest_ragdive.metrics.pii import PiiCheck
from pytest_ragdive.metrics.registry import METRICS

GT = "Refunds are issued within 14 days to the original payment method."
CTX_A = Context(id="a#1", doc_id="A", text="Refunds are issued within 14 days to the original payment method.")
CTX_X = Context(id="x#1", doc_id="X", text="Shipping to Canada takes a week.")


def good_turn(index: int = 0, **kw: object) -> Turn:
    data: dict[str, object] = {
        "index": index,
        "rag_input": "How do refunds work?",
        "ground_truth": GT,
        "relevant_doc_ids": ["A"],
        "answer": "Refunds are issued within 14 days to the original payment method [A].",
        "contexts": [CTX_X, CTX_A],
        "expected_citations": ["A"],
        "negative_assertions": ["instant refund"],
    }
    data.update(kw)
    return Turn.model_validate(data)


def test_turn_metrics_are_registered_turn_level() -> None:
    for name in TURN_METRICS:
        assert METRICS[name].level == "turn"


def test_score_turn_values() -> None:
    s = score_turn(good_turn())
    assert set(s) == set(TURN_METRICS)
    assert s["answer_f1"] == 1.0
    assert s["exact_match"] == 1.0
    assert s["correctness"] == 1.0
    assert s["recall_at_k"] == 1.0
    assert s["mrr"] == 0.5
    assert s["ndcg_at_k"] == pytest.approx(0.6309297535714575)  # 1 / log2(3)
    assert s["faithfulness"] == 1.0
    assert s["context_recall"] == 1.0
    assert s["context_precision"] == pytest.approx(0.5)  # pattern [0, 1]
    assert s["safety_pass_rate"] == 1.0
    assert s["citation_rate"] == 1.0
    assert s["answer_attempt_rate"] == 1.0


def test_score_turn_k_cuts_retrieval() -> None:
    s = score_turn(good_turn(), k=1)
    assert s["recall_at_k"] == 0.0
    assert s["ndcg_at_k"] == 0.0


def test_score_turn_not_run_is_all_none() -> None:
    s = score_turn(good_turn(answer=None))
    assert set(s) == set(TURN_METRICS)
    assert all(v is None for v in s.values())


def test_score_turn_abstention_without_extras() -> None:
    t = Turn(rag_input="q", answer="I can't find that in the help centre.")
    s = score_turn(t)
    assert s["answer_attempt_rate"] == 0.0
    assert s["faithfulness"] == 1.0  # issue 11: a pure abstention asserts nothing unsupported
    for name in (
        "answer_f1",
        "exact_match",
        "correctness",
        "context_recall",
        "recall_at_k",
        "mrr",
        "ndcg_at_k",
        "context_precision",
        "citation_rate",
    ):
        assert s[name] is None, name
    assert s["safety_pass_rate"] == 1.0  # the personal-data check applies to every answer
    assert score_turn(t, pii=PiiCheck(frozenset()))["safety_pass_rate"] is None  # detectors off: nothing to check


def test_score_conversation_means_failures_and_probe() -> None:
    conv = Conversation(
        id="c1",
        turns=[
            good_turn(0),
            good_turn(
                1,
                rag_input="And how long for those?",
                answer="You get a guaranteed refund, an instant refund!",
                standalone_answer="Refunds are issued within 14 days to the original payment method.",
                negative_assertions=["instant refund", "guaranteed refund"],
            ),
            good_turn(2, answer=None),  # not run: left out of the means
        ],
    )
    score_conversation(conv)
    t1 = conv.turns[1]
    assert t1.scores["safety_pass_rate"] == 0.0
    # issue 11: graded; covers "refund" (1 of 8 terms); issue 27: not multiplied by its support (1/4);
    # issue 31: without the reference's number (14 days) that fact covers nothing
    assert t1.scores["correctness"] == 0.0
    assert conv.failures == [  # turns are numbered from 1 for people (index 1 is turn 2)
        "turn 2: answer states forbidden text 'instant refund'",
        "turn 2: answer states forbidden text 'guaranteed refund'",
    ]
    assert conv.scores["safety_pass_rate"] == pytest.approx(0.5)
    assert conv.scores["correctness"] == pytest.approx((1 + 0) / 2)
    assert conv.scores["mrr"] == pytest.approx(0.5)
    assert conv.scores["forgetfulness"] == 1.0
    assert conv.scores["context_retention"] == 0.0
    assert "forgetful" in t1.flags
    assert conv.turns[2].scores["correctness"] is None


def test_score_conversation_all_none_metric_is_none() -> None:
    conv = Conversation(id="c", turns=[Turn(rag_input="q", answer="Maybe next week.")])
    score_conversation(conv)
    assert conv.scores["mrr"] is None
    assert conv.scores["answer_attempt_rate"] == 1.0
    assert conv.scores["forgetfulness"] is None


def test_score_conversation_is_idempotent_and_round_trips() -> None:
    conv = Conversation(
        id="c",
        turns=[good_turn(0), good_turn(1, answer="An instant refund.", standalone_answer=GT)],
    )
    score_conversation(conv)
    once = conv.model_dump()
    score_conversation(conv)
    assert conv.model_dump() == once
    assert len(conv.failures) == 1
    assert Conversation.model_validate_json(conv.model_dump_json()) == conv


def test_judge_scores_for_other_metrics_survive() -> None:
    t = good_turn()
    t.scores["judge_only_metric"] = 0.25
    conv = Conversation(id="c", turns=[t])
    score_conversation(conv)
    assert conv.turns[0].scores["judge_only_metric"] == 0.25


def test_offline_metrics_import_no_numpy() -> None:
    import subprocess
    import sys

    code = (
        "import sys; import pytest_ragdive.metrics.offline; "
        "bad = [m for m in ('numpy', 'litellm', 'diskcache') if m in sys.modules]; "
        "print(','.join(bad)); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
