"""The judge cache's batched writes (llm/writes.py): the claims and stores of many calls
share one transaction; a finished call's answer is queued and written at the latest when
the client closes, so an interrupted run neither loses nor duplicates a finished call."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from pytest_ragdive.llm import LLMClient
from pytest_ragdive.llm import claims as claims_mod
from pytest_ragdive.llm.cache import PRESENCE, LLMCache
from pytest_ragdive.llm.keys import CachedResponse
from pytest_ragdive.llm.writes import WriteBehind
from pytest_ragdive.testing import FakeLLMServer, config_for


class Score(BaseModel):
    score: float


def _rows(directory: Path) -> tuple[list[str], list[str]]:
    """(answers, claim markers) stored in ``directory``'s cache.db, read with plain sqlite."""
    con = sqlite3.connect(str(directory / "cache.db"))
    try:
        keys = [k for (k,) in con.execute("SELECT key FROM Cache")]
        count = con.execute("SELECT value FROM Settings WHERE key = 'count'").fetchone()[0]
    finally:
        con.close()
    assert count == len(keys)  # diskcache's own count, kept by its triggers
    return ([k for k in keys if not k.startswith(claims_mod.PREFIX)],
            [k for k in keys if k.startswith(claims_mod.PREFIX) and not k.startswith(PRESENCE)])


def _another_process_is_there(directory: Path) -> LLMCache:
    """A second client's presence row in the cache (.presence): the clients then claim."""
    other = LLMCache(directory)
    assert other.presence_beat(claims_mod.new_marker()) == 0
    return other


def _presence_rows(directory: Path) -> list[str]:
    con = sqlite3.connect(str(directory / "cache.db"))
    try:
        return [k for (k,) in con.execute("SELECT key FROM Cache") if k.startswith(PRESENCE)]
    finally:
        con.close()


def _judge_24(server: FakeLLMServer, tmp_path: Path, while_open: Callable[[], bool] = lambda: True) -> None:
    """24 different judge calls at once through one client on ``tmp_path / "c"``, all sent;
    ``while_open`` must hold before the client closes."""
    cfg = config_for(server, cache_dir=str(tmp_path / "c"), llm={"transport": "openai_http", "max_in_flight": 16})

    async def run() -> None:
        client = LLMClient.from_config(cfg)
        try:
            msgs = [[{"role": "user", "content": f"q{i}"}] for i in range(24)]
            res = await asyncio.gather(*(client.complete_json("judge", m, Score) for m in msgs))
            assert all(r.value is not None and not r.cached for r in res)
            assert while_open()
        finally:
            await client.aclose()

    asyncio.run(run())


def test_many_calls_share_few_transactions_and_every_claim_is_released(tmp_path: Path) -> None:
    _another_process_is_there(tmp_path / "c")
    batches: list[int] = []
    real = LLMCache.apply

    def counted(self: LLMCache, ops: list[Any]) -> list[Any]:
        batches.append(len(ops))
        return real(self, ops)

    with FakeLLMServer(lambda body: {"score": 0.5}) as server:
        LLMCache.apply = counted  # type: ignore[method-assign]
        try:
            _judge_24(server, tmp_path)
        finally:
            LLMCache.apply = real  # type: ignore[method-assign]
        assert sum(batches) == 48  # 24 claims, 24 stores
        assert len(batches) < 24  # where each call paid two transactions
        answers, markers = _rows(tmp_path / "c")
        assert len(answers) == 24 and markers == []
        assert server.request_count == 24


def test_a_client_alone_with_its_cache_claims_nothing_and_leaves_no_row(tmp_path: Path) -> None:
    """No other process shares the cache: no claim, so a run's writes are its stores, a few
    transactions in all; the presence row goes when the client closes."""
    batches: list[int] = []
    claims: list[str] = []
    real, real_claim = LLMCache.apply, LLMCache.claim_unless_stored

    def counted(self: LLMCache, ops: list[Any]) -> list[Any]:
        batches.append(len(ops))
        return real(self, ops)

    def claim(self: LLMCache, key: str, *a: Any, **k: Any) -> Any:
        claims.append(key)
        return real_claim(self, key, *a, **k)

    with FakeLLMServer(lambda body: {"score": 0.5}, latency_s=0.01) as server:
        LLMCache.apply, LLMCache.claim_unless_stored = counted, claim  # type: ignore[method-assign]
        try:
            _judge_24(server, tmp_path, while_open=lambda: _presence_rows(tmp_path / "c") != [])  # there while it runs
        finally:
            LLMCache.apply, LLMCache.claim_unless_stored = real, real_claim  # type: ignore[method-assign]
        assert claims == [] and sum(batches) == 24 and len(batches) <= 4  # the stores, a few batches
        answers, markers = _rows(tmp_path / "c")
        assert len(answers) == 24 and markers == [] and _presence_rows(tmp_path / "c") == []
        assert server.request_count == 24


