"""The default executor of the plugin's event loop: a thread pool whose calls,
when the caller gives up on them, close a coroutine they return.

litellm's ``acompletion`` runs ``completion`` through
``loop.run_in_executor(None, ...)``; for async providers that call returns a
coroutine, which ``acompletion`` then awaits. When the awaiting task is
cancelled in between (a timeout, the circuit breaker, the deadline, Ctrl-C),
asyncio drops the executor's result and Python prints "coroutine
'OpenAIChatCompletion.acompletion' was never awaited". This executor closes
such an abandoned coroutine instead: nothing runs it, nothing warns.

A call is abandoned when its future is cancelled (asyncio cancels the
executor future when the awaiting side is cancelled). The result and the
cancel are serialised by one lock, so whichever comes second closes the
coroutine.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


def _close(value: Any) -> None:
    if inspect.iscoroutine(value):
        value.close()


class _Abandonable(Future[Any]):
    """A future whose ``cancel`` also means "nobody will read the result"."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.abandoned = False

    def cancel(self) -> bool:
        with self.lock:
            self.abandoned = True
            finished = self.done() and not self.cancelled() and self.exception() is None
        if finished:
            _close(self.result())
        return super().cancel()


class ClosingExecutor(ThreadPoolExecutor):
    """A :class:`ThreadPoolExecutor` whose abandoned calls close the coroutine they return."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        out = _Abandonable()

        def run() -> None:
            if not out.set_running_or_notify_cancel():
                return
            try:
                result = fn(*args, **kwargs)
            except BaseException as e:  # noqa: BLE001 - handed to the caller, as the pool does
                out.set_exception(e)
                return
            with out.lock:
                if out.abandoned:
                    _close(result)
                    result = None
                out.set_result(result)

        super().submit(run)
        return out
