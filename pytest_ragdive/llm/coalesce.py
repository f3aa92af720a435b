"""Request coalescing: identical requests in flight at once share one fetch.

In this process, :class:`SingleFlight` keeps one future per request key: the
first caller fetches, the others await its answer (a cancelled leader does not
cancel them: one of them fetches instead). Across processes sharing a cache
(pytest-xdist workers), :func:`claim_or_wait` takes the cache's claim marker
for a miss, or waits for the process that holds it to store the answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from .cache import LLMCache
from .claims import HEARTBEAT_S, Watch
from .keys import CachedResponse

__all__ = ["CLAIM_POLL_S", "Heartbeats", "SingleFlight", "claim_or_wait"]

CLAIM_POLL_S = 0.05

R = TypeVar("R")
IO = Callable[..., Awaitable[Any]]
Claim = Callable[[str, Watch], Awaitable[tuple[CachedResponse | None, bool]]]


class SingleFlight(Generic[R]):
    """One fetch per key among the callers of one event loop."""

    def __init__(self) -> None:
        self._inflight: dict[str, asyncio.Future[R]] = {}

    def reset(self) -> None:
        """Forget every future (they belong to a loop that is gone)."""
        self._inflight = {}

    async def run(self, key: str, lead: Callable[[], Awaitable[R]]) -> tuple[R, bool]:
        """(result, shared): ``lead()``'s result, or the one of the identical
        call already in flight (``shared``, nothing fetched by this caller)."""
        fut = self._inflight.get(key)
        if fut is not None:
            try:
                return await asyncio.shield(fut), True
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if fut.cancelled() and task is not None and not task.cancelling():
                    # the caller we waited for was cancelled, we were not: fetch it ourselves
                    return await self.run(key, lead)
                raise
        fut = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        try:
            result = await lead()
            fut.set_result(result)
            return result, False
        except BaseException as e:
            if not fut.done():
                if isinstance(e, asyncio.CancelledError):
                    fut.cancel()
                else:
                    fut.set_exception(e)
            raise
        finally:
            if self._inflight.get(key) is fut:
                del self._inflight[key]
            if fut.done() and not fut.cancelled():
                fut.exception()  # mark retrieved: no "never retrieved" noise


async def claim_or_wait(cache: LLMCache, key: str, claim: Claim) -> tuple[CachedResponse | None, bool]:
    """(answer, waited): another process's stored answer, or (None, ...) once
    this process holds the claim on ``key`` (it must then fetch, store and
    release; :class:`Heartbeats` keeps the claim alive meanwhile). A stale
    claim is taken over (:mod:`.claims`). ``claim`` is
    :meth:`.writes.WriteBehind.claim`: the cache's claim, which also checks that
    no other process stored the answer since our lookup."""
    waited = False
    watch = Watch()
    while True:
        hit, claimed = await claim(key, watch)
        if hit is not None:
            return hit, waited
        if claimed:
            return None, waited
        # another process is fetching this very request: wait for its answer
        waited = True
        await asyncio.sleep(CLAIM_POLL_S)
        hit = cache.peek(key)
        if hit is not None:
            return hit, True


class Heartbeats:
    """Renews the claims this process holds on one event loop (each at most
    :data:`.claims.HEARTBEAT_S` seconds after its claim or its last renewal) from
    one task, in one cache transaction per round; claims due within the next
    quarter of the interval are renewed in the same round. One task per claim cost
    a task, a timer and a cancellation per call, and a claim waits for a request
    slot (maybe seconds) while it is held."""

    def __init__(self, cache: LLMCache, io: IO) -> None:
        self._cache = cache
        self._io = io
        self._held: dict[str, float] = {}  # key -> loop time of its claim or last renewal
        self._task: asyncio.Task[None] | None = None

    def hold(self, key: str) -> None:
        """Keep this process's claim on ``key`` alive until :meth:`drop`."""
        loop = asyncio.get_running_loop()
        self._held[key] = loop.time()
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._run(), name="ragdive-claim-heartbeats")

    def drop(self, key: str) -> None:
        self._held.pop(key, None)

    def __contains__(self, key: str) -> bool:
        return key in self._held

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._held:
            await asyncio.sleep(max(0.0, min(self._held.values()) + HEARTBEAT_S - loop.time()))
            now = loop.time()
            due = [k for k, t in self._held.items() if now - t >= 0.75 * HEARTBEAT_S]
            if not due:
                continue
            alive = await self._io(self._cache.heartbeat_many, due)
            now = loop.time()
            for key, ok in zip(due, alive, strict=True):
                if key not in self._held:
                    continue  # dropped meanwhile
                if ok:
                    self._held[key] = now
                else:
                    del self._held[key]  # no longer ours

    def stop(self) -> None:
        """Stop renewing (the loop is going away)."""
        self._held.clear()
        if self._task is not None:
            self._task.cancel()
            self._task = None
