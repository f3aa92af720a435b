"""The Target protocol: the chatbot under test, as a sync or async callable.

A target takes the message history (OpenAI-style list of ``{"role", "content"}``
dicts, the last item being the new user message) and returns a
:class:`~pytest_ragdive.records.TargetResponse` (or a mapping or a plain string
that converts to one).

Optional keyword ``call_info``: a target that declares a parameter of that name
(``def bot(messages, call_info=None)``) is also given a
:class:`~pytest_ragdive.records.CallInfo` (suite, conversation id, run, turn and
a stable per-conversation-and-run ``seed``) whenever the caller knows them, so
that a sampling chatbot can vary between ``--ragdive-runs`` and still repeat
exactly. Other targets never see it.

Optional keyword ``extra_documents``: a target that declares it receives, in a suite with
``attacks = {poison = true}``, the poisoned documents (a list of
:class:`~pytest_ragdive.records.Document`) with every call, to search beside its own
index before it answers (:func:`with_documents`, docs/safety.md).

Every call goes through :func:`as_async`, which also enforces the per-turn
timeout (``target_timeout_s``): a sync target runs in a daemon thread of its
own, so a call that never returns is abandoned when it times out, and neither
an interrupt nor the end of the process waits for it.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import importlib
import inspect
import queue
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..core.errors import TargetError, TargetTimeout
from ..core.memo import memo
from ..core.records import CallInfo, Document, TargetResponse
from .gil import GilShare
from .watchdog import InFlight

if TYPE_CHECKING:
    from ..llm.redact import Secrets

History = list[dict[str, str]]

DEFAULT_TARGET_TIMEOUT_S = 120.0


@runtime_checkable
class Target(Protocol):
    def __call__(self, messages: History) -> TargetResponse | Awaitable[TargetResponse]: ...


class AsyncTarget(Protocol):
    def __call__(self, messages: History, call_info: CallInfo | None = None) -> Awaitable[TargetResponse]: ...


@memo(maxsize=256)  # asked once per turn of a conversation
def call_seed(suite: str, conversation_id: str, run: int) -> int:
    """The stable seed of one conversation in one run (31 bits of a SHA-256)."""
    digest = hashlib.sha256(f"{suite}\x00{conversation_id}\x00{run}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def make_call_info(suite: str, conversation_id: str, run: int, turn: int) -> CallInfo:
    return CallInfo(
        suite=suite, conversation_id=conversation_id, run=run, turn=turn, seed=call_seed(suite, conversation_id, run)
    )


def wants_call_info(target: Callable[..., Any], name: str = "call_info") -> bool:
    """Whether the target (or its ``__call__``) declares a ``call_info`` parameter (or ``name``)."""
    for fn in (target, getattr(target, "__call__", None)):  # noqa: B004
        if fn is None:
            continue
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            continue
        if name in params:
            return True
    return False


def coerce_response(value: Any) -> TargetResponse:
    if isinstance(value, TargetResponse):
        return value
    if isinstance(value, str):
        return TargetResponse(answer=value)
    if isinstance(value, dict):
        return TargetResponse.model_validate(value)
    if hasattr(value, "model_dump"):  # a TargetResponse-like pydantic model
        return TargetResponse.model_validate(value.model_dump())
    raise TargetError(f"target returned {type(value).__name__}, expected TargetResponse, dict or str")


def as_async(
    target: Callable[..., Any],
    timeout_s: float | None = DEFAULT_TARGET_TIMEOUT_S,
    *,
    secrets: Secrets | None = None,
    calls: InFlight | None = None,
    gil_guard: bool = False,
) -> AsyncTarget:
    """Wrap a sync or async callable so the runner can await it.

    Sync targets run in daemon threads (:class:`DaemonThreads`) so that
    several conversations progress at once and a call that hangs can be
    abandoned.
    A call that takes longer than ``timeout_s`` (None: no limit) raises
    :class:`~pytest_ragdive.errors.TargetTimeout`. ``secrets``: every reply is
    scrubbed of the run's secrets (and of the target's own credentials, for an
    HTTP target) before anything reads it; ``calls``: the calls in flight, for
    the watchdog (:mod:`.watchdog`); ``gil_guard``: a sync target whose calls hold the GIL
    runs one call at a time (:mod:`.gil`; the run's LLM replies then wait less).
    """
    from .frameworks import adapt  # a LangChain runnable or a LlamaIndex engine, wrapped

    target = adapt(target)
    if not callable(target):
        raise TargetError(f"target {target!r} is not callable")
    if secrets is not None:
        own = getattr(target, "ragdive_secrets", None)  # an HTTP target's credentials
        if callable(own):
            secrets.add(own())
    is_async = inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(
        getattr(target, "__call__", None)  # noqa: B004
    )
    pass_info = wants_call_info(target)
    pass_docs = wants_call_info(target, "extra_documents")
    threads = DaemonThreads(gil_guard=gil_guard)

    async def once(history: History, kwargs: dict[str, Any]) -> Any:
        try:
            if is_async:
                value = await target(history, **kwargs)
            else:
                value = await threads.run(lambda: target(history, **kwargs))
            if inspect.isawaitable(value):
                value = await value
        except (SystemExit, KeyboardInterrupt) as e:
            # raised inside a task, these would stop the event loop itself
            raise TargetError(f"the target raised {type(e).__name__}({e})") from e
        return value

    async def call(
        messages: History, call_info: CallInfo | None = None, extra_documents: list[Document] | None = None
    ) -> TargetResponse:
        history = [dict(m) for m in messages]
        kwargs: dict[str, Any] = {"call_info": call_info} if pass_info and call_info is not None else {}
        if pass_docs and extra_documents:
            kwargs["extra_documents"] = list(extra_documents)
        started = calls.start(timeout_s, call_info) if calls is not None else None
        try:
            async with asyncio.timeout(timeout_s):  # in this task: no task per call, as wait_for makes
                value = await once(history, kwargs)
        except TimeoutError:
            raise TargetTimeout(
                f"the target did not answer within {timeout_s:g} s (target_timeout_s; "
                "raise it with --ragdive-target-timeout or in the config)"
            ) from None
        finally:
            if calls is not None and started is not None:
                calls.end(started)
        resp = coerce_response(value)
        return secrets.scrub_target(resp) if secrets is not None else resp

    call.accepts_documents = pass_docs  # type: ignore[attr-defined]
    return call


def with_documents(target: AsyncTarget, documents: list[Document]) -> AsyncTarget | None:
    """The target, handed ``documents`` (poisoned documents, docs/safety.md) with every call, to
    search before it answers; None when it takes no ``extra_documents`` (a wrap that appended
    them to the contexts it returned could not have influenced its answer)."""
    if not getattr(target, "accepts_documents", False):
        return None

    async def call(messages: History, call_info: CallInfo | None = None) -> TargetResponse:
        return await target(messages, call_info, extra_documents=documents)  # type: ignore[call-arg]

    return call


class DaemonThreads:
    """Worker threads for sync targets that nothing ever joins.

    Unlike ``asyncio.to_thread`` (the loop's executor, whose threads the
    interpreter joins at exit), these are daemon threads: when the awaiting
    task is cancelled or times out, a call that hangs is left to finish or
    hang on its own, and a fresh thread serves the next call. Idle threads
    are reused and leave after ``idle_s``. With ``gil_guard``, a target whose calls
    hold the GIL (:mod:`.gil`) has its calls run one at a time."""

    def __init__(self, idle_s: float = 30.0, *, gil_guard: bool = True) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._idle_s = idle_s
        # calls that hold the GIL go one at a time (.gil): their CPU share of the busy time
        self.gil = GilShare()
        self._gil_guard = gil_guard
        self._running = 0  # calls in worker threads now
        self._busy_since = 0.0  # loop time since when, while any runs
        self._one: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None

    async def run(self, fn: Callable[[], Any]) -> Any:
        if not (self._gil_guard and self.gil.bound):
            return await self._run(fn)
        loop = asyncio.get_running_loop()
        if self._one is None or self._one[0] is not loop:
            self._one = (loop, asyncio.Lock())
        async with self._one[1]:  # released when the caller times out: a hung call holds nothing
            return await self._run(fn)

    async def _run(self, fn: Callable[[], Any]) -> Any:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        ctx = contextvars.copy_context()
        if self._running == 0:
            self._busy_since = loop.time()
        self._running += 1
        counted = [True]

        def ended(cpu_s: float) -> None:
            if counted[0]:
                counted[0] = False
                now = loop.time()
                self.gil.add(cpu_s, now - self._busy_since)
                self._busy_since = now
                self._running -= 1

        def settle(ok: bool, value: Any, cpu_s: float) -> None:
            ended(cpu_s)
            if fut.done():  # cancelled or timed out meanwhile
                return
            if ok:
                fut.set_result(value)
            else:
                fut.set_exception(value)

        def job() -> None:
            c0 = time.thread_time()
            try:
                result: tuple[bool, Any] = (True, ctx.run(fn))
            except BaseException as e:  # noqa: BLE001 - handed to the awaiting task
                result = (False, e)
            try:
                loop.call_soon_threadsafe(settle, *result, time.thread_time() - c0)
            except RuntimeError:  # the loop is closed: nobody waits any more
                pass

        self._jobs.put(job)
        if not self._idle.acquire(blocking=False):  # no idle thread: start one
            threading.Thread(target=self._work, name="ragdive-target", daemon=True).start()
        try:
            return await fut
        finally:
            if fut.cancelled():  # abandoned (timed out): no longer running as far as the share goes
                ended(0.0)

    def _work(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=self._idle_s)
            except queue.Empty:
                if self._idle.acquire(blocking=False):  # withdraw this thread's idle token and leave
                    return
                continue  # the token was just taken for a job: serve it
            job()
            self._idle.release()


def load_target(spec: str) -> Callable[..., Any]:
    """Import ``package.module:attribute``. A class, or a function taking no
    arguments, is a factory: it is called and its result is the target."""
    mod_name, _, attr = spec.partition(":")
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as e:
        raise TargetError(f"cannot import target module {mod_name!r}: {e}") from None
    obj: Any = mod
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise TargetError(f"target {spec!r}: {mod_name} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if inspect.isclass(obj) or _is_factory(obj):
        obj = obj()
    return obj


def _is_factory(obj: Any) -> bool:
    """A function that takes no arguments builds the target (``make_bot``)."""
    if not inspect.isfunction(obj):
        return False
    params = inspect.signature(obj).parameters.values()
    return not any(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params) and not any(
        p.kind is p.VAR_POSITIONAL for p in params
    )
