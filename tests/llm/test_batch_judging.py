"""judge_mode = "batch": judge calls through the fake server's batch API, cached like direct calls."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pytest_ragdive.core.records import Context, Conversation, Turn
from pytest_ragdive.llm import LLMClient
from pytest_ragdive.llm.prices import PriceMap
from pytest_ragdive.metrics.judged import judge_conversation
from pytest_ragdive.testing import FakeLLMServer, config_for

GOOD = {"claims": [{"claim": "c", "supported": True}], "verdicts": [{"relevant": True}],
        "statements": [{"statement": "s", "attributed": True}], "correct": True, "forgetful": False,
        "turns": [], "retained": True}
CALLS = 3 * (4 * 2 + 2)  # 3 conversations of 2 answered turns


def _convs() -> list[Conversation]:
    return [Conversation(id=f"c{i}", turns=[
        Turn(index=k, rag_input=f"question {k} of {i}", standalone_question=f"question {k} of {i}",
             ground_truth="g", answer=f"answer {k} of {i}", contexts=[Context(id="x", text=f"context {i}")])
        for k in range(2)]) for i in range(3)]


def _cfg(server: FakeLLMServer, tmp_path: Path, **llm: Any):  # type: ignore[no-untyped-def]
    return config_for(server, cache_dir=str(tmp_path / "cache"), judge_mode="batch", record_mode=llm.pop("mode", "new_episodes"),
                      llm={"transport": "openai_http", "batch_poll_s": 0.02, "batch_max_wait_s": 5, **llm})


def _judge(cfg: Any) -> tuple[list[Conversation], Any]:
    convs = _convs()

    async def go() -> Any:
        client = LLMClient.from_config(cfg)
        try:
            await asyncio.gather(*(judge_conversation(c, client, cfg, {}) for c in convs))
            return client.stats
        finally:
            await client.aclose()

    return convs, asyncio.run(go())


def test_batch_submit_poll_cache_and_replay(tmp_path: Path) -> None:
    with FakeLLMServer(handler=lambda body: GOOD, batch_delay_s=0.1) as server:
        cfg = _cfg(server, tmp_path)
        convs, stats = _judge(cfg)
        assert server.request_count == 0  # no direct chat request
        assert len(server.batch.batches) == 1 and server.batch.lines_answered == CALLS
        assert server.batch_polls >= 2  # in_progress first, completed later
        total = stats.total()
        assert (total.batched, total.batch_fallbacks, total.requests) == (CALLS, 0, CALLS)
        assert total.prompt_tokens > 0
        assert all(c.scores["correctness"] == 1.0 and c.scores["forgetfulness"] == 0.0 for c in convs)

        # a rerun is free: every answer is in the cache under the direct call's key
        again, stats2 = _judge(cfg)
        assert len(server.batch.batches) == 1 and server.request_count == 0
        assert stats2.total().cache_hits == CALLS
        assert [c.scores for c in again] == [c.scores for c in convs]

        # and record_mode none replays it with no request at all
        replay, stats3 = _judge(_cfg(server, tmp_path, mode="none"))
        assert stats3.total().requests == 0 and server.request_count == 0
        assert [c.scores for c in replay] == [c.scores for c in convs]


def test_one_batch_whatever_the_requests_in_flight(tmp_path: Path) -> None:
    """Batched judge calls hold no request slot: with one request in flight they still
    go out as one batch (the judge calls' admission gate would have split them into
    batches of 2 x max_in_flight, waited for one after another)."""
    with FakeLLMServer(handler=lambda body: GOOD, batch_delay_s=0.05) as server:
        convs, stats = _judge(_cfg(server, tmp_path, max_in_flight=1))
        assert len(server.batch.batches) == 1 and server.batch.lines_answered == CALLS
        assert server.request_count == 0 and stats.total().batched == CALLS


def test_failed_batch_falls_back_to_direct_calls_with_one_line(tmp_path: Path) -> None:
    with FakeLLMServer(handler=lambda body: GOOD, batch_outcome="failed") as server:
        convs, stats = _judge(_cfg(server, tmp_path))
        assert server.request_count == CALLS  # every call sent directly
        total = stats.total()
        assert (total.batched, total.batch_fallbacks) == (0, CALLS)
        assert len(stats.notes) == 1 and "failed" in stats.notes[0] and "sent directly" in stats.notes[0]
        assert stats.notes[0] in stats.summary_lines()
        assert all(c.scores["correctness"] == 1.0 for c in convs)


def test_expired_batch_keeps_what_it_answered(tmp_path: Path) -> None:
    with FakeLLMServer(handler=lambda body: GOOD, batch_outcome="expired") as server:
        server.batch.expire_after = 7
        _, stats = _judge(_cfg(server, tmp_path))
        total = stats.total()
        assert (total.batched, total.batch_fallbacks) == (7, CALLS - 7)
        assert server.request_count == CALLS - 7


def test_a_batch_past_the_bounded_wait_is_cancelled_and_falls_back(tmp_path: Path) -> None:
    with FakeLLMServer(handler=lambda body: GOOD, batch_outcome="stuck") as server:
        _, stats = _judge(_cfg(server, tmp_path, batch_max_wait_s=0.2))
        (batch,) = server.batch.batches.values()
        assert batch["status"] == "cancelled"
        assert server.request_count == CALLS
        assert "still in_progress after 0.2 s" in stats.notes[0]


def test_batch_prices_are_the_batch_rates() -> None:
    prices = PriceMap()
    normal = prices.cost("openai/gpt-4o-mini", 1000, 1000)
    batch = prices.cost("openai/gpt-4o-mini", 1000, 1000, batch=True)
    if normal is None:  # no litellm price map here
        return
    assert batch is not None and batch < normal
    assert prices.cost("openai/no-such-model", 10, 10, batch=True) is None


def test_a_judge_call_a_turn_loop_waits_for_is_sent_directly(tmp_path: Path) -> None:
    """The sharded correctness judge runs inside a turn (``turn_loop=True``): with
    ``judge_mode = "batch"`` it is sent at once, not batched; other judge calls are."""
    from pydantic import BaseModel

    class Reply(BaseModel):
        correct: bool

    with FakeLLMServer(handler=lambda body: GOOD, batch_delay_s=0.05) as server:
        cfg = _cfg(server, tmp_path)

        async def go(turn_loop: bool, text: str) -> bool | None:
            client = LLMClient.from_config(cfg)
            try:
                res = await client.complete_json("judge", [{"role": "user", "content": text}], Reply, turn_loop=turn_loop)
                return None if res.value is None else res.value.correct
            finally:
                await client.aclose()

        assert asyncio.run(go(True, "in a turn")) is True
        assert server.request_count == 1 and not server.batch.batches
        assert asyncio.run(go(False, "after the turns")) is True
        assert server.request_count == 1 and len(server.batch.batches) == 1
