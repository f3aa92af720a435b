"""The one turn loop against the target (the only code that calls it), the
stand-alone probe, and the background event loop that runs conversations
concurrently inside one pytest process.

Turns within one conversation are sequential (each depends on the last
answer); conversations run concurrently, bounded by ``concurrency``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
import traceback
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeVar

from ..core.records import Conversation, TargetResponse, Turn
from .loop_executor import ClosingExecutor
from .target import AsyncTarget, make_call_info
from .watchdog import PING_S, InFlight, Watchdog, ping

T = TypeVar("T")

#: called with the conversation and each turn it has just answered (appended to ``conv.turns``)
OnTurn = Callable[[Conversation, Turn], None]


class BackgroundLoop:
    """An asyncio loop in a daemon thread; ``submit`` returns a concurrent Future.
    With ``stall_s``, a :class:`~.watchdog.Watchdog` calls ``on_stall(message)`` once
    when the loop stops turning for longer (or a call in ``calls`` outlives its timeout)."""

    def __init__(
        self,
        concurrency: int,
        stall_s: float | None = None,
        on_stall: Callable[[str], None] | None = None,
        calls: InFlight | None = None,
    ) -> None:
        self._loop = asyncio.new_event_loop()
        self._closed = False
        # litellm's calls in the executor return coroutines; one abandoned by a cancel is closed, not left unawaited
        self._executor = ClosingExecutor(thread_name_prefix="ragdive-executor")
        self._loop.set_default_executor(self._executor)
        self._thread = threading.Thread(target=self._run, name="ragdive-loop", daemon=True)
        self._concurrency = concurrency
        self._sem: asyncio.Semaphore | None = None
        self._thread.start()
        self.watchdog: Watchdog | None = None
        if stall_s is not None and on_stall is not None:
            self.watchdog = Watchdog(self._loop, self._thread, stall_s, on_stall, calls)
            self.watchdog.start()

    def turning(self) -> bool:
        """Whether the loop still runs callbacks (False once it is blocked: then
        nothing waits on it, neither a shutdown nor an interrupt)."""
        if self._closed and not self._thread.is_alive():
            return False
        return self.watchdog.turning() if self.watchdog is not None else ping(self._loop, PING_S)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def submit(
        self, factory: Callable[[], Coroutine[Any, Any, T]], *, bounded: bool = True
    ) -> concurrent.futures.Future[T]:
        """Run ``factory()`` on the loop; ``bounded``: inside one of the ``concurrency``
        slots (else the coroutine takes its slot itself, see :meth:`slot`)."""

        async def run() -> T:
            try:
                if not bounded:
                    return await factory()
                async with self.slot():
                    return await factory()
            except (SystemExit, KeyboardInterrupt) as e:
                # would kill the loop thread and leave the future pending forever
                raise RuntimeError(f"{type(e).__name__} raised inside a conversation: {e!r}") from e

        if self._closed:
            raise RuntimeError("the ragdive event loop has stopped")
        return asyncio.run_coroutine_threadsafe(run(), self._loop)

    def slot(self) -> asyncio.Semaphore:
        """The ``concurrency`` bound (conversations in flight); use it on the loop."""
        if self._sem is None:
            self._sem = asyncio.Semaphore(self._concurrency)
        return self._sem

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run one coroutine on the loop without the conversation bound."""
        if self._closed:
            coro.close()  # never scheduled: close it, or Python warns it "was never awaited"
            raise RuntimeError("the ragdive event loop has stopped")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=timeout)

    def close(self) -> None:
        """Cancel what runs and stop the loop; at once (nothing waited for) when the
        loop is blocked: its daemon thread is left behind."""
        if self._closed:
            return
        turning = self.turning()
        self._closed = True
        if self.watchdog is not None:
            self.watchdog.stop()

        async def _cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            if tasks:  # a task that swallows its cancellation is not waited for long
                done, _ = await asyncio.wait(tasks, timeout=1.0 if self.watchdog and self.watchdog.stalled else 5.0)
                for t in done:
                    if not t.cancelled():
                        t.exception()  # seen: no "exception was never retrieved" at exit

        if turning:
            try:
                asyncio.run_coroutine_threadsafe(_cancel_all(), self._loop).result(timeout=6)
            except Exception:  # noqa: BLE001 - best effort at shutdown
                pass
            self._loop.call_soon_threadsafe(self._loop.stop)
        else:  # blocked: nothing waits; should it unblock, it cancels its tasks (none left unawaited), then stops

            async def _cancel_then_stop() -> None:
                try:
                    await _cancel_all()
                finally:
                    self._loop.stop()

            try:
                asyncio.run_coroutine_threadsafe(_cancel_then_stop(), self._loop)
            except RuntimeError:  # closed already
                pass
        if turning:
            self._thread.join(timeout=5)
        self._executor.shutdown(wait=False, cancel_futures=True)
        if not self._thread.is_alive():
            self._loop.close()  # else ResourceWarning: unclosed event loop


def record_error(conv: Conversation, exc: BaseException, where: str) -> None:
    conv.error = f"{where}: {type(exc).__name__}: {exc}"
    conv.traceback = "".join(traceback.format_exception(exc))


