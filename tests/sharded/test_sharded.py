"""Sharded questions: the format's mechanical checks, the offline condition users, and the
bundled example's questions and sampling knob."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from pytest_ragdive.core.errors import GoldenError, ShardedFileError, UsageError
from pytest_ragdive.core.records import Conversation, TargetResponse
from pytest_ragdive.run.target import as_async, make_call_info
from pytest_ragdive.run.turn_loop import run_conversation
from pytest_ragdive.sharded.conditions import (
    RECAP_INTRO,
    SNOWBALL_ALSO,
    SNOWBALL_INTRO,
    ShardedUser,
    sharded_conversation,
)
from pytest_ragdive.sharded.questions import ShardedQuestion, check_question, load_sharded
from pytest_ragdive.sources.golden import load_corpus

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_FILE = ROOT / "golden" / "diagnosis" / "sharded.yaml"
if str(ROOT / "example_project") not in sys.path:
    sys.path.insert(0, str(ROOT / "example_project"))

GOOD = {
    "id": "q1",
    "question": "How many API requests per minute does the Business plan allow?",
    "answer": "600",
    "aliases": ["600 requests"],
    "supporting_doc_ids": ["api-rate-limits"],
    "shards": [
        {"shard_id": 1, "shard": "How many API requests per minute does the plan allow?"},
        {"shard_id": 2, "shard": "It is the Business plan."},
    ],
}


def _q(**over: object) -> ShardedQuestion:
    return ShardedQuestion.model_validate({**GOOD, **over})


def test_a_good_question_passes_every_check() -> None:
    assert check_question(_q()) == []


@pytest.mark.parametrize(
    ("over", "needle"),
    [
        ({"shards": [{"shard_id": 1, "shard": "How many API requests per minute?"}]}, "at least two shards"),
        ({"shards": [{"shard_id": 1, "shard": "How many API requests?"}, {"shard_id": 1, "shard": "Business plan."}]},
         "shard ids used twice"),
        ({"shards": [{"shard_id": 1, "shard": "How many API requests per minute?"},
                     {"shard_id": 2, "shard": "It allows 600 requests."}]}, "contains the answer"),
        ({"shards": [{"shard_id": 1, "shard": "How many API requests per minute?"},
                     {"shard_id": 2, "shard": "It is the cheapest paid tier."}]}, "not in the question: cheapest, paid, tier"),
        ({"supporting_doc_ids": []}, "supporting_doc_ids is empty"),
    ],
)
def test_each_check_fails_alone(over: dict[str, object], needle: str) -> None:
    problems = check_question(_q(**over))
    assert any(needle in p for p in problems), problems


def test_loader_names_file_line_and_question_and_skips_unreviewed(tmp_path: Path) -> None:
    import json

    bad = {**GOOD, "id": "q2", "shards": [{"shard_id": 1, "shard": "600 per minute?"}, {"shard_id": 2, "shard": "Business."}]}
    unreviewed = {**bad, "id": "q3", "reviewed": False}
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (GOOD, unreviewed)) + "\n")
    notes: list[str] = []
    assert [q.id for q in load_sharded(path, notes=notes)] == ["q1"]
    assert notes and "not reviewed" in notes[0]
    path.write_text("\n".join(json.dumps(r) for r in (GOOD, bad)) + "\n")
    with pytest.raises(ShardedFileError, match=r"s\.jsonl:2: question 'q2': P2: shard 1 contains the answer") as e:
        load_sharded(path)
    assert isinstance(e.value, GoldenError) and isinstance(e.value, UsageError)
    path.write_text("\n".join(json.dumps(r) for r in (GOOD, GOOD)) + "\n")
    with pytest.raises(ShardedFileError, match="duplicate question id 'q1'"):
        load_sharded(path)


def test_example_questions_pass_the_checks_and_name_two_or_three_articles() -> None:
    qs = load_sharded(EXAMPLE_FILE)
    docs = {d.id for d in load_corpus(ROOT / "example_project" / "corpus" / "helpcentre.jsonl")}
    assert len(qs) >= 20
    for q in qs:
        assert 2 <= len(set(q.supporting_doc_ids)) <= 3, q.id
        assert set(q.supporting_doc_ids) <= docs, q.id


def _echo_target(answers: dict[int, str]):  # noqa: ANN202 - a test double
    async def target(messages: list[dict[str, str]]) -> TargetResponse:
        n = sum(1 for m in messages if m["role"] == "user")
        return TargetResponse(answer=answers.get(n, "Noted."))

    return target


def _run(q: ShardedQuestion, cond: str, target: object) -> Conversation:
    conv = sharded_conversation(q, cond, "core", 0)  # type: ignore[arg-type]
    return asyncio.run(run_conversation(conv, ShardedUser(q, cond), as_async(target), probe=False))  # type: ignore[arg-type]


Q3 = _q(shards=[{"shard_id": 1, "shard": "How many API requests per minute does it allow?"},
                {"shard_id": 2, "shard": "It is a plan."}, {"shard_id": 3, "shard": "The plan is Business."}])


def test_conditions_send_the_expected_user_messages() -> None:
    target = _echo_target({})
    full = _run(Q3, "full", target)
    assert [t.rag_input for t in full.turns] == [Q3.question]
    concat = _run(Q3, "concat", target)
    assert concat.turns[0].rag_input.splitlines() == [f"- {s.shard}" for s in Q3.shards]
    sharded = _run(Q3, "sharded", target)
    assert [t.rag_input for t in sharded.turns] == [s.shard for s in Q3.shards]
    assert [t.sharded.new_shard for t in sharded.turns if t.sharded] == [1, 2, 3]
    assert sharded.sharded is not None and sharded.sharded.stop_reason == "all_shards"
    recap = _run(Q3, "recap", target)
    assert len(recap.turns) == 4 and recap.turns[-1].rag_input.startswith(RECAP_INTRO)
    assert recap.turns[-1].sharded is not None and recap.turns[-1].sharded.shard_ids == [1, 2, 3]
    snow = _run(Q3, "snowball", target)
    assert [t.sharded.shard_ids for t in snow.turns if t.sharded] == [[1], [1, 2], [1, 2, 3]]
    # Lost in Conversation's SNOWBALL: the user's earlier utterances, then "Also," and the new one
    one, two, three = (s.shard for s in Q3.shards)
    assert [t.rag_input for t in snow.turns] == [
        one,
        f"{SNOWBALL_INTRO}\n- {one}\n\n{SNOWBALL_ALSO}\n\n{two}",
        f"{SNOWBALL_INTRO}\n- {one}\n- {two}\n\n{SNOWBALL_ALSO}\n\n{three}",
    ]
    assert [t.sharded.utterance for t in snow.turns if t.sharded] == [one, two, three]


def test_sharded_stops_at_an_exact_match_and_scores_best() -> None:
    conv = _run(Q3, "sharded", _echo_target({1: "Which plan?", 2: "Answer: 600"}))
    assert len(conv.turns) == 2
    assert conv.sharded is not None and conv.sharded.stop_reason == "correct" and conv.sharded.best_em == 1.0
    classes = [t.sharded.response_class for t in conv.turns if t.sharded]
    assert classes == ["clarification", "answer_attempt"]
    assert [t.scores["answer_attempt_rate"] for t in conv.turns] == [0.0, 1.0]
    assert Conversation.model_validate_json(conv.model_dump_json()) == conv  # survives the xdist hop
    # RECAP always adds its recap turn, even after a correct answer, and is scored on it:
    # here the recap turn is not answered ("Noted."), so RECAP scores 0 while its BEST is 1
    recap = _run(Q3, "recap", _echo_target({1: "Which plan?", 2: "Answer: 600"}))
    assert len(recap.turns) == 3 and recap.turns[-1].sharded is not None and recap.turns[-1].sharded.recap
    assert recap.turns[-1].rag_input.startswith(RECAP_INTRO)
    assert recap.sharded is not None and recap.sharded.best_f1 == 1.0 and recap.sharded.score_f1 == 0.0
    # the recap restates the shards revealed so far (1 and 2), not shard 3, never revealed
    assert recap.turns[-1].sharded.shard_ids == [1, 2]
    assert recap.turns[-1].rag_input.splitlines()[1:] == [f"- {Q3.shards[0].shard}", f"- {Q3.shards[1].shard}"]
    assert Q3.shards[2].shard not in recap.turns[-1].rag_input
    good = _run(Q3, "recap", _echo_target({1: "Which plan?", 2: "Answer: 600", 3: "Answer: 600"}))
    assert good.sharded is not None and good.sharded.score_f1 == 1.0 and good.sharded.final_em == 1.0
    # the other conditions are scored on BEST
    assert conv.sharded.score_f1 == conv.sharded.best_f1 == 1.0


def test_example_bot_history_none_loses_the_thread() -> None:
    from example_rag import make_bot

    qs = {q.id: q for q in load_sharded(EXAMPLE_FILE)}
    q = qs["sq-business-api-history"]
    got = {}
    for history in ("full", "none"):
        target = as_async(make_bot(history=history))
        got[history] = {c: _run(q, c, target).sharded.best_f1 for c in ("full", "sharded")}  # type: ignore[union-attr]
    assert got["full"]["full"] == got["none"]["full"] > 0
    assert got["full"]["sharded"] == pytest.approx(got["full"]["full"])
    assert got["none"]["sharded"] < got["full"]["sharded"]


def test_example_sampling_knob_is_seeded_per_run() -> None:
    from example_rag import make_bot

    messages = [{"role": "user", "content": "How many API requests per minute does the plan allow?"}]
    still = make_bot(temperature=0.0)
    assert still(messages, call_info=make_call_info("s", "c", 0, 0)) == still(messages)
    warm = make_bot(temperature=1.0)
    runs = [warm(messages, call_info=make_call_info("s", "c", r, 0)).answer for r in range(12)]
    again = [warm(messages, call_info=make_call_info("s", "c", r, 0)).answer for r in range(12)]
    assert runs == again  # the same run repeats exactly
    assert len(set(runs)) > 1  # other runs draw differently
