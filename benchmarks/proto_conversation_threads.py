"""A measurement prototype, not part of the plugin: a sync target's whole conversation
runs in one worker thread with a private event loop that calls the target inline (no
hand-off to a daemon thread per call, and so no per-turn timeout: enforcing it needs a
watchdog thread that notices a call past its limit and fails the conversation, the
watchdog the blocked-loop fix brings). Offline golden plans only; everything else runs
as usual.

    python benchmarks/bench_scale.py --sizes 1000 --modes plain --pytest-args="-p proto_conversation_threads"
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from pytest_ragdive.core.records import Conversation, TargetResponse
from pytest_ragdive.plugin import session as session_mod
from pytest_ragdive.run import pipeline as pipeline_mod
from pytest_ragdive.run.planning import Plan
from pytest_ragdive.run.target import coerce_response, wants_call_info

_as_async = session_mod.as_async
_submit = pipeline_mod.Pipeline.submit


def _as_async_keeping_the_callable(target: Callable[..., Any], timeout_s: float | None = None) -> Any:
    call = _as_async(target, timeout_s)
    call.raw = target  # type: ignore[attr-defined]
    return call


def _inline(raw: Callable[..., Any]) -> Callable[..., Coroutine[Any, Any, TargetResponse]]:
    pass_info = wants_call_info(raw)

    async def call(messages: list[dict[str, str]], call_info: Any = None) -> TargetResponse:
        kwargs = {"call_info": call_info} if pass_info and call_info is not None else {}
        return coerce_response(raw([dict(m) for m in messages], **kwargs))

    return call


class ConversationThreads:
    """``n`` threads, each running one conversation at a time on its own event loop."""

    def __init__(self, n: int) -> None:
        self.jobs: queue.SimpleQueue[tuple[concurrent.futures.Future[Conversation], Callable[[], Any]]] = queue.SimpleQueue()
        for i in range(n):
            threading.Thread(target=self._work, daemon=True, name=f"ragdive-conversation-{i}").start()

    def _work(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        while True:
            fut, factory = self.jobs.get()
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(loop.run_until_complete(factory()))
            except BaseException as e:  # noqa: BLE001 - handed to the waiting item
                fut.set_exception(e)


def _submit_to_a_conversation_thread(self: Any, plan: Plan, target: Any) -> concurrent.futures.Future[Conversation]:
    raw = getattr(target, "raw", None)
    if raw is None or self.cfg.llm_enabled() or plan.kind not in ("golden", "golden_single"):
        return _submit(self, plan, target)
    fut = self._futures.get(plan.key)
    if fut is None:
        if getattr(self, "_proto_threads", None) is None:
            self._proto_threads = ConversationThreads(self.cfg.concurrency)
            self._proto_target = _inline(raw)
        fut = concurrent.futures.Future()
        self._proto_threads.jobs.put((fut, lambda: self.run_plan(plan, self._proto_target)))
        self._futures[plan.key] = fut
    return fut


session_mod.as_async = _as_async_keeping_the_callable  # type: ignore[assignment]
pipeline_mod.Pipeline.submit = _submit_to_a_conversation_thread  # type: ignore[method-assign]
