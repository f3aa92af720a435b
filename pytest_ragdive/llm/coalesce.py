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

from .cache import CachedResponse, LLMCache
from .claims import HEARTBEAT_S, Watch

__all__ = ["CLAIM_POLL_S", "Heartbeat", "SingleFlight", "claim_or_wait"]

CLAIM_POLL_S = 0.05

R = TypeVar("R")
IO = Callable[..., Awaitable[Any]]


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


async def claim_or_wait(cache: LLMCache, key: str, io: IO) -> tuple[CachedResponse | None, bool]:
    """(answer, waited): another process's stored answer, or (None, ...) once
    this process holds the claim on ``key`` (it must then fetch, store and
    release; :class:`Heartbeat` keeps the claim alive meanwhile). A stale
    claim is taken over (:mod:`.claims`). ``io`` runs the cache's blocking
    writes (in a worker thread)."""
    waited = False
    watch = Watch()
    while not await io(cache.claim, key, None, watch):
        # another process is fetching this very request: wait for its answer
        waited = True
        await asyncio.sleep(CLAIM_POLL_S)
        hit = cache.peek(key)
        if hit is not None:
            return hit, True
    # double check: another process may have stored it between our lookup and our claim
    hit = cache.peek(key)
    if hit is not None:
        cache.release(key)
        return hit, waited
    return None, waited


class Heartbeat:
    """Renews this process's claim on ``key`` every :data:`.claims.HEARTBEAT_S`
    seconds until stopped (or until the claim is no longer ours)."""

    def __init__(self, cache: LLMCache, key: str, io: IO) -> None:
        self._cache = cache
        self._key = key
        self._io = io
        self._task: asyncio.Task[None] | None = None

    def start(self) -> Heartbeat:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"ragdive-claim-{self._key[:8]}")
        return self

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_S)
            if not await self._io(self._cache.heartbeat, self._key):
                return

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
