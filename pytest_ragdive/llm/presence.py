"""Whether another process shares the judge cache now: claims are paid only then.

A cross-process claim (:mod:`.claims`) costs a cache transaction per call (at 32 calls in
flight, a quarter of the client's CPU per call), and it buys something only while another
process may send the same request. So each client says it is there (a presence row,
``inflight:presence:<token>``, a :class:`.claims.Marker` renewed every
:data:`.claims.HEARTBEAT_S` seconds and judged stale as a claim is), and claims only while
another live process (or another client of this one) is there too.

Alone
    The calls go without claims; their answers are stored as usual. The client looks
    for others every :data:`CHECK_S` seconds (one read).

A second process joins
    Each row says whether its client claims now (``Marker.claims``). The newcomer writes
    its row, sees the first one, says it claims, and sends nothing until every other row
    says so too. The first notices it within :data:`CHECK_S`, claims every call it has in
    flight without a claim, writes the answers it has not stored yet, and only then says
    it claims: the newcomer finds each of those answers stored or claimed, and waits for
    it instead of asking again. Processes sharing a cache never repeat a request, however
    loaded the machine (a fixed delay did not hold under load). A process whose loop is
    blocked longer than :data:`JOIN_WAIT_MAX_S` is not waited for (its calls in flight
    could then be asked twice).

Alone again
    When the others have gone, a client says it does not claim before it sends a call
    without a claim, so a newcomer waits for it as above.

Leaving
    The row is deleted when the client closes; a killed process's row is stale at once
    for the processes of its host, and after :data:`.claims.STALE_S` for the others.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from .cache import LLMCache
from .claims import HEARTBEAT_S, new_marker

__all__ = ["CHECK_S", "JOIN_WAIT_MAX_S", "Presence"]

#: how often a client that is alone looks for others (and a newcomer looks whether they claim)
CHECK_S = 0.05
#: the longest a newcomer waits for the clients already there to say they claim
JOIN_WAIT_MAX_S = 10.0


class Presence:
    """This client's presence in the cache, on one event loop (see the module)."""

    def __init__(self, cache: LLMCache, io: Callable[..., Awaitable[object]],
                 claim_in_flight: Callable[[list[str]], Awaitable[None]]) -> None:
        self._cache = cache
        self._io = io
        self._claim_in_flight = claim_in_flight
        self.marker = new_marker()
        self.shared = True  # until the first look: claim
        self._joined = asyncio.Event()
        self._unclaimed: set[str] = set()  # calls in flight without a claim
        self._late: set[str] = set()  # of those, the ones claimed since another process came
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="ragdive-cache-presence")

    async def alone(self) -> bool:
        """Whether no other process shares the cache (after this client's first look)."""
        if not self._joined.is_set():
            await self._joined.wait()
        return not self.shared

    def track(self, key: str) -> None:
        """A call sent without a claim."""
        self._unclaimed.add(key)

    def claimed_late(self, key: str) -> bool:
        """Whether the call on ``key`` is still in flight: if so, the claim just made for it
        (another process has come) is its own from now on, released with its answer."""
        if key in self._unclaimed:
            self._late.add(key)
            return True
        return False

    def untrack(self, key: str) -> bool:
        """The call on ``key`` has ended; whether it holds a claim (made when another came)."""
        self._unclaimed.discard(key)
        if key in self._late:
            self._late.discard(key)
            return True
        return False

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            self.shared = await self._beat(claims=False)
            if self.shared:  # others are there: claim from the first call, once they all do
                await self._beat(claims=True)
                until = loop.time() + JOIN_WAIT_MAX_S
                while self._cache.presence_of_others(self.marker.token)[1] and loop.time() < until:
                    await asyncio.sleep(CHECK_S)
        finally:
            self._joined.set()
        beat = loop.time()
        while True:
            await asyncio.sleep(HEARTBEAT_S if self.shared else CHECK_S)
            if loop.time() - beat >= 0.75 * HEARTBEAT_S:
                others = await self._beat(claims=self.shared)
                beat = loop.time()
            else:
                others = self._cache.presence_of_others(self.marker.token)[0] > 0
            if others and not self.shared:
                self.shared = True  # new calls claim from now on; the ones in flight are claimed here
                await self._claim_in_flight(sorted(self._unclaimed))  # and the answers not stored yet written
                await self._beat(claims=True)  # the newcomer may go on
                beat = loop.time()
            elif not others and self.shared:
                # alone again: say so before a call goes without a claim (a newcomer waits for it)
                if not await self._beat(claims=False):
                    self.shared = False
                else:
                    await self._beat(claims=True)
                beat = loop.time()

    async def _beat(self, claims: bool) -> bool:
        """Renew this client's row (saying whether it claims now); whether another live one is there."""
        self.marker = self.marker.beat().model_copy(update={"claims": claims})
        return bool(await self._io(self._cache.presence_beat, self.marker))

    def stop(self) -> None:
        """Stop looking and delete this client's row (the loop is going away); never raises."""
        task, self._task = self._task, None
        if task is not None:
            with contextlib.suppress(RuntimeError):  # its loop is closed already
                task.cancel()
        with contextlib.suppress(Exception):
            self._cache.presence_leave(self.marker.token)
