"""Threads that keep the process alive after the run: a target (or a library it
uses) that starts a non-daemon thread and never stops it leaves pytest printing
"N passed" and then never exiting, since Python waits for every non-daemon
thread at exit. At the end of the run, after the reports are written, one line
names such threads and what they run, before Python waits on them.

Not counted: threads alive when the plugin started, the plugin's own
(``ragdive-*``, all daemon threads anyway) and thread-pool workers (they end at
exit once idle). Imports no pytest.
"""

from __future__ import annotations

import threading
import time
from typing import Any

#: how long a thread that is ending anyway may take before it counts
GRACE_S = 0.2


class ThreadCensus:
    """The threads alive when the plugin started; :meth:`leaked` at the end."""

    def __init__(self) -> None:
        self._before = {t.ident for t in threading.enumerate()}

    def leaked(self, grace_s: float = GRACE_S) -> list[threading.Thread]:
        """Non-daemon threads started since, not the plugin's, still alive after ``grace_s``."""
        deadline = time.monotonic() + grace_s
        out = []
        for t in threading.enumerate():
            if t is threading.current_thread() or t.daemon or t.ident in self._before:
                continue
            if t.name.startswith("ragdive-") or _pool_worker(t):
                continue
            t.join(max(0.0, deadline - time.monotonic()))
            if t.is_alive():
                out.append(t)
        return out

    def line(self, grace_s: float = GRACE_S) -> str | None:
        threads = self.leaked(grace_s)
        if not threads:
            return None
        named = ", ".join(f"{t.name!r} ({where})" if (where := started_where(t)) else repr(t.name) for t in threads[:5])
        more = f" and {len(threads) - 5} more" if len(threads) > 5 else ""
        return (
            f"ragdive: the run is over, but Python waits for {len(threads)} non-daemon thread(s) the plugin did not "
            f"start before it exits: {named}{more}. Stop and join them when the target is done (a session fixture's "
            "teardown), or start them with daemon=True"
        )


def started_where(t: threading.Thread) -> str:
    """What the thread runs, and where that is defined: ``runs module.func (file:line)``."""
    fn: Any = getattr(t, "_target", None)
    if fn is None and type(t).run is not threading.Thread.run:
        fn = type(t).run
    code = getattr(fn, "__code__", None)
    if fn is None or code is None:
        return ""
    name = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', getattr(fn, '__name__', '?'))}"
    return f"runs {name} at {code.co_filename}:{code.co_firstlineno}"


def _pool_worker(t: threading.Thread) -> bool:
    fn = getattr(t, "_target", None)
    return getattr(fn, "__module__", "") == "concurrent.futures.thread"
