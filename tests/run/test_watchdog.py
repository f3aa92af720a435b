"""Issue 22 (3), the unit side: the watchdog outside the event loop names what
blocks the loop (conversation, turn, line) and a call that outlives its timeout,
a blocked loop's shutdown waits for nothing, and run_suite ends with one error."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from pytest_ragdive.core.records import CallInfo, Conversation, Turn
from pytest_ragdive.run.target import as_async
from pytest_ragdive.run.turn_loop import BackgroundLoop, run_conversation
from pytest_ragdive.run.watchdog import InFlight, Watchdog, call_label


class OneTurn:
    def __init__(self) -> None:
        self.sent = False

    async def next_turn(self, conv: Conversation) -> Turn | None:
        if self.sent:
            return None
        self.sent = True
        return Turn(rag_input="Is snow cold?")

    def finish(self, conv: Conversation) -> None:
        pass


def _loop() -> tuple[asyncio.AbstractEventLoop, threading.Thread]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    return loop, thread


def _stop(loop: asyncio.AbstractEventLoop, thread: threading.Thread, dog: Watchdog) -> None:
    dog.stop()
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def test_a_blocked_loop_is_named_by_conversation_turn_and_line() -> None:
    release = threading.Event()

    async def blocking_bot(messages: list[dict[str, str]]) -> str:
        release.wait(30)  # a blocking call inside async def
        return "late"

    loop, thread = _loop()
    stalls: list[str] = []
    dog = Watchdog(loop, thread, 0.1, stalls.append, min_limit_s=0.5)
    dog.start()
    try:
        conv = Conversation(id="c-snow", suite="core", run=2)
        fut = asyncio.run_coroutine_threadsafe(run_conversation(conv, OneTurn(), as_async(blocking_bot, 60), probe=False), loop)
        deadline = time.monotonic() + 10
        while not stalls and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not dog.turning()
    finally:
        release.set()
    assert len(stalls) == 1, stalls
    msg = stalls[0]
    assert "has not turned for" in msg and "at least 0.5 s" in msg
    assert "conversation core/c-snow (run 2), turn 1 ('Is snow cold?') blocks it at" in msg
    assert f"{Path(__file__).name}:" in msg and "in blocking_bot" in msg
    assert fut.result(timeout=10).turns[0].answer == "late"
    _stop(loop, thread, dog)


def test_a_turning_loop_is_never_flagged() -> None:
    loop, thread = _loop()
    stalls: list[str] = []
    dog = Watchdog(loop, thread, 0.1, stalls.append, InFlight(), min_limit_s=0.3, grace_s=0.3)
    dog.start()
    time.sleep(1.2)
    assert stalls == [] and dog.turning()
    _stop(loop, thread, dog)


def test_a_call_that_swallows_its_cancellation_is_named() -> None:
    release = threading.Event()

    async def swallowing(messages: list[dict[str, str]]) -> str:
        while not release.is_set():
            try:
                await asyncio.sleep(0.05)
            except asyncio.CancelledError:
                pass
        return "late"

    loop, thread = _loop()
    calls = InFlight()
    stalls: list[str] = []
    dog = Watchdog(loop, thread, 0.2, stalls.append, calls, min_limit_s=5, grace_s=0.3)
    dog.start()
    target = as_async(swallowing, 0.2, calls=calls)
    info = CallInfo(suite="core", conversation_id="q-1", run=0, turn=1)
    task = asyncio.run_coroutine_threadsafe(target([{"role": "user", "content": "hi"}], info), loop)
    deadline = time.monotonic() + 10
    while not stalls and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(stalls) == 1 and stalls[0].startswith("core/q-1 (run 0), turn 2: the target has not returned")
    assert "CancelledError" in stalls[0] and dog.turning() is False
    release.set()
    assert task.result(timeout=5).answer == "late"  # (it swallowed the timeout too)
    _stop(loop, thread, dog)
    assert call_label(None) == "a stand-alone probe"


def test_a_finished_call_leaves_the_table() -> None:
    calls = InFlight()

    async def bot(messages: list[dict[str, str]]) -> str:
        return "ok"

    asyncio.run(as_async(bot, 1, calls=calls)([{"role": "user", "content": "hi"}]))
    assert calls.overdue(0.0, time.monotonic() + 100) is None


def test_closing_a_blocked_loop_waits_for_nothing() -> None:
    release = threading.Event()
    bg = BackgroundLoop(2)

    async def blocks() -> None:
        release.wait(30)

    bg.submit(blocks)
    time.sleep(1.2)  # no beat for a second: blocked
    t0 = time.monotonic()
    bg.close()
    took = time.monotonic() - t0
    release.set()
    assert took < 1.5, took  # before: 5 s for the tasks, 5 s for the thread
    bg._thread.join(5)  # unblocked, the loop stops as it was asked to
    assert not bg._thread.is_alive()
    bg._loop.close()


def test_run_suite_reports_the_stuck_conversation_naming_the_stall(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 32 (8): the stuck conversation is reported as stuck (before: run_suite raised and
    reported nothing); the others run to the end on a fresh loop."""
    import json

    from pytest_ragdive import run_suite
    from pytest_ragdive.core.config import RagdiveConfig
    from pytest_ragdive.run import watchdog

    monkeypatch.setattr(watchdog, "MIN_LIMIT_S", 0.5)
    rows = [{"question_id": "q", "question": "Is snow cold?"}, {"question_id": "q2", "question": "Is grass green?"}]
    (tmp_path / "single.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    cfg = RagdiveConfig.model_validate({"target_timeout_s": 0.2, "suites": {"core": {"single_turn": ["single.jsonl"]}}})
    cfg = cfg.model_copy(update={"base_dir": str(tmp_path)})

    async def blocking_bot(messages: list[dict[str, str]]) -> str:
        if "snow" in messages[-1]["content"]:
            time.sleep(3)
            return "late"
        return "Grass is green."

    convs: list[Conversation] = []
    result = run_suite(blocking_bot, cfg, conversations=convs)
    by_id = {c.id: c for c in convs}
    assert set(by_id) == {"q", "q2"}
    assert by_id["q"].error is not None and by_id["q"].error.startswith("stuck: the ragdive event loop has not turned")
    assert by_id["q2"].error is None and by_id["q2"].turns[0].answer == "Grass is green."
    assert any("blocked the event loop and is reported as stuck" in n for n in result.notes), result.notes
