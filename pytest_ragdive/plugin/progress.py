"""Progress while a long (LLM) run keeps an item waiting: conversations and
turns done, LLM calls and cost so far, updated at most once a second at the
end of pytest's current output line and erased before pytest writes the
item's status. Nothing at all when stdout is not a terminal. Imports no pytest."""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

T = TypeVar("T")


class Snapshot(BaseModel):
    done: int = 0  # conversations finished
    started: int = 0  # conversations started
    turns: int = 0  # turns of the finished conversations
    calls: int = 0  # LLM calls so far
    cost_usd: float | None = None

    def text(self) -> str:
        cost = "" if self.cost_usd is None else f", ${self.cost_usd:.4f}"
        return (f" [ragdive {self.done}/{self.started} conversations, {self.turns} turns, "
                f"{self.calls} LLM calls{cost}]")


class Progress:
    """``wait(future)`` returns its result, showing a snapshot while it takes long."""

    def __init__(self, write: Callable[[str], None], room: Callable[[], int], snapshot: Callable[[], Snapshot],
                 interval_s: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        """``write`` puts text at the end of the terminal's current line (bypassing
        pytest's capture and its line bookkeeping); ``room`` says how many
        columns are left on that line."""
        self.write = write
        self.room = room
        self.snapshot = snapshot
        self.interval_s = interval_s
        self.clock = clock
        self.shown = 0  # characters of progress currently at the end of the line
        self.last = float("-inf")
        self.updates = 0

    def wait(self, fut: concurrent.futures.Future[T], deadline: float | None = None) -> T:
        """The future's result; ``deadline`` (a ``time.monotonic()`` instant) raises
        ``concurrent.futures.TimeoutError`` once passed, as ``fut.result(timeout)`` does."""
        try:
            while True:
                step = self.interval_s
                if deadline is not None:
                    step = min(step, max(0.0, deadline - time.monotonic()))
                try:
                    return fut.result(timeout=step)
                except concurrent.futures.TimeoutError:
                    if deadline is not None and time.monotonic() >= deadline:
                        raise
                    self.show()
        finally:
            self.clear()

    def show(self) -> None:
        now = self.clock()
        if now - self.last < self.interval_s:
            return  # at most once per interval
        self.last = now
        try:
            text = self.snapshot().text()
        except RuntimeError:  # the run's statistics changed while being read: next time
            return
        self.clear()
        if len(text) > self.room() - 1:
            return  # it would wrap, and a wrapped line cannot be erased
        self.write(text)
        self.shown = len(text)
        self.updates += 1

    def clear(self) -> None:
        if self.shown:
            n = self.shown
            self.shown = 0
            self.write("\b" * n + " " * n + "\b" * n)


def terminal_progress(config: Any, snapshot: Callable[[], Snapshot]) -> Progress | None:
    """A Progress on pytest's terminal (``config`` is the pytest config; duck-typed
    so that this module imports no pytest), or None when stdout is not a terminal."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    out = sys.__stdout__
    if reporter is None or not reporter.isatty() or out is None:
        return None
    tw = config.get_terminal_writer()
    capman = config.pluginmanager.get_plugin("capturemanager")
    fd = out.fileno()
    encoding = out.encoding or "utf-8"

    def write(text: str) -> None:
        # around pytest's capture (the item is running) and its line bookkeeping: what is
        # written here is erased before pytest writes again, so its idea of the line stays true
        with capman.global_and_fixture_disabled() if capman is not None else contextlib.nullcontext():
            tw.flush()
            os.write(fd, text.encode(encoding, errors="replace"))

    return Progress(write, lambda: int(tw.fullwidth) - int(tw.width_of_current_line), snapshot)
