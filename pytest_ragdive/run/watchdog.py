"""The watchdog of the plugin's event loop: a thread outside the loop that notices
when the loop has stopped turning, or a target call outlives its timeout.

Two ways an async target stalls a whole run, and what each looks like here:

- **It blocks the loop**: a blocking call inside ``async def`` (``time.sleep``,
  a synchronous HTTP client, a long CPU-bound step). No other conversation, no
  timeout and no LLM call can progress while it runs. The loop beats a heartbeat
  a few times a second; when no beat came for longer than the limit (the target
  timeout, at least :data:`MIN_LIMIT_S`) and a last ping is not answered either,
  the loop is blocked. The watchdog reads the loop thread's stack to name the
  conversation, the turn and the line that blocks; when that line is the plugin's own
  code (no target call on the stack), it says so rather than blame the target.
- **It swallows its cancellation**: the timeout cancels the call, the target
  catches ``asyncio.CancelledError`` and carries on. The loop turns, but that
  conversation never ends. The watchdog keeps the target calls in flight
  (:class:`InFlight`); one still running :data:`GRACE_S` after its timeout is
  named.

Either way it calls ``on_stall(message)`` once. For a loop blocked inside one
conversation's turn it first keeps that conversation (:attr:`Watchdog.stuck`): the
pipeline reports it as stuck and runs the others on a fresh loop. Otherwise the
pipeline cancels what is still waiting, so that the run ends cleanly (the item fails
with the message, the run is marked incomplete, the finished conversations are
reported). Cheap:
one timer callback on the loop per beat, a dict entry per target call.
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

    from ..core.records import CallInfo

#: the shortest limit (a loop under a heavy machine load may miss beats for a second or two)
MIN_LIMIT_S = 5.0
#: how long a cancelled target call may take to return before it counts as swallowing the cancel
GRACE_S = 5.0
#: how long a last ping may take before the loop counts as blocked
PING_S = 0.5
_TURN_LOOP = "pytest_ragdive.run.turn_loop"
_TARGET = "pytest_ragdive.run.target"
_LIBRARY = ("asyncio", "selectors", "threading", "concurrent", "contextlib")
#: how a stall message ends when the run stops
STOPPED = "The run stopped: its reports are partial, nothing was gated"


class InFlight:
    """The target calls under way: started, not yet returned (written on the loop,
    read by the watchdog)."""

    def __init__(self) -> None:
        self._calls: dict[int, tuple[float, float | None, CallInfo | None]] = {}
        self._ids = itertools.count()

    def start(self, timeout_s: float | None, info: CallInfo | None) -> int:
        n = next(self._ids)
        self._calls[n] = (time.monotonic(), timeout_s, info)
        return n

    def end(self, n: int) -> None:
        self._calls.pop(n, None)

    def drop(self, suite: str, conversation_id: str, run: int) -> None:
        """Forget one conversation's calls (a stuck conversation, given up on: not overdue)."""
        for n, (_, _, info) in list(self._calls.items()):
            if info is not None and (info.suite, info.conversation_id, info.run) == (suite, conversation_id, run):
                self._calls.pop(n, None)

    def overdue(self, grace_s: float, now: float) -> tuple[float, float, CallInfo | None] | None:
        """The oldest call still running ``grace_s`` after its timeout: (age, timeout, info)."""
        worst = None
        for t0, timeout_s, info in list(self._calls.values()):
            if timeout_s is not None and now - t0 > timeout_s + grace_s and (worst is None or now - t0 > worst[0]):
                worst = (now - t0, timeout_s, info)
        return worst


def call_label(info: CallInfo | None) -> str:
    if info is None:
        return "a stand-alone probe"
    return f"{info.suite}/{info.conversation_id} (run {info.run}), turn {info.turn + 1}"


