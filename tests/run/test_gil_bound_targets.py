"""Sync targets that hold the GIL run one call at a time (run/gil.py); targets that wait on
I/O keep running side by side; a hung call never holds the others back."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from pytest_ragdive.core.errors import TargetTimeout
from pytest_ragdive.run.gil import GIL_BOUND, GilShare
from pytest_ragdive.run.target import DaemonThreads, as_async


class _Peak:
    """How many calls of a target ran at once, at most."""

    def __init__(self) -> None:
        self.now = self.most = 0
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self.now -= 1


def _drive(threads: DaemonThreads, fn, rounds: int, at_once: int) -> None:  # type: ignore[no-untyped-def]
    async def one() -> None:
        for _ in range(rounds):
            await threads.run(fn)

    async def main() -> None:
        await asyncio.gather(*(one() for _ in range(at_once)))

    asyncio.run(main())


def test_a_target_that_computes_runs_one_call_at_a_time() -> None:
    threads, warm, after = DaemonThreads(), _Peak(), _Peak()
    peak = [warm]

    def computes() -> int:
        with peak[0]:
            t0 = time.thread_time()
            n = 0
            while time.thread_time() - t0 < 0.012:  # 12 ms of CPU in Python: the GIL held (switched every 5)
                n += 1
            return n

    for _ in range(5):  # the share is CPU over wall: a burst of other load on the machine can hide it for a while
        _drive(threads, computes, rounds=6, at_once=8)
        if threads.gil.bound:
            break
    assert threads.gil.bound and threads.gil.share is not None and threads.gil.share >= GIL_BOUND
    peak[0] = after
    _drive(threads, computes, rounds=3, at_once=8)
    assert warm.most > 1 and after.most == 1  # side by side at first, then one at a time


def test_without_the_guard_a_target_that_computes_keeps_its_calls_side_by_side() -> None:
    """An offline run (no LLM replies to wait for) keeps the calls side by side: what a
    target runs outside the GIL (numpy's large operations) still runs in parallel."""
    threads, peak = DaemonThreads(gil_guard=False), _Peak()

    def computes() -> None:
        with peak:
            t0 = time.thread_time()
            while time.thread_time() - t0 < 0.012:
                pass

    _drive(threads, computes, rounds=6, at_once=8)
    assert threads.gil.bound and peak.most > 1


def test_a_target_that_waits_on_io_keeps_its_calls_side_by_side() -> None:
    threads, peak = DaemonThreads(), _Peak()

    def waits() -> str:
        with peak:
            time.sleep(0.01)  # an LLM or a database: the GIL is free meanwhile
            return "ok"

    _drive(threads, waits, rounds=8, at_once=8)
    assert threads.gil.share is not None and threads.gil.share < GIL_BOUND and not threads.gil.bound
    assert peak.most == 8


def test_a_hung_call_of_a_gil_bound_target_holds_nothing_once_it_times_out() -> None:
    release = threading.Event()

    def bot(messages: list[dict[str, str]]) -> str:
        if messages[-1]["content"] == "hang":
            release.wait()
        return "fine"

    call = as_async(bot, timeout_s=0.3, gil_guard=True)

    async def main() -> str:
        with pytest.raises(TargetTimeout):
            await call([{"role": "user", "content": "hang"}])
        return str(await call([{"role": "user", "content": "hi"}]))

    import pytest_ragdive.run.gil as gil

    real = gil.GilShare.bound
    gil.GilShare.bound = property(lambda self: True)  # type: ignore[method-assign,assignment]
    try:
        t0 = time.perf_counter()
        out = asyncio.run(main())
    finally:
        gil.GilShare.bound = real  # type: ignore[method-assign]
        release.set()
    assert "fine" in out and time.perf_counter() - t0 < 2


def test_the_share_needs_a_window_and_follows_a_changing_target() -> None:
    g = GilShare()
    g.add(0.002, 0.002)
    assert g.share is None and not g.bound  # one call says nothing
    for _ in range(40):
        g.add(0.003, 0.003)
    assert g.bound
    for _ in range(200):
        g.add(0.0001, 0.01)  # now it waits on I/O
    assert not g.bound
    for _ in range(200):
        g.add(0.02, 0.01)  # two cores' worth: its work runs outside the GIL
    assert not g.bound
