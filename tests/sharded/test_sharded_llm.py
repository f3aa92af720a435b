"""The sharded conversation with the LLM user, classifier and judge, against the fake LLM server:
one shard per turn at most, a clarification answered without revealing, a stop on the
correct answer, and a rerun served from the cache."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from pytest_ragdive.core.records import Conversation, TargetResponse, Turn
from pytest_ragdive.llm import LLMClient
from pytest_ragdive.run.target import as_async
from pytest_ragdive.run.turn_loop import run_conversation
from pytest_ragdive.sharded.conditions import ReplyScorer, ShardedUser, sharded_conversation
from pytest_ragdive.sharded.questions import ShardedQuestion
from pytest_ragdive.sharded.simulator import LLMClassifier, LLMJudge, ShardSimulator
from pytest_ragdive.testing import FakeLLMServer, config_for

Q = ShardedQuestion.model_validate(
    {
        "id": "q-rate",
        "question": "How many API requests per minute does the Business plan of Lumio allow?",
        "answer": "600",
        "supporting_doc_ids": ["api-rate-limits"],
        "shards": [
            {"shard_id": 1, "shard": "How many API requests per minute does the plan allow?"},
            {"shard_id": 2, "shard": "It is the Business plan."},
            {"shard_id": 3, "shard": "The plan is of Lumio."},
        ],
    }
)


def handler(body: dict[str, Any]) -> dict[str, Any]:
    text = "\n".join(m["content"] for m in body["messages"])
    if "You judge whether a candidate answer" in text:
        return {"correct": "600" in text.split("Candidate answer:")[1], "reason": "same value"}
    if "You classify one reply" in text:
        reply = text.split("The reply to classify:")[1]
        if "?" in reply:
            return {"response_class": "clarification", "reason": "asks back"}
        if "Answer:" in reply:
            return {"response_class": "answer_attempt", "reason": "commits"}
        return {"response_class": "discussion", "reason": "talks"}
    assert "You play a user" in text
    convo = text.split("The conversation so far:")[1]
    last_assistant = [line for line in convo.splitlines() if line.startswith("Assistant:")][-1]
    if last_assistant.rstrip().endswith("?"):
        return {"response": "The one I mentioned, for my company.", "shard_id": -1}
    pending = text.split("in their intended order:")[1].strip().splitlines()[0]
    sid, shard = pending.split(": ", 1)
    return {"response": f"Oh, and {shard[0].lower()}{shard[1:]}", "shard_id": int(sid)}


async def chatbot(messages: list[dict[str, str]]) -> TargetResponse:
    users = [m["content"] for m in messages if m["role"] == "user"]
    if len(users) == 1:
        return TargetResponse(answer="Which plan do you mean?")
    if "Business" in users[-1]:
        return TargetResponse(answer="Business allows 600 requests per minute.\nAnswer: 600")
    return TargetResponse(answer="Thanks, noted.")


def _converse(server: FakeLLMServer, cache: Path) -> Conversation:
    cfg = config_for(server, cache_dir=str(cache), llm={"transport": "openai_http"})

    async def go() -> Conversation:
        client = LLMClient.from_config(cfg)
        try:
            scorer = ReplyScorer(classifier=LLMClassifier(client), judge=LLMJudge(client))
            user = ShardedUser(Q, "sharded", scorer, simulator=ShardSimulator(client, run=0))
            conv = sharded_conversation(Q, "sharded", "core", 0)
            return await run_conversation(conv, user, as_async(chatbot), probe=False)
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_llm_user_reveals_one_shard_per_turn_and_stops_on_the_answer(tmp_path: Path) -> None:
    with FakeLLMServer(handler) as server:
        conv = _converse(server, tmp_path / "cache")
        assert conv.error is None, conv.error
        turns = [t.sharded for t in conv.turns]
        assert all(t is not None for t in turns)
        # turn 1: the intent shard verbatim; turn 2 answers the clarification, revealing
        # nothing; turn 3 reveals shard 2 in the simulator's words; then the answer is right
        assert conv.turns[0].rag_input == Q.shards[0].shard
        assert [t.new_shard for t in turns if t] == [1, None, 2]
        assert all(len(t.shard_ids) <= 1 for t in turns if t)
        assert conv.turns[2].rag_input.startswith("Oh, and it is the Business plan")
        assert [t.response_class for t in turns if t] == ["clarification", "discussion", "answer_attempt"]
        assert all(t.class_source == "llm" for t in turns if t)
        assert conv.sharded is not None and conv.sharded.stop_reason == "correct" and conv.sharded.best_em == 1.0
        assert turns[2] is not None and turns[2].extracted_answer == "600"
        assert turns[2].judged_correct == 1.0 and conv.sharded.best_judged == 1.0  # the optional judge
        requests = server.request_count
        assert requests == 6  # 2 simulator turns + 3 classifications + 1 judged answer attempt
        sim_bodies = [b for b in server.requests if "You play a user" in json.dumps(b)]
        assert len({re.sub(r"\s+", " ", json.dumps(b["messages"])) for b in sim_bodies}) == 2
        # the study's simulator: the dialogue and the unrevealed shards, never the full question,
        # at temperature 1.0 with a 200-token cap
        for b in sim_bodies:
            prompt = "\n".join(m["content"] for m in b["messages"])
            assert Q.question not in prompt and "Lumio" in prompt  # shard 3 is unrevealed: shown as a shard
            assert b["temperature"] == 1.0 and b["max_tokens"] == 200
        later = "\n".join(m["content"] for m in sim_bodies[-1]["messages"])
        assert "1: How many API" not in later.split("The conversation so far:")[0]  # revealed: not listed again
        judge_bodies = [b for b in server.requests if "You judge whether" in json.dumps(b)]
        assert judge_bodies and all("max_tokens" not in b for b in judge_bodies)  # no cap on the other roles

        again = _converse(server, tmp_path / "cache")
        assert server.request_count == requests  # the rerun is served from the cache
        assert [t.rag_input for t in again.turns] == [t.rag_input for t in conv.turns]


def test_simulator_temperature_and_cap_are_configurable(tmp_path: Path) -> None:
    with FakeLLMServer(handler) as server:
        cfg = config_for(server, cache_dir=str(tmp_path / "c"), llm={"transport": "openai_http"})

        async def go() -> None:
            client = LLMClient.from_config(cfg)
            try:
                sim = ShardSimulator(client, run=0, temperature=0.3, max_tokens=None)
                conv = sharded_conversation(Q, "sharded", "core", 0)
                conv.turns.append(Turn(index=0, rag_input=Q.shards[0].shard, answer="Sure."))
                await sim.next_message(Q, conv, Q.shards[1:])
            finally:
                await client.aclose()

        asyncio.run(go())
        (body,) = server.requests
        assert body["temperature"] == 0.3 and "max_tokens" not in body


def test_the_suite_settings_reach_the_simulator_of_a_run(tmp_path: Path) -> None:
    from pytest_ragdive import run_suite
    from pytest_ragdive.core.config_models import SuiteConfig

    assert SuiteConfig().sharded_simulator_temperature == 1.0 and SuiteConfig().sharded_simulator_max_tokens == 200
    path = tmp_path / "sharded.jsonl"
    path.write_text(json.dumps(Q.model_dump(mode="json")) + "\n")
    with FakeLLMServer(handler) as server:
        cfg = config_for(server, cache_dir=str(tmp_path / "c"), llm={"transport": "openai_http"}, suites={"s": {
            "sharded": [str(path)], "sharded_conditions": ["sharded"], "sharded_simulator_temperature": 0.4,
            "sharded_simulator_max_tokens": 50}})
        result = run_suite(chatbot, cfg, suite="s")
        sims = [b for b in server.requests if "You play a user" in json.dumps(b)]
    assert result.sharded is not None and sims
    assert all(b["temperature"] == 0.4 and b["max_tokens"] == 50 for b in sims)
