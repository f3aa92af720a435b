"""Ctrl-C during a run: the first press stops the run, a further press quits.

The first SIGINT raises :class:`KeyboardInterrupt` as Python's own handler
does: the conversations in flight are cancelled, what finished is reported
(partial), nothing is gated as passed and no baseline is written. Shutting
down can take seconds (pytest formats the interrupt's traceback, which with
litellm loaded walks thousands of modules), and a second press landing in
the middle of that used to print hundreds of lines of traceback ending in a
``SystemError`` from inside pytest. With the guard installed, any further
press prints one line and ends the process at once with exit code 130
(128 + SIGINT), the shell's convention for "interrupted".

When an async target blocks the event loop, the first press does not wait
for the loop (the pipeline sees it has stopped turning: nothing is cancelled
or joined there, its daemon thread is left behind), and the interrupt's
traceback is cut to the frames above the test loop before pytest formats it,
so the run ends in about a second with its partial reports written.

SIGTERM (what a CI cancel sends, and ``timeout``, ``kill`` and container
stops) is handled like the first Ctrl-C: it raises :class:`Terminated` (a
:class:`KeyboardInterrupt`), so the finished conversations are reported, the
rest are listed as ``not_run`` and the run exits non-zero (2, "interrupted")
with a line saying SIGTERM stopped it. A further SIGTERM (or Ctrl-C) while
shutting down ends the process at once (exit 143, 128 + SIGTERM).

The guard is installed by the role that concludes the run (plain run or the
xdist controller) when the run starts and removed at ``pytest_unconfigure``;
it only replaces Python's default handlers (SIGINT's ``default_int_handler``,
SIGTERM's ``SIG_DFL``), never one the user installed (nor an ignored SIGTERM),
and only in the main thread (where signal handlers live).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType
from typing import Any

FORCED_EXIT = 130
FORCED_EXIT_TERM = 143  # 128 + SIGTERM
MESSAGE = (
    "\nragdive: Ctrl-C again while shutting down: exiting now (exit code 130); "
    "the reports of this run may be incomplete\n"
)
MESSAGE_TERM = (
    "\nragdive: SIGTERM again while shutting down: exiting now (exit code 143); "
    "the reports of this run may be incomplete\n"
)
#: the note a run stopped by SIGTERM carries (terminal, results.json, summary)
TERMINATED_NOTE = (
    "stopped by SIGTERM (a CI cancel, a timeout or a container stop): the finished conversations are "
    "reported, the others are listed as not_run, nothing was gated and no baseline was written"
)


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: the run stops as on the first Ctrl-C."""

    def __init__(self) -> None:
        super().__init__("SIGTERM received: the run stopped (finished conversations reported, the rest not_run)")


class InterruptGuard:
    """SIGINT handler for one pytest session (see the module docstring)."""

    def __init__(self) -> None:
        self.presses = 0
        self.terminated = False  # a SIGTERM arrived
        self._previous: Any = None
        self._previous_term: Any = None
        self._installed = False
        self._term_installed = False

    def install(self) -> bool:
        """Install the handlers (each only over Python's default); whether SIGINT's was installed
        (False outside the main thread, where nothing changes, or when SIGINT has a handler of
        the user's; SIGTERM's is installed where SIGTERM has its default disposition)."""
        if self._installed or self._term_installed or threading.current_thread() is not threading.main_thread():
            return False
        sigterm = getattr(signal, "SIGTERM", None)
        if sigterm is not None and signal.getsignal(sigterm) == signal.SIG_DFL:
            self._previous_term = signal.SIG_DFL
            signal.signal(sigterm, self._handle)
            self._term_installed = True
        current = signal.getsignal(signal.SIGINT)
        if current is signal.default_int_handler:
            self._previous = current
            signal.signal(signal.SIGINT, self._handle)
            self._installed = True
        return self._installed

    def uninstall(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        if self._installed and signal.getsignal(signal.SIGINT) == self._handle:
            signal.signal(signal.SIGINT, self._previous)
        if self._term_installed and signal.getsignal(signal.SIGTERM) == self._handle:
            signal.signal(signal.SIGTERM, self._previous_term)
        self._installed = self._term_installed = False

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.presses += 1
        term = signum == getattr(signal, "SIGTERM", None)
        if self.presses == 1:
            if term:
                self.terminated = True
                raise Terminated
            raise KeyboardInterrupt
        self.force_exit(term=term)

    @staticmethod
    def force_exit(term: bool = False) -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - a closed or broken stream must not stop the exit
                pass
        try:
            _write(MESSAGE_TERM if term else MESSAGE)
        finally:
            os._exit(FORCED_EXIT_TERM if term else FORCED_EXIT)


def _write(text: str) -> None:
    """Straight to file descriptor 2: safe inside a signal handler (by the
    second press pytest's output capture has ended)."""
    try:
        os.write(2, text.encode())
    except OSError:
        pass
