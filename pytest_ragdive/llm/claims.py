"""Claim markers: how processes sharing a cache say "I am fetching this request".

A marker (``inflight:<key>`` in the cache) is a JSON :class:`Marker`: host,
process id, the process's start time (so that a reused process id is told
apart), a per-claim token and a heartbeat that the holder refreshes every
:data:`HEARTBEAT_S` seconds while it fetches (and the cache entry expires
:data:`EXPIRE_S` after the last heartbeat). A waiter judges a marker stale,
and takes the claim over, when

* its heartbeat is older than :data:`STALE_S` (a killed run, a restored cache),
* its holder is a process of this host that no longer runs, or whose start
  time differs (the id was reused),
* or the waiter has watched it for :data:`STALE_S` seconds of its own clock
  without the heartbeat changing (a host whose clock runs ahead).

So a marker left by a killed run delays a later run by at most a few seconds
(it used to wait out the whole retry budget, about 445 s). Markers of older
versions (``host|pid|time``) are honoured only while their holder is a live
process of this host.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from pathlib import Path

from pydantic import BaseModel, ValidationError

__all__ = ["EXPIRE_S", "HEARTBEAT_S", "PREFIX", "STALE_S", "Marker", "Watch", "is_stale", "new_marker"]

PREFIX = "inflight:"
HEARTBEAT_S = 1.0
STALE_S = 5.0
EXPIRE_S = 3 * STALE_S

_HOST = socket.gethostname()


def process_start(pid: int) -> str | None:
    """The start time of a process of this host (clock ticks since boot, from
    /proc), or None where that cannot be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


_STARTED = process_start(os.getpid())


class Marker(BaseModel):
    """What a claim marker holds."""

    host: str
    pid: int
    started: str | None = None  # the holder's process start time (see process_start)
    token: str
    heartbeat: float  # wall-clock time of the last refresh
    claims: bool = True  # a presence row: whether that client claims its calls now (.presence)

    def dump(self) -> str:
        return self.model_dump_json()

    def beat(self) -> Marker:
        return self.model_copy(update={"heartbeat": time.time()})


def new_marker() -> Marker:
    return Marker(host=_HOST, pid=os.getpid(), started=_STARTED, token=uuid.uuid4().hex, heartbeat=time.time())


def parse(raw: object) -> Marker | tuple[str, int] | None:
    """A marker, an old-format ``(host, pid)``, or None when unreadable."""
    if not isinstance(raw, str):
        return None
    if raw.startswith("{"):
        try:
            return Marker.model_validate(json.loads(raw))
        except (ValueError, ValidationError):
            return None
    try:
        host, pid_s, _ = raw.split("|", 2)
        return host, int(pid_s)
    except ValueError:
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, not ours to signal
    return True


class Watch:
    """A waiter's memory of the markers it has seen: token -> (heartbeat, first seen on our clock)."""

    def __init__(self, clock: object = time.monotonic) -> None:
        self._clock = clock if callable(clock) else time.monotonic
        self._seen: dict[str, tuple[float, float]] = {}

    def unchanged_for(self, m: Marker) -> float:
        now = float(self._clock())
        seen = self._seen.get(m.token)
        if seen is None or seen[0] != m.heartbeat:
            self._seen[m.token] = (m.heartbeat, now)
            return 0.0
        return now - seen[1]


def is_stale(raw: object, watch: Watch | None = None, now: float | None = None) -> bool:
    """Whether the marker ``raw`` may be taken over (see the module docstring)."""
    m = parse(raw)
    if m is None:
        return True  # unreadable
    if isinstance(m, tuple):  # an older version's marker
        host, pid = m
        return host != _HOST or (pid != os.getpid() and not _alive(pid))
    now = time.time() if now is None else now
    if now - m.heartbeat > STALE_S:
        return True
    if m.host == _HOST and m.pid != os.getpid():
        if not _alive(m.pid):
            return True
        started = process_start(m.pid)
        if m.started is not None and started is not None and started != m.started:
            return True  # the id now belongs to another process
    return watch is not None and watch.unchanged_for(m) > STALE_S
