"""How the LLM client schedules and stores calls: request slots by priority (turn-loop
calls before judge calls), the judge gate, one heartbeat task for every held claim,
cache writes on the event loop that never wait for SQLite's lock, and the
environment's proxy read once per transport."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from pytest_ragdive.llm import LLMClient
from pytest_ragdive.llm import claims as claims_mod
from pytest_ragdive.llm import client as client_mod
from pytest_ragdive.llm import coalesce as coalesce_mod
from pytest_ragdive.llm.cache import PRESENCE, LLMCache
from pytest_ragdive.llm.keys import CachedResponse
from pytest_ragdive.llm.slots import JUDGE, TURN_LOOP, PrioritySlots, priority_of
from pytest_ragdive.llm.transport import _EnvRoute
from pytest_ragdive.testing import FakeLLMServer, config_for


class Score(BaseModel):
    score: float


# -- request slots ------------------------------------------------------------------------


def test_waiting_turn_loop_calls_get_a_slot_before_judge_calls() -> None:
    async def main() -> list[str]:
        slots = PrioritySlots(1)
        order: list[str] = []
        await slots.acquire()  # the one slot is taken: everyone below waits

        async def call(name: str, priority: int) -> None:
            async with slots.slot(priority):
                order.append(name)
                await asyncio.sleep(0)

        tasks = [asyncio.create_task(call(f"judge{i}", JUDGE)) for i in range(3)]
        await asyncio.sleep(0)
        tasks += [asyncio.create_task(call(f"turn{i}", TURN_LOOP)) for i in range(2)]
        await asyncio.sleep(0)
        assert slots.waiting == 5
        slots.release()
        await asyncio.gather(*tasks)
        assert slots.free == 1 and slots.waiting == 0
        return order

    # the turn-loop calls came last but go first; first come, first served within a priority
    assert asyncio.run(main()) == ["turn0", "turn1", "judge0", "judge1", "judge2"]
    assert priority_of("judge") == JUDGE
    assert {priority_of(r) for r in ("simulator", "validator", "classifier")} == {TURN_LOOP}


def test_a_cancelled_waiter_never_loses_a_slot() -> None:
    async def main() -> None:
        slots = PrioritySlots(1)
        await slots.acquire()
        waiter = asyncio.create_task(slots.acquire(JUDGE))
        handed = asyncio.create_task(slots.acquire(JUDGE))
        await asyncio.sleep(0)
        waiter.cancel()  # cancelled while waiting: skipped
        await asyncio.sleep(0)
        slots.release()  # handed to `handed`...
        handed.cancel()  # ...which is cancelled before it runs: the slot goes back
        for t in (waiter, handed):
            with pytest.raises(asyncio.CancelledError):
                await t
        assert slots.free == 1
        async with asyncio.timeout(1):
            await slots.acquire(TURN_LOOP)

    asyncio.run(main())
    with pytest.raises(ValueError):
        PrioritySlots(0)


def test_judge_calls_under_way_are_bounded(tmp_path: Path) -> None:
    """A fan-out of judge calls is prepared as slots come free: at most JUDGE_AHEAD x
    max_in_flight of them are looked up, claimed or sent at once (and the server never
    sees more than max_in_flight)."""
    with FakeLLMServer(lambda body: {"score": 1.0}, latency_s=0.02) as server:
        _bounded(server, tmp_path)


def _bounded(server: FakeLLMServer, tmp_path: Path) -> None:
    cfg = config_for(server, cache_dir=str(tmp_path / "c"), llm={"transport": "openai_http", "max_in_flight": 2})
    client = LLMClient.from_config(cfg)
    under_way: list[int] = []
    inner = client._complete_now

    async def watched(*args: Any, **kwargs: Any) -> Any:
        assert client._judge_gate is not None
        under_way.append(client_mod.JUDGE_AHEAD * client.max_in_flight - client._judge_gate._value)
        return await inner(*args, **kwargs)

    client._complete_now = watched  # type: ignore[method-assign]

    async def main() -> None:
        try:
            msgs = [[{"role": "user", "content": f"q{i}"}] for i in range(12)]
            res = await asyncio.gather(*(client.complete_json("judge", m, Score) for m in msgs))
            assert all(r.ok for r in res)
        finally:
            await client.aclose()

    asyncio.run(main())
    assert len(under_way) == 12
    assert max(under_way) == client_mod.JUDGE_AHEAD * 2
    assert server.request_count == 12 and server.max_in_flight <= 2


# -- claims' heartbeats -------------------------------------------------------------------


def test_one_task_renews_every_held_claim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coalesce_mod, "HEARTBEAT_S", 0.1)
    cache = LLMCache(tmp_path)
    beats: list[list[str]] = []
    real = cache.heartbeat_many

    def counted(keys: list[str]) -> list[bool]:
        beats.append(sorted(keys))
        return real(keys)

    cache.heartbeat_many = counted  # type: ignore[method-assign]

    async def io(fn: Any, *args: Any) -> Any:
        return fn(*args)

    async def main() -> None:
        hb = coalesce_mod.Heartbeats(cache, io)
        assert cache.claim("a") and cache.claim("b")
        hb.hold("a")
        hb.hold("b")
        first = {k: claims_mod.parse(cache.db.get(claims_mod.PREFIX + k)) for k in ("a", "b")}
        await asyncio.sleep(0.25)
        assert beats and all(b == ["a", "b"] for b in beats)  # both in one round
        for k in ("a", "b"):
            now = claims_mod.parse(cache.db.get(claims_mod.PREFIX + k))
            assert isinstance(now, claims_mod.Marker) and now.heartbeat > first[k].heartbeat  # type: ignore[union-attr]
        hb.drop("a")
        n = len(beats)
        await asyncio.sleep(0.25)
        assert all(b == ["b"] for b in beats[n:]) and len(beats) > n
        # another process took "b" over: the holder stops renewing it
        cache.db.set(claims_mod.PREFIX + "b", claims_mod.new_marker().model_copy(update={"pid": 1}).dump())
        await asyncio.sleep(0.25)
        assert "b" not in hb
        hb.stop()

    try:
        asyncio.run(main())
    finally:
        cache.close()


# -- cache writes on the event loop ---------------------------------------------------------


def test_a_write_runs_inline_unless_another_writer_holds_the_lock(tmp_path: Path) -> None:
    cache = LLMCache(tmp_path)
    resp = CachedResponse(content="x", model="m")
    try:
        assert cache.nowait(cache.set, "k1", resp) == (True, True)
        assert cache.peek("k1") == resp
        other = sqlite3.connect(str(tmp_path / "cache.db"), timeout=0)
        other.execute("BEGIN IMMEDIATE")  # another process is writing
        t0 = time.perf_counter()
        assert cache.nowait(cache.set, "k2", resp) == (False, None)  # not waited for, not counted
        assert cache.nowait(cache.claim, "k2") == (False, None)
        assert time.perf_counter() - t0 < 1.0
        assert cache.stats.errors == 0 and cache.stats.stores == 1
        other.rollback()
        other.close()
        assert cache.set("k2", resp)  # the worker-thread path, which waits
        assert cache.nowait(cache.claim, "k3") == (True, True)
        assert cache.nowait(cache.set, "k3", resp, release=True) == (True, True)
        assert not cache.claimed("k3")
    finally:
        cache.close()


def test_reads_go_through_the_loops_write_connection_and_fall_back_when_busy(tmp_path: Path) -> None:
    """Once the event loop's write connection is open, a lookup reads there (its page cache
    outlives its own writes); a read that finds the lock busy is asked again on the other one."""
    cache = LLMCache(tmp_path)
    resp = CachedResponse(content="x", model="m")
    try:
        assert cache.nowait(cache.set, "k1", resp) == (True, True)
        reads: list[str] = []
        real_get = cache._fast_get

        def get(fast: Any, key: str) -> Any:
            assert fast is cache._fast
            reads.append(key)
            if key == "busy":
                raise sqlite3.OperationalError("database is locked")
            return real_get(fast, key)

        cache._fast_get = get  # type: ignore[method-assign]
        assert cache.peek("k1") == resp and reads == ["k1"]
        assert cache.nowait(cache.set, "busy", resp) == (True, True)
        assert cache.peek("busy") == resp and reads[-1] == "busy"  # read again on the other connection
        assert cache.stats.errors == 0
    finally:
        cache.close()


def test_a_cached_run_sends_every_request_once(tmp_path: Path) -> None:
    """Through the inline writes: stored, released, replayed without a request."""
    with FakeLLMServer(lambda body: {"score": 0.5}) as server:
        _twice(server, tmp_path)


def _twice(server: FakeLLMServer, tmp_path: Path) -> None:
    cfg = config_for(server, cache_dir=str(tmp_path / "c"), llm={"transport": "openai_http"})

    async def run() -> list[float]:
        client = LLMClient.from_config(cfg)
        try:
            msgs = [[{"role": "user", "content": f"q{i}"}] for i in range(6)]
            res = await asyncio.gather(*(client.complete_json("judge", m, Score) for m in msgs))
            assert client.cache is not None
            await client.flush()  # the answers queued for the cache's next transaction (llm/writes.py)
            keys = list(client.cache.db.iterkeys())
            keys = [k for k in keys if not k.startswith(PRESENCE)]  # this client's presence row (llm/presence.py)
            assert len(keys) == 6 and not [k for k in keys if k.startswith(claims_mod.PREFIX)]  # every claim released
            return [r.value.score for r in res if r.value is not None]
        finally:
            await client.aclose()

    assert asyncio.run(run()) == [0.5] * 6
    assert asyncio.run(run()) == [0.5] * 6
    assert server.request_count == 6


# -- the environment's proxy ----------------------------------------------------------------


def test_the_proxy_is_read_from_the_environment_once(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(var, raising=False)
    assert _EnvRoute.of("http://llm.example:8000/v1/chat/completions").proxy is None
    monkeypatch.setenv("HTTP_PROXY", "http://user:pw@proxy.example:3128")
    route = _EnvRoute.of("http://llm.example:8000/v1/chat/completions")
    assert str(route.proxy) == "http://proxy.example:3128"
    assert route.proxy_auth is not None and route.proxy_auth.login == "user"
    assert not route.trust_env
    monkeypatch.setenv("NO_PROXY", "llm.example")
    assert _EnvRoute.of("http://llm.example:8000/v1/chat/completions").proxy is None
