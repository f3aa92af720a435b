"""Judge-cache expiry (seed 001: "cache the judgment for identical input for 30 days").

``cache_ttl_days`` (default: never) makes an entry older than that many days a miss:
its call is made again and the new answer replaces it (under record mode ``none``, which
replays only, an expired entry is a miss like any other). An entry's age is measured from
``CachedResponse.created``, the time its answer arrived; an entry without that time (0)
has an unknown age and counts as expired. :func:`prune` deletes the expired entries of a
cache directory (``python -m pytest_ragdive cache prune``); claim markers are left alone.
"""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import ValidationError

from .claims import PREFIX
from .keys import CachedResponse

__all__ = ["DAY_S", "PruneResult", "expired", "prune", "ttl_seconds"]

DAY_S = 86_400.0


def ttl_seconds(days: float | None) -> float | None:
    """``cache_ttl_days`` in seconds (None: entries never expire)."""
    return None if days is None else float(days) * DAY_S


def expired(resp: CachedResponse, ttl_s: float | None, now: float | None = None) -> bool:
    """Whether ``resp`` is older than ``ttl_s`` seconds (never without a TTL)."""
    if ttl_s is None:
        return False
    if resp.created <= 0:
        return True
    return (time.time() if now is None else now) - resp.created > ttl_s


class PruneResult:
    """What :func:`prune` did: entries looked at, removed as expired, removed as unreadable."""

    def __init__(self) -> None:
        self.entries = 0
        self.expired = 0
        self.unreadable = 0

    @property
    def kept(self) -> int:
        return self.entries - self.expired - self.unreadable


def prune(directory: Path, ttl_s: float, *, now: float | None = None) -> PruneResult:
    """Delete every entry of the cache in ``directory`` older than ``ttl_s`` seconds, and
    every entry that is not a readable cached response (it would be fetched again anyway)."""
    from .disk import open_db

    out = PruneResult()
    now = time.time() if now is None else now
    db = open_db(directory, 30.0)
    try:
        for key in list(db.iterkeys()):
            if not isinstance(key, str) or key.startswith(PREFIX):
                continue
            out.entries += 1
            try:
                raw = db.get(key)
                text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
                resp = CachedResponse.model_validate_json(text) if isinstance(text, str) else None
            except (ValueError, ValidationError, UnicodeDecodeError):
                resp = None
            if resp is None:
                out.unreadable += 1
                db.delete(key)
            elif expired(resp, ttl_s, now):
                out.expired += 1
                db.delete(key)
    finally:
        db.close()
    return out