class User(Protocol):
    """The user side of a conversation: proposes the next user turn.

    ``next_turn`` gets the conversation so far (``conv.turns`` holds the turns
    already answered, in order) and returns the next :class:`Turn` to send
    (its ``rag_input`` is the message; ground truth and the other expected
    fields travel with it), or None to end the conversation. ``finish`` is
    called once after the last turn (also after a target error) so the user
    can record what it knows on the conversation (e.g. validator counts).

    Implementations: :class:`pytest_ragdive.users.scripted.ScriptedUser`
    (golden turns), :class:`pytest_ragdive.users.simulator.SimulatorUser`
    (the RAG-DIVE generator with its validator).
    """

    async def next_turn(self, conv: Conversation) -> Turn | None: ...

    def finish(self, conv: Conversation) -> None: ...


async def run_conversation(
    conv: Conversation, user: User, target: AsyncTarget, probe: bool = True, on_turn: OnTurn | None = None
) -> Conversation:
    """The one turn loop: ask the user for the next turn, send the history to
    the target, record the answer, until the user ends the conversation.

    The history is the conversation's own user messages and the target's
    answers, the last item the new user message; a target that asks for
    ``call_info`` also gets suite, conversation, run, turn and a stable seed. A target exception is
    recorded on the conversation (``conv.error``; the turns answered so far
    are kept), not raised. With ``probe``, each context-dependent turn's
    stand-alone question is also asked in a fresh history (the offline
    forgetfulness probe, :class:`StandaloneProbes`): sent as soon as the turn is
    answered, beside the next turns, and recorded once the conversation has
    ended without an error. ``on_turn`` is called with each turn once it is
    answered and recorded (the pipeline starts the turn's judge calls there).
    """
    history: list[dict[str, str]] = []
    for done in conv.turns:  # a conversation resumed with answered turns
        history.append({"role": "user", "content": done.rag_input})
        history.append({"role": "assistant", "content": done.answer or ""})
    probes = StandaloneProbes(target) if probe else None
    try:
        while True:
            turn = await user.next_turn(conv)
            if turn is None:
                break
            turn.index = len(conv.turns)
            history.append({"role": "user", "content": turn.rag_input})
            t0 = time.perf_counter()
            try:
                resp = await target(list(history), make_call_info(conv.suite, conv.id, conv.run, turn.index))
            except (Exception, SystemExit, KeyboardInterrupt) as exc:  # noqa: BLE001 - fails this item only
                record_error(conv, exc, f"turn {turn.index + 1}")
                break
            turn.latency_s = round(time.perf_counter() - t0, 6)
            turn.answer = resp.answer
            turn.contexts = list(resp.contexts)
            turn.citations = list(resp.citations)
            history.append({"role": "assistant", "content": resp.answer})
            conv.turns.append(turn)
            if probes is not None:
                probes.start(turn)
            if on_turn is not None:
                on_turn(conv, turn)
    except BaseException:
        if probes is not None:
            probes.cancel()
        raise
    finally:
        user.finish(conv)
    if probes is not None:
        if conv.error is None:
            await probes.finish(conv)
        else:
            probes.cancel()
    return conv


async def run_scripted(
    conv: Conversation, target: AsyncTarget, probe: bool = True, on_turn: OnTurn | None = None
) -> Conversation:
    """Replay a scripted conversation (its turns as planned) against the target."""
    from .users.scripted import ScriptedUser

    user = ScriptedUser(conv.turns)
    conv.turns = []
    return await run_conversation(conv, user, target, probe=probe, on_turn=on_turn)


class StandaloneProbes:
    """The forgetfulness probe of one conversation: each context-dependent turn (after the
    first, with a stand-alone question and a ground truth, answered) has its stand-alone
    question asked in a fresh history. :meth:`start` sends a turn's probe as soon as the
    turn is answered, so it runs beside the conversation's next turns (a conversation's
    probes no longer all reach the target at once, at its end); :meth:`finish` waits for
    them and records the answers, or the first failure (in turn order) as the
    conversation's error; :meth:`cancel` drops them (the conversation failed)."""

    def __init__(self, target: AsyncTarget) -> None:
        self._target = target
        self._tasks: dict[int, asyncio.Task[TargetResponse]] = {}

    def start(self, turn: Turn) -> None:
        if turn.index < 1 or turn.index in self._tasks:
            return
        if not (turn.standalone_question and turn.ground_truth and turn.answer is not None):
            return
        task = asyncio.ensure_future(self._target([{"role": "user", "content": turn.standalone_question}]))
        task.add_done_callback(_retrieved)
        self._tasks[turn.index] = task

    async def finish(self, conv: Conversation) -> None:
        for turn in conv.turns[1:]:  # a resumed conversation's turns answered before it resumed
            self.start(turn)
        todo = [t for t in conv.turns[1:] if t.index in self._tasks]
        results = await asyncio.gather(*(self._tasks[t.index] for t in todo), return_exceptions=True)  # BaseExceptions too
        for turn, res in zip(todo, results, strict=True):
            if not isinstance(res, BaseException):
                turn.standalone_answer = res.answer
                turn.standalone_contexts = list(res.contexts)
        for turn, res in zip(todo, results, strict=True):
            if isinstance(res, BaseException):
                record_error(conv, res, f"stand-alone probe of turn {turn.index + 1}")
                return

    def cancel(self) -> None:
        for task in self._tasks.values():
            task.cancel()


def _retrieved(task: asyncio.Task[Any]) -> None:
    """Mark a probe's exception as seen (a cancelled conversation's probe is never awaited)."""
    if not task.cancelled():
        task.exception()