class Watchdog:
    """Watches one event loop (see the module docstring)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        loop_thread: threading.Thread,
        limit_s: float,
        on_stall: Callable[[str], None],
        calls: InFlight | None = None,
        *,
        min_limit_s: float | None = None,
        grace_s: float | None = None,
    ) -> None:
        self.loop = loop
        self.loop_thread = loop_thread
        self.target_timeout_s = limit_s
        self.min_limit_s = MIN_LIMIT_S if min_limit_s is None else min_limit_s
        self.limit_s = max(limit_s, self.min_limit_s)
        self.grace_s = GRACE_S if grace_s is None else grace_s
        self.on_stall = on_stall
        self.calls = calls
        self.interval_s = 0.25
        self.last_beat = time.monotonic()
        self.stalled: str | None = None
        self.stuck: Any = None  # the Conversation whose turn blocks the loop (its run_conversation's), when one does
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="ragdive-watchdog", daemon=True)

    def start(self) -> None:
        self.loop.call_soon_threadsafe(self._beat)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _beat(self) -> None:
        self.last_beat = time.monotonic()
        if not self._stop.is_set():
            self.loop.call_later(self.interval_s, self._beat)

    def turning(self) -> bool:
        """Whether the loop runs callbacks: a recent beat; no beat for a second: no (a
        shutdown or an interrupt then waits for nothing); in between, a short ping."""
        if self.stalled is not None:
            return False
        age = time.monotonic() - self.last_beat
        if age < 2 * self.interval_s:
            return True
        return age < 1.0 and ping(self.loop, self.interval_s)

    def _watch(self) -> None:
        while not self._stop.wait(self.interval_s):
            now = time.monotonic()
            message = None
            if now - self.last_beat > self.limit_s and not ping(self.loop, PING_S):
                message = self._blocked(time.monotonic() - self.last_beat)
            elif self.calls is not None and (late := self.calls.overdue(self.grace_s, now)) is not None:
                age, timeout_s, info = late
                message = (
                    f"{call_label(info)}: the target has not returned {age:.0f} s after the call started, although "
                    f"its timeout (target_timeout_s = {timeout_s:g} s) cancelled it {age - timeout_s:.0f} s ago: an "
                    "async target that catches asyncio.CancelledError and carries on never ends; let the "
                    "cancellation through. " + STOPPED
                )
            if message is not None and not self._stop.is_set():
                self.stalled = message
                self.on_stall(message)
                return

    def _blocked(self, age: float) -> str:
        frame = sys._current_frames().get(self.loop_thread.ident or -1)
        where, spot = describe_stack(frame)
        own = own_code(frame)
        self.stuck = None if own is not None else stuck_conversation(frame)
        if own is not None:
            return (
                f"the ragdive event loop has not turned for {age:.0f} s: the plugin's own code blocks it at {own} "
                f"(while running {where}), not the target: a pytest-ragdive problem, please report it "
                "(score_max_answer_chars bounds the scoring of a very long answer). "
                + STOPPED
            )
        return (
            f"the ragdive event loop has not turned for {age:.0f} s (more than target_timeout_s = "
            f"{self.target_timeout_s:g} s{'' if self.target_timeout_s >= self.min_limit_s else f', at least {self.min_limit_s:g} s'}): "
            f"{where} blocks it{f' at {spot}' if spot else ''}. A blocking call inside an async target (time.sleep, "
            "a synchronous HTTP client, heavy CPU work) stops every conversation: await it (asyncio.sleep, an async "
            "client, asyncio.to_thread), or make the target a plain def (it then runs in a thread of its own). "
            + STOPPED
        )


def ping(loop: asyncio.AbstractEventLoop, wait_s: float) -> bool:
    """Whether ``loop`` runs a callback within ``wait_s`` (False for a closed loop)."""
    done = threading.Event()
    try:
        loop.call_soon_threadsafe(done.set)
    except RuntimeError:
        return False
    return done.wait(wait_s)


def describe_stack(frame: FrameType | None) -> tuple[str, str]:
    """(what runs, where it blocks) from the innermost frame of the loop thread:
    the conversation and turn of the turn loop (or the target call) on the stack,
    and the innermost line outside the standard library's event loop."""
    spot = ""
    where = "a task"
    f = frame
    while f is not None:
        module = f.f_globals.get("__name__", "")
        if not spot and not module.startswith(_LIBRARY) and not module.startswith("pytest_ragdive."):
            spot = f"{f.f_code.co_filename}:{f.f_lineno} in {f.f_code.co_name}"
        if module == _TURN_LOOP and f.f_code.co_name == "run_conversation":
            where = _turn_label(f.f_locals)
            break
        if module == _TARGET and f.f_code.co_name == "call" and where == "a task":
            info = f.f_locals.get("call_info")
            where = f"the target call of {call_label(info)}" if info is not None else "the target call of a stand-alone probe"
        f = f.f_back
    return where, spot


#: the plugin's plumbing around a target call: on the stack of whatever the loop runs
_PLUMBING = (_TURN_LOOP, _TARGET, "pytest_ragdive.run.watchdog", "pytest_ragdive.run.loop_executor",
             "pytest_ragdive.run.pipeline")


def stuck_conversation(frame: FrameType | None) -> Any:
    """The conversation whose turn loop is on the stack (None when none is)."""
    f = frame
    while f is not None:
        if f.f_globals.get("__name__", "") == _TURN_LOOP and f.f_code.co_name == "run_conversation":
            return f.f_locals.get("conv")
        f = f.f_back
    return None


def own_code(frame: FrameType | None) -> str | None:
    """Where the plugin's own code blocks the loop (``file:line in function``, the innermost
    frame of pytest_ragdive outside the plumbing around a target call), or None when a target
    call is on the stack (the target's code is only ever called from there) or no plugin frame is."""
    own = None
    f = frame
    while f is not None:
        module = f.f_globals.get("__name__", "")
        if module == _TARGET:
            return None
        if own is None and module.startswith("pytest_ragdive.") and not module.startswith(_PLUMBING):
            own = f"{module.replace('.', '/')}.py:{f.f_lineno} in {f.f_code.co_name}"
        f = f.f_back
    return own


def _turn_label(local: dict[str, Any]) -> str:
    conv, turn = local.get("conv"), local.get("turn")
    if conv is None:
        return "a conversation"
    label = f"conversation {conv.suite}/{conv.id} (run {conv.run})"
    if turn is not None and getattr(turn, "rag_input", None) is not None:
        question = turn.rag_input if len(turn.rag_input) <= 80 else turn.rag_input[:77] + "..."
        label += f", turn {len(conv.turns) + 1} ({question!r})"
    return label