def test_an_interrupted_run_keeps_every_finished_call_once(tmp_path: Path) -> None:
    """Calls that finished before the interrupt are written when the loop ends (the client's
    lifetime closes it), even though nobody awaited aclose; the rerun sends only the rest."""
    with FakeLLMServer(lambda body: {"score": 0.5}) as server:
        cfg = config_for(server, cache_dir=str(tmp_path / "c"), llm={"transport": "openai_http"})
        msgs = [[{"role": "user", "content": f"q{i}"}] for i in range(8)]
        client = LLMClient.from_config(cfg)

        async def interrupted() -> None:
            done = await asyncio.gather(*(client.complete_json("judge", m, Score) for m in msgs[:5]))
            assert all(r.ok for r in done)
            writes = client._writes
            assert writes is not None and writes._queued  # queued, not yet written
            late = [asyncio.create_task(client.complete_json("judge", m, Score)) for m in msgs[5:]]
            await asyncio.sleep(0)
            for t in late:  # the interrupt: the calls in flight are cancelled
                t.cancel()
            await asyncio.gather(*late, return_exceptions=True)
            raise KeyboardInterrupt

        try:
            asyncio.run(interrupted())
        except KeyboardInterrupt:
            pass
        client.close()
        answers, markers = _rows(tmp_path / "c")
        assert len(answers) == 5 and markers == []  # the finished ones, once; no claim left behind
        sent = server.request_count

        async def rerun() -> list[bool]:
            again = LLMClient.from_config(cfg)
            try:
                res = await asyncio.gather(*(again.complete_json("judge", m, Score) for m in msgs))
                return [r.cached for r in res]
            finally:
                await again.aclose()

        assert asyncio.run(rerun()) == [True] * 5 + [False] * 3
        assert server.request_count == sent + 3
        answers, markers = _rows(tmp_path / "c")
        assert len(answers) == 8 and markers == []


def test_a_claim_whose_caller_was_cancelled_is_released(tmp_path: Path) -> None:
    cache = LLMCache(tmp_path)

    async def main() -> None:
        writes = WriteBehind(cache)
        task = asyncio.create_task(writes.claim("k"))
        await asyncio.sleep(0)  # the claim is queued for the end of this turn
        task.cancel()
        await asyncio.sleep(0)  # the batch runs: the claim is made for nobody
        await writes.aclose()  # ... and released

    try:
        asyncio.run(main())
        assert not cache.claimed("k")
    finally:
        cache.close()


def test_a_busy_lock_moves_the_batch_to_a_worker_thread(tmp_path: Path) -> None:
    """Another writer holds SQLite's lock: the event loop keeps turning, the batch waits in a
    worker thread and is written once the lock is free."""
    cache = LLMCache(tmp_path)
    # the database and the loop's write connection exist (opening them waits for the lock)
    assert cache.nowait(cache.set, "warm", CachedResponse(content="x")) == (True, True)
    other = sqlite3.connect(str(tmp_path / "cache.db"), isolation_level=None)

    async def main() -> tuple[int, tuple[CachedResponse | None, bool]]:
        writes = WriteBehind(cache)
        other.execute("BEGIN IMMEDIATE")
        claim = asyncio.create_task(writes.claim("k"))
        writes.store("s", CachedResponse(content="y"))
        turns = 0
        while not claim.done() and turns < 20:  # the loop turns while the batch waits
            await asyncio.sleep(0.01)
            turns += 1
        other.execute("COMMIT")
        got = await claim
        await writes.aclose()
        return turns, got

    try:
        turns, got = asyncio.run(main())
        assert turns == 20 and got == (None, True)
        assert cache.peek("s") == CachedResponse(content="y") and cache.claimed("k")
    finally:
        other.close()
        cache.close()


def test_a_flush_mid_run_writes_claims_and_stores_and_cancels_nobody(tmp_path: Path) -> None:
    cache = LLMCache(tmp_path)

    async def main() -> tuple[CachedResponse | None, bool]:
        writes = WriteBehind(cache)
        claim = asyncio.create_task(writes.claim("k"))
        await asyncio.sleep(0)
        writes.store("s", CachedResponse(content="y"), release=False)
        await writes.flush()
        assert not writes._ops and writes.pending("s") is None
        return await claim

    try:
        assert asyncio.run(main()) == (None, True)
        assert cache.claimed("k") and cache.peek("s") == CachedResponse(content="y")
    finally:
        cache.close()


