"""``monitored(target)``: the same target the tests use, watched in production.

The wrapper calls the target exactly as before and returns what it returned
(the same object); a raising target still raises the same exception. On the
request path it only reads a clock and puts one event on a bounded queue; a
background thread turns events into signals (``signals.request_signals``),
Prometheus metrics (``prometheus.RagMetrics``) and log lines
(``logs.LogWriter``). A failure there is counted (``Monitor.failures``,
``rag_monitoring_errors_total``) and never reaches the request; a full queue
drops the event and counts it (``rag_monitoring_dropped_total``).

Stage timings: inside the target, ``with stage("retrieval"): ...`` and
``with stage("generation"): ...`` time those stages of the current monitored
call (a context variable, so concurrent calls and threads keep theirs apart);
outside a monitored call ``stage`` does nothing.
"""

from __future__ import annotations

import inspect
import logging
import queue
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.records import TargetResponse
from ..run.target import coerce_response
from .logs import FeedbackEvent, LogWriter, RequestEvent, Timings, history_messages, utc_now
from .signals import RequestSignals, request_signals

if TYPE_CHECKING:
    from .prometheus import RagMetrics

__all__ = ["AsyncMonitoredTarget", "Monitor", "MonitoredTarget", "monitored", "stage"]

_log = logging.getLogger("pytest_ragdive.online")
_STAGE_NAMES = ("retrieval", "generation")
_TIMINGS: ContextVar[dict[str, float] | None] = ContextVar("ragdive_stage_timings", default=None)


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Time one stage (``retrieval`` or ``generation``) of the current monitored call;
    a stage entered twice adds up. Outside a monitored call it only runs the block."""
    if name not in _STAGE_NAMES:
        raise ValueError(f"stage must be one of {', '.join(_STAGE_NAMES)}, got {name!r}")
    timings = _TIMINGS.get()
    if timings is None:
        yield
        return
    t0 = time.perf_counter()
    try:
        yield
    finally:
        timings[name] = timings.get(name, 0.0) + time.perf_counter() - t0


@dataclass
class _Call:
    """What the request path hands to the worker: raw, unprocessed."""

    request_id: str
    conversation_id: str | None
    time: str
    messages: list[Any]
    value: Any = None
    error: BaseException | None = None
    timings: dict[str, float] = field(default_factory=dict)
    total_s: float = 0.0


_STOP = object()


class Monitor:
    """Turns calls into signals, metrics and log lines, off the request path.

    ``metrics``: a :class:`~pytest_ragdive.online.prometheus.RagMetrics` (None: no
    Prometheus metrics); ``log``: a JSONL path for the request log (None: none);
    ``background=False`` processes every call inline (tests, scripts);
    ``on_signals`` is called with each request's :class:`RequestSignals`.
    """

    def __init__(
        self,
        *,
        metrics: RagMetrics | None = None,
        log: str | Path | None = None,
        background: bool = True,
        queue_size: int = 10_000,
        on_signals: Callable[[str, RequestSignals], None] | None = None,
    ) -> None:
        self.metrics = metrics
        self.writer = LogWriter(log) if log is not None else None
        self.background = background
        self.on_signals = on_signals
        self.failures = 0
        self.dropped = 0
        self.processed = 0
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=queue_size)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # -- request path ------------------------------------------------------
    def submit(self, call: _Call | FeedbackEvent) -> None:
        """Hand one call (or feedback event) over; never blocks, never raises."""
        try:
            if not self.background:
                self._process(call)
                return
            self._ensure_worker()
            self._queue.put_nowait(call)
        except queue.Full:
            with self._lock:
                self.dropped += 1
            self._guard(lambda: self.metrics.dropped() if self.metrics else None)
        except Exception:  # noqa: BLE001 - the monitoring never fails a request
            self._failed()

    def record_feedback(self, category: str, *, request_id: str | None = None) -> None:
        """Count one negative feedback event (``rag_negative_feedback_total{category}``)
        and log it, off the request path like a call; never raises."""
        self.submit(FeedbackEvent(time=utc_now(), request_id=request_id, category=category))

    # -- worker ------------------------------------------------------------
    def _ensure_worker(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="ragdive-monitor", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is _STOP:
                    return
                self._process(item)
            finally:
                self._queue.task_done()

    def _process(self, call: _Call | FeedbackEvent) -> None:
        """Signals, then each sink (metrics, log, callback) on its own: a failing sink is
        counted and the others still get the event."""
        try:
            if isinstance(call, FeedbackEvent):
                self._feedback(call)
                return
            retrieval_s, generation_s = call.timings.get("retrieval"), call.timings.get("generation")
            response: TargetResponse | None = None
            signals: RequestSignals | None = None
            if call.error is None:
                try:
                    response = coerce_response(call.value)
                    signals = request_signals(
                        call.messages, response, retrieval_s=retrieval_s, generation_s=generation_s, total_s=call.total_s
                    )
                except Exception:  # noqa: BLE001 - e.g. a return value that is no response
                    self._failed()
                    return
            metrics, writer, on_signals = self.metrics, self.writer, self.on_signals
            if metrics is not None:
                if signals is not None:
                    self._sink(lambda: metrics.observe(signals))
                else:
                    self._sink(lambda: metrics.observe_error(retrieval_s, generation_s, call.total_s))
            if writer is not None:
                event = RequestEvent(
                    time=call.time,
                    request_id=call.request_id,
                    conversation_id=call.conversation_id,
                    messages=history_messages(call.messages),
                    response=response,
                    error=None if call.error is None else f"{type(call.error).__name__}: {call.error}",
                    timings=Timings(retrieval_s=retrieval_s, generation_s=generation_s, total_s=call.total_s),
                )
                self._sink(lambda: writer.write(event))
            if on_signals is not None and signals is not None:
                self._sink(lambda: on_signals(call.request_id, signals))
        except Exception:  # noqa: BLE001
            self._failed()
        finally:
            with self._lock:
                self.processed += 1

    def _feedback(self, event: FeedbackEvent) -> None:
        metrics, writer = self.metrics, self.writer
        if metrics is not None:
            category = event.category
            self._sink(lambda: metrics.record_feedback(category))
            event = event.model_copy(update={"category": metrics.feedback_category(category)})
        if writer is not None:
            logged = event
            self._sink(lambda: writer.write(logged))

    def _sink(self, fn: Callable[[], object]) -> None:
        try:
            fn()
        except Exception:  # noqa: BLE001
            self._failed()

    def _failed(self) -> None:
        with self._lock:
            self.failures += 1
        _log.debug("ragdive monitoring failure", exc_info=True)
        self._guard(lambda: self.metrics.monitoring_failure() if self.metrics else None)

    @staticmethod
    def _guard(fn: Callable[[], object]) -> None:
        try:
            fn()
        except Exception:  # noqa: BLE001
            pass

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every submitted call is processed; False on timeout."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)
        return True

    def close(self, timeout: float = 5.0) -> None:
        """Process what is queued, then stop the worker thread."""
        thread = self._thread
        if thread is None or not thread.is_alive():
            return
        self.flush(timeout)
        try:
            self._queue.put(_STOP, timeout=timeout)
        except queue.Full:
            return
        thread.join(timeout)


class _Wrapped:
    def __init__(self, target: Callable[..., Any], monitor: Monitor) -> None:
        self.target = target
        self.monitor = monitor

    def record_feedback(self, category: str, *, request_id: str | None = None) -> None:
        self.monitor.record_feedback(category, request_id=request_id)

    @contextmanager
    def _recorded(
        self, messages: Sequence[Mapping[str, Any]], request_id: str | None, conversation_id: str | None
    ) -> Iterator[_Call]:
        """One call, timed, submitted to the monitor when it returned or raised an
        Exception (a cancelled call, a BaseException, is not recorded)."""
        call = _Call(
            request_id=request_id or uuid.uuid4().hex,
            conversation_id=conversation_id,
            time=utc_now(),
            messages=list(messages),
        )
        token = _TIMINGS.set(call.timings)
        t0 = time.perf_counter()
        done = False
        try:
            yield call
            done = True
        except Exception as e:
            call.error = e
            done = True
            raise
        finally:
            call.total_s = time.perf_counter() - t0
            _TIMINGS.reset(token)
            if done:
                self.monitor.submit(call)


class MonitoredTarget(_Wrapped):
    """A monitored sync target: ``wrapped(messages)`` returns what ``target(messages)`` returns."""

    def __call__(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        request_id: str | None = None,
        conversation_id: str | None = None,
    ) -> Any:
        with self._recorded(messages, request_id, conversation_id) as call:
            call.value = self.target(messages)
            return call.value


class AsyncMonitoredTarget(_Wrapped):
    """A monitored async target: ``await wrapped(messages)`` returns what the target's awaitable returns."""

    async def __call__(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        request_id: str | None = None,
        conversation_id: str | None = None,
    ) -> Any:
        with self._recorded(messages, request_id, conversation_id) as call:
            call.value = await self.target(messages)
            return call.value


def _is_async(target: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(
        getattr(target, "__call__", None)  # noqa: B004
    )


def monitored(
    target: Callable[..., Any] | Callable[..., Awaitable[Any]],
    *,
    metrics: RagMetrics | None = None,
    log: str | Path | None = None,
    monitor: Monitor | None = None,
    background: bool = True,
) -> MonitoredTarget | AsyncMonitoredTarget:
    """Wrap a sync or async target (the callable the tests use) for production.

    Returns a callable of the same kind (an async target gives an async wrapper) that
    also accepts ``request_id=`` and ``conversation_id=`` keywords (for feedback and
    logs; a request id is generated when none is given). ``metrics``/``log``/
    ``background`` build a :class:`Monitor` unless ``monitor`` is given;
    ``wrapped.monitor`` is it, ``wrapped.record_feedback(category, request_id=...)``
    counts a negative feedback event.
    """
    if not callable(target):
        raise TypeError(f"target {target!r} is not callable")
    mon = monitor or Monitor(metrics=metrics, log=log, background=background)
    if _is_async(target):
        return AsyncMonitoredTarget(target, mon)
    return MonitoredTarget(target, mon)
