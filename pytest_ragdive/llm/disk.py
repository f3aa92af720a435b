"""The cache's SQLite file through diskcache: opened with a Disk that never
unpickles (keys and values are plain text; a pickled value, which a tampered,
committed cache could use to run code, is refused), and the test for "another
writer holds the lock". diskcache is imported only when a cache is opened."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

__all__ = ["MIN_FILE_SIZE", "is_busy", "open_db"]

#: values up to this size stay inside cache.db (one file, easy to commit)
MIN_FILE_SIZE = 2**22


def _safe_disk_class() -> Any:
    import diskcache

    class SafeDisk(diskcache.Disk):
        """A Disk that never unpickles: keys and values are plain text."""

        def get(self, key: Any, raw: bool) -> Any:
            if not raw:
                raise ValueError("pickled cache key refused")
            return super().get(key, raw)

        def fetch(self, mode: int, filename: Any, value: Any, read: bool) -> Any:
            if mode == diskcache.core.MODE_PICKLE:
                raise ValueError("pickled cache value refused")
            return super().fetch(mode, filename, value, read)

    return SafeDisk


def open_db(directory: str | Path, timeout: float) -> Any:
    """A ``diskcache.Cache`` on ``directory``; ``timeout`` is SQLite's busy timeout
    (0: a write fails at once, with :func:`is_busy`, when another writer holds the lock)."""
    import diskcache

    return diskcache.Cache(
        str(directory),
        timeout=timeout,
        disk=_safe_disk_class(),
        eviction_policy="none",  # never drop recorded answers; reads never write
        disk_min_file_size=MIN_FILE_SIZE,
        size_limit=2**40,
    )


def is_busy(e: BaseException) -> bool:
    """Whether ``e`` says that another writer holds SQLite's lock (diskcache's Timeout,
    or sqlite3's "database is locked")."""
    if isinstance(e, sqlite3.OperationalError):
        return "locked" in str(e) or "busy" in str(e)
    return type(e).__name__ == "Timeout" and type(e).__module__.startswith("diskcache")