def test_a_claim_finds_an_answer_stored_since_the_lookup_and_respects_a_live_holder(tmp_path: Path) -> None:
    cache = LLMCache(tmp_path)
    other = LLMCache(tmp_path)  # another process's view of the same directory
    answer = CachedResponse(content="stored meanwhile")

    async def main() -> list[tuple[CachedResponse | None, bool]]:
        writes = WriteBehind(cache)
        other.set("a", answer)
        # another host's live, fresh claim on "b"
        live = claims_mod.Marker(host="elsewhere", pid=1, token="t", heartbeat=time.time())
        other.db.set(claims_mod.PREFIX + "b", live.dump(), expire=60)
        return [await writes.claim("a"), await writes.claim("b"), await writes.claim("c")]

    try:
        got = asyncio.run(main())
        assert got == [(answer, False), (None, False), (None, True)]
        assert not cache.claimed("a") and cache.claimed("c")
    finally:
        other.close()
        cache.close()


def test_a_process_that_joins_waits_for_the_calls_in_flight_of_one_that_was_alone(tmp_path: Path) -> None:
    """The first client is alone and sends without claims; a second joins while those calls
    are in flight: the first claims them at once, the second waits for their answers instead
    of asking again, and no claim is left behind."""
    with FakeLLMServer(lambda body: {"score": 0.5}, latency_s=0.4) as server:
        cfg = config_for(server, cache_dir=str(tmp_path / "c"), llm={"transport": "openai_http", "max_in_flight": 16})
        msgs = [[{"role": "user", "content": f"q{i}"}] for i in range(10)]

        async def run() -> tuple[list[bool], list[bool]]:
            first, second = LLMClient.from_config(cfg), LLMClient.from_config(cfg)
            try:
                a = [asyncio.create_task(first.complete_json("judge", m, Score)) for m in msgs]
                await asyncio.sleep(0.1)  # the first is alone: its calls are in flight without claims
                assert first._presence is not None and await first._presence.alone()
                b = await asyncio.gather(*(second.complete_json("judge", m, Score) for m in msgs))
                done = await asyncio.gather(*a)
                return [r.cached for r in done], [r.cached for r in b]
            finally:
                await first.aclose()
                await second.aclose()

        first_cached, second_cached = asyncio.run(run())
        assert first_cached == [False] * 10 and second_cached == [True] * 10
        assert server.request_count == 10  # nobody asked again
        answers, markers = _rows(tmp_path / "c")
        assert len(answers) == 10 and markers == [] and _presence_rows(tmp_path / "c") == []


def test_a_joiner_waits_for_the_first_to_say_it_claims_however_late_it_notices(tmp_path: Path) -> None:
    """On a loaded machine the first client notices the second late (here 0.8 s: longer than
    any fixed delay a joiner could wait): the second sends nothing until the first says it
    claims, and then finds every answer stored or claimed; nobody asks twice."""
    with FakeLLMServer(lambda body: {"score": 0.5}, latency_s=0.3) as server:
        cfg = config_for(server, cache_dir=str(tmp_path / "c"), llm={"transport": "openai_http", "max_in_flight": 16})
        msgs = [[{"role": "user", "content": f"q{i}"}] for i in range(10)]

        async def run() -> list[bool]:
            first, second = LLMClient.from_config(cfg), LLMClient.from_config(cfg)
            try:
                a = [asyncio.create_task(first.complete_json("judge", m, Score)) for m in msgs]
                await asyncio.sleep(0.1)  # alone: its calls are in flight without claims
                assert first._presence is not None and await first._presence.alone()
                assert first.cache is not None
                seen, blind_until = first.cache.presence_of_others, time.monotonic() + 0.8

                def late(token: str) -> tuple[int, int]:  # the first's loop runs late: it sees nobody yet
                    return (0, 0) if time.monotonic() < blind_until else seen(token)

                first.cache.presence_of_others = late  # type: ignore[method-assign]
                b = await asyncio.gather(*(second.complete_json("judge", m, Score) for m in msgs))
                await asyncio.gather(*a)
                return [r.cached for r in b]
            finally:
                await first.aclose()
                await second.aclose()

        assert asyncio.run(run()) == [True] * 10
        assert server.request_count == 10  # nobody asked again
        answers, markers = _rows(tmp_path / "c")
        assert len(answers) == 10 and markers == [] and _presence_rows(tmp_path / "c") == []
