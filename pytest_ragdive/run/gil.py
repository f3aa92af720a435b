"""Sync targets that hold the GIL run one call at a time while LLM replies are awaited.

A sync target runs in worker threads (:class:`.target.DaemonThreads`) so that many
conversations go on at once while each call waits on its own I/O (an LLM, a database).
A target that computes in Python instead (BM25 in pure Python, a rule-based bot) holds the
GIL for its whole call: several such calls at once run no faster than one after another,
and every thread that waits for the GIL, the event loop's among them, waits longer. The
event loop then reads the judge's replies late, and each request holds its slot for
longer than the provider took (on 2 cores, 32 requests in flight, 0.1 s latency: 20-23 of
the 32 slots were busy at the provider while the conversations ran; with the bot's calls
one at a time, 26-29).

So the target's calls are measured: the CPU time of the calls that ended, against the
wall time during which at least one call was running. When that share is between
:data:`GIL_BOUND` and :data:`PARALLEL` (calls that compute, one core's worth at most: the
GIL), the calls run one at a time; below it (they wait on I/O) or above it (their work
runs in parallel outside the GIL, as numpy's large operations do), as many at once as the
run's conversations ask for. The share is an average over windows of at least
:data:`WINDOW_S` of busy time, so a verdict follows the target if it changes.

Only runs with an LLM (``gil_guard``, :func:`.target.as_async`): offline nothing waits on
the event loop, and calls side by side keep what a target runs outside the GIL (numpy's
large operations, as the bundled example's BM25 has) in parallel on a second core. On the
5,000-conversation gated run the rule made no difference beyond the machine's own drift.
"""

from __future__ import annotations

__all__ = ["GIL_BOUND", "PARALLEL", "WINDOW_S", "GilShare"]

#: the CPU share of the busy time from which a target's calls run one at a time
GIL_BOUND = 0.5
#: above this share the calls ran in parallel (outside the GIL): no limit
PARALLEL = 1.5
#: the busy time a reading spans
WINDOW_S = 0.05
#: calls in a reading, at least
MIN_CALLS = 3


class GilShare:
    """The target calls' CPU share of their busy time (an exponential moving average over
    readings) and the verdict."""

    def __init__(self) -> None:
        self.share: float | None = None
        self._cpu = 0.0
        self._wall = 0.0
        self._calls = 0

    def add(self, cpu_s: float, busy_s: float, ended: int = 1) -> None:
        """``ended`` calls ended with ``cpu_s`` of CPU between them, over ``busy_s`` more busy time."""
        self._cpu += max(0.0, cpu_s)
        self._wall += max(0.0, busy_s)
        self._calls += ended
        if self._wall >= WINDOW_S and self._calls >= MIN_CALLS:
            x = self._cpu / self._wall
            self.share = x if self.share is None else 0.7 * self.share + 0.3 * x
            self._cpu = self._wall = 0.0
            self._calls = 0

    @property
    def bound(self) -> bool:
        """Whether the target's calls should run one at a time."""
        return self.share is not None and GIL_BOUND <= self.share <= PARALLEL
