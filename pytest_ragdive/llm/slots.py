"""Requests in flight: ``llm.max_in_flight`` slots handed out by priority.

A conversation's turn loop (simulator, validator, classifier calls, and a
judge call made inside a turn, ``complete_json(..., turn_loop=True)``) is its
critical path: each call waits for the one before it, while a finished
conversation's judge calls can be sent in any order. So when requests wait for
a slot, turn-loop calls go first (:data:`TURN_LOOP`) and judge calls fill the
slots that are left (:data:`JUDGE`): a conversation's next turn never waits
behind hundreds of judge calls that were queued before it (the first in, first
out order of a plain semaphore), and the turn loops of the conversations that
start late finish early enough for their judge calls to keep every slot busy
to the end. Within one priority, first come, first served.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools

__all__ = ["JUDGE", "TURN_LOOP", "PrioritySlots", "priority_of"]

TURN_LOOP = 0
JUDGE = 1


def priority_of(role: str) -> int:
    """The slot priority of a role's calls (lower goes first), unless the caller says
    its turn loop waits for the call."""
    return JUDGE if role == "judge" else TURN_LOOP


class PrioritySlots:
    """``n`` slots for one event loop; ``async with slots.slot(priority):``.

    Invariant: a slot is free only while nobody (alive) waits. A waiter that is
    cancelled is skipped; one that is cancelled after it was handed a slot
    passes the slot on."""

    def __init__(self, n: int) -> None:
        if n < 1:
            raise ValueError(f"need at least one slot, got {n}")
        self._free = n
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    @property
    def free(self) -> int:
        return self._free

    @property
    def waiting(self) -> int:
        return sum(1 for *_, f in self._waiters if not f.done())

    async def acquire(self, priority: int = TURN_LOOP) -> None:
        if self._free > 0:
            self._free -= 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (priority, next(self._seq), fut))
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release()  # handed a slot, then cancelled before using it
            raise

    def release(self) -> None:
        while self._waiters:
            _, _, fut = heapq.heappop(self._waiters)
            if not fut.done():
                fut.set_result(None)
                return
        self._free += 1

    def slot(self, priority: int = TURN_LOOP) -> _Slot:
        return _Slot(self, priority)


class _Slot:
    def __init__(self, slots: PrioritySlots, priority: int) -> None:
        self._slots = slots
        self._priority = priority

    async def __aenter__(self) -> None:
        await self._slots.acquire(self._priority)

    async def __aexit__(self, *exc: object) -> None:
        self._slots.release()
