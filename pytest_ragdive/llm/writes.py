"""The judge cache's writes of one event loop, batched: one SQLite transaction for the
claims and stores of many calls, where each call paid two (a claim, then a store that
releases it). At 32 or 64 calls in flight those transactions were a third of the
client's CPU per call.

Claims
    A miss is claimed (:meth:`WriteBehind.claim`) in the transaction that ends the
    current turn of the event loop: every call that missed in that turn shares it. The
    claim also checks, in the same transaction, whether another process stored the
    answer since the lookup (it used to be a claim, a read, and a release when the read
    found one).

Stores
    A finished call's answer is queued (:meth:`WriteBehind.store`) and the call returns
    at once; the queue is written, with its claims released, in the next claim's
    transaction or at the latest :data:`STORE_DELAY_S` later. Until then this process
    reads the answer from the queue (:meth:`WriteBehind.pending`) and other processes
    keep waiting on its claim, so nobody sends the request again. Closing the client
    (``aclose``, which every run's shutdown and interrupt path awaits, or ``close``)
    writes what is queued: an interrupted run loses no finished call. A process killed
    outright (SIGKILL) loses at most the last :data:`STORE_DELAY_S` of answers, as it
    loses the calls in flight; their claims go stale as any killed holder's do.

A transaction is tried on the event loop on a connection that never waits for SQLite's
lock (:meth:`LLMCache.nowait`), and only when another writer holds the lock is it run in
a worker thread, one batch at a time (``io_threads=False``: always on the loop).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from typing import Any

from .cache import LLMCache
from .claims import Watch
from .keys import CachedResponse

__all__ = ["STORE_DELAY_S", "WriteBehind"]

#: the longest a finished call's answer waits in the queue before its transaction
STORE_DELAY_S = 0.02


class _Claim:
    __slots__ = ("future", "key", "watch")

    def __init__(self, key: str, watch: Watch | None, future: asyncio.Future[tuple[CachedResponse | None, bool]]):
        self.key, self.watch, self.future = key, watch, future


class _Store:
    __slots__ = ("key", "release", "value")

    def __init__(self, key: str, value: CachedResponse, release: bool) -> None:
        self.key, self.value, self.release = key, value, release


class _Release:
    """A claim made for a caller that was cancelled before it heard of it."""

    __slots__ = ("key",)

    def __init__(self, key: str) -> None:
        self.key = key


_Op = _Claim | _Store | _Release


class WriteBehind:
    """Batched claims and stores of one client on one event loop (see the module)."""

    def __init__(self, cache: LLMCache, *, io_threads: bool = True) -> None:
        self.cache = cache
        self.io_threads = io_threads
        self._ops: list[_Op] = []
        self._queued: dict[str, CachedResponse] = {}  # key -> answer queued or being written
        self._soon: asyncio.Handle | None = None  # a flush at the end of this loop turn
        self._later: asyncio.TimerHandle | None = None  # a flush after STORE_DELAY_S
        self._busy: asyncio.Task[None] | None = None  # a batch being written in a worker thread

    # -- what callers use -----------------------------------------------------
    def pending(self, key: str) -> CachedResponse | None:
        """The answer this process queued for ``key`` and has not written yet."""
        return self._queued.get(key)

    async def claim(self, key: str, watch: Watch | None = None) -> tuple[CachedResponse | None, bool]:
        """:meth:`LLMCache.claim_unless_stored` in the transaction that ends this loop turn."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[tuple[CachedResponse | None, bool]] = loop.create_future()
        self._ops.append(_Claim(key, watch, fut))
        self._schedule(loop, soon=True)
        return await fut

    def store(self, key: str, value: CachedResponse, *, release: bool = False) -> None:
        """Queue :meth:`LLMCache.store` of a finished call (see the module)."""
        self._queued[key] = value
        self._later_op(_Store(key, value, release))

    def release(self, key: str) -> None:
        """Queue the release of a claim this process made and no longer needs."""
        self._later_op(_Release(key))

    def _later_op(self, op: _Op) -> None:
        """Queue a write for the next batch (at the latest :data:`STORE_DELAY_S` from now)."""
        self._ops.append(op)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop: written at once
            self.flush_now()
            return
        self._schedule(loop, soon=False)

    async def flush(self) -> None:
        """Write what is queued now, claims included (their callers hear as usual); in a
        worker thread while another writer holds SQLite's lock."""
        while True:
            busy = self._busy
            if busy is not None and not busy.done():
                await asyncio.shield(busy)
                continue
            if not self._ops:
                return
            self._flush()

    async def aclose(self) -> None:
        """Write what is queued (awaited by the client's ``aclose`` and its loop's end)."""
        self._cancel_timers()
        busy = self._busy
        if busy is not None and not busy.done():
            try:
                await asyncio.shield(busy)
            except BaseException:  # noqa: BLE001 - whatever happened to it, the queue is written below
                pass
        if self._ops:
            await asyncio.to_thread(self.flush_now) if self.io_threads else self.flush_now()

    def flush_now(self) -> None:
        """Write what is queued, here, waiting for SQLite's lock as long as the cache does
        (the loop is gone or going: nothing else runs on it). Claims still queued are
        never made: their callers are being cancelled."""
        self._cancel_timers()
        ops, self._ops = self._ops, []
        writes = [op for op in ops if not isinstance(op, _Claim)]
        for op in ops:
            if isinstance(op, _Claim) and not op.future.done():
                try:
                    op.future.get_loop().call_soon_threadsafe(_cancel, op.future)
                except RuntimeError:  # its loop is closed
                    pass
        if writes:
            self.cache.apply([self._op(op) for op in writes])
            self._written(writes)

    # -- the batches ------------------------------------------------------------
    def _schedule(self, loop: asyncio.AbstractEventLoop, *, soon: bool) -> None:
        if self._busy is not None and not self._busy.done():
            return  # the worker-thread batch reschedules when it ends
        if self._soon is not None:
            return
        if soon:
            if self._later is not None:
                self._later.cancel()
                self._later = None
            self._soon = loop.call_soon(self._flush)
        elif self._later is None:
            self._later = loop.call_later(STORE_DELAY_S, self._flush)

    def _cancel_timers(self) -> None:
        for h in (self._soon, self._later):
            if h is not None:
                h.cancel()
        self._soon = self._later = None

    def _op(self, op: _Op) -> Callable[[], Any]:
        if isinstance(op, _Claim):
            return functools.partial(self.cache.claim_unless_stored, op.key, op.watch)
        if isinstance(op, _Release):
            return functools.partial(self.cache.release, op.key)
        return functools.partial(self.cache.store, op.key, op.value, release=op.release)

    def _flush(self) -> None:
        self._cancel_timers()
        ops, self._ops = self._ops, []
        if not ops:
            return
        fns = [self._op(op) for op in ops]
        if not self.io_threads:
            self._done(ops, self.cache.apply(fns))
            return
        done, results = self.cache.nowait(self.cache.apply, fns)
        if done:
            assert results is not None
            self._done(ops, results)
            return
        # another writer holds the lock: wait for it in a worker thread, one batch at a time
        self._busy = asyncio.get_running_loop().create_task(self._in_thread(ops, fns), name="ragdive-cache-writes")

    async def _in_thread(self, ops: list[_Op], fns: list[Callable[[], Any]]) -> None:
        try:
            results = await asyncio.to_thread(self.cache.apply, fns)
        except BaseException as e:
            self._busy = None
            for op in ops:  # cancelled at shutdown: the claims' callers go too; stores are written by aclose
                if isinstance(op, _Claim) and not op.future.done():
                    op.future.cancel()
                elif not isinstance(op, _Claim):
                    self._ops.append(op)
            if isinstance(e, Exception):
                return
            raise
        self._busy = None
        self._done(ops, results)
        if self._ops:
            loop = asyncio.get_running_loop()
            self._schedule(loop, soon=any(isinstance(op, _Claim) for op in self._ops))

    def _done(self, ops: list[_Op], results: list[Any]) -> None:
        released = False
        for op, out in zip(ops, results, strict=True):
            if not isinstance(op, _Claim):
                continue
            if isinstance(out, BaseException):
                out = (None, True)  # cannot coordinate: fetch it ourselves (as a failed claim always did)
            if op.future.done():  # its caller is gone (cancelled): a claim made for it is dropped
                if out[1] and out[0] is None:
                    self._ops.append(_Release(op.key))
                    released = True
                continue
            op.future.set_result(out)
        self._written(ops)
        if released:
            self._schedule(asyncio.get_running_loop(), soon=False)

    def _written(self, ops: Sequence[_Op]) -> None:
        for op in ops:
            if isinstance(op, _Store) and self._queued.get(op.key) is op.value:
                del self._queued[op.key]


def _cancel(fut: asyncio.Future[Any]) -> None:
    if not fut.done():
        fut.cancel()
