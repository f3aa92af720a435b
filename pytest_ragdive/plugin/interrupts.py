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

The guard is installed by the role that concludes the run (plain run or the
xdist controller) when the run starts and removed at ``pytest_unconfigure``;
it only replaces Python's default handler, never one the user installed,
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
MESSAGE = (
    "\nragdive: Ctrl-C again while shutting down: exiting now (exit code 130); "
    "the reports of this run may be incomplete\n"
)


class InterruptGuard:
    """SIGINT handler for one pytest session (see the module docstring)."""

    def __init__(self) -> None:
        self.presses = 0
        self._previous: Any = None
        self._installed = False

    def install(self) -> bool:
        """Install the handler; False (and nothing changed) outside the main
        thread or when SIGINT already has a handler other than Python's default."""
        if self._installed or threading.current_thread() is not threading.main_thread():
            return False
        current = signal.getsignal(signal.SIGINT)
        if current is not signal.default_int_handler:
            return False
        self._previous = current
        signal.signal(signal.SIGINT, self._handle)
        self._installed = True
        return True

    def uninstall(self) -> None:
        if not self._installed:
            return
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) == self._handle:
            signal.signal(signal.SIGINT, self._previous)
        self._installed = False

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.presses += 1
        if self.presses == 1:
            raise KeyboardInterrupt
        self.force_exit()

    @staticmethod
    def force_exit() -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - a closed or broken stream must not stop the exit
                pass
        try:
            _write(MESSAGE)
        finally:
            os._exit(FORCED_EXIT)


def _write(text: str) -> None:
    """Straight to file descriptor 2: safe inside a signal handler (by the
    second press pytest's output capture has ended)."""
    try:
        os.write(2, text.encode())
    except OSError:
        pass
