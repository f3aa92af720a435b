"""The plugin's SQLite caches through diskcache (the judge cache, the NLI score cache): data only.

A cache directory is what CI restores from a shared cache, so everything in it is data that
may have been tampered with. :func:`open_db` opens it with a Disk that

* never unpickles: keys and values are plain text (or bytes, ints, floats), stored inline in
  ``cache.db``; a pickled key or value is refused (:class:`UnsafeRow`, a ``ValueError``);
* never takes a path from a row: diskcache keeps large values in files whose name is the
  row's ``filename`` column, and would open that file on a read and delete it (and its emptied
  parent folders) when the row is deleted, expired or replaced. Nothing here writes such a
  file; a row with a ``filename`` (or a mode other than inline) is refused on read like a
  pickle (the caller counts and drops it), and deleting it removes only a file that has
  diskcache's own name layout *inside* the cache directory, never one elsewhere, never
  through a linked folder, never a folder above the cache;
* never runs a setting from ``cache.db``: diskcache turns every ``sqlite_*`` row of its
  Settings table into a ``PRAGMA`` statement and every ``disk_*`` row into an argument.
  Every known setting is given explicitly (the stored one is ignored) and unknown rows are
  deleted before diskcache reads them.

diskcache is imported only when a cache is opened."""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from pathlib import Path
from typing import Any

__all__ = ["REFUSED_KEY", "UnsafeRow", "is_busy", "open_db", "own_file"]

#: the relative name diskcache gives a value file: two levels of two hex digits, 28 hex digits
_OWN_FILE = re.compile(r"[0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]{28}\.val")


class _RefusedKey:
    """What a pickled key reads as (never loaded): not a ``str``, so every caller skips it."""

    def __repr__(self) -> str:
        return "<refused pickled key>"


REFUSED_KEY = _RefusedKey()


class UnsafeRow(ValueError):
    """A cache row that is not inline data (pickled, or naming a file): refused, like a pickle."""


def own_file(directory: str | os.PathLike[str], file_path: object) -> str | None:
    """The full path of ``file_path`` when it is a value file diskcache would have written in
    ``directory`` (its name layout, inside it, through no linked folder); else None."""
    if not isinstance(file_path, str) or not _OWN_FILE.fullmatch(file_path.replace(os.sep, "/")):
        return None
    root = os.path.realpath(directory)
    parts = file_path.replace(os.sep, "/").split("/")
    sub = os.path.join(root, parts[0], parts[1])
    if os.path.realpath(sub) != sub:  # a linked folder: the file would be somewhere else
        return None
    return os.path.join(sub, parts[2])


def _safe_disk_class() -> Any:
    import diskcache
    from diskcache.core import MODE_RAW

    class SafeDisk(diskcache.Disk):
        """A Disk that never unpickles and never takes a path from a row."""

        def __init__(self, directory: str, **_settings: Any) -> None:
            super().__init__(directory, min_file_size=2**62, pickle_protocol=0)

        def get(self, key: Any, raw: bool) -> Any:
            if not raw:  # a pickled key: never loaded, never equal to a key of ours
                return REFUSED_KEY
            return super().get(key, raw)

        def store(self, value: Any, read: bool, key: Any = None) -> tuple[int, int, None, Any]:
            if read or type(value) not in (str, bytes, int, float):
                raise TypeError(f"the ragdive cache stores text only, not {type(value).__name__}")
            if type(value) is bytes:
                return 0, MODE_RAW, None, sqlite3.Binary(value)
            return 0, MODE_RAW, None, value

        def fetch(self, mode: int, filename: Any, value: Any, read: bool) -> Any:
            if mode != MODE_RAW or filename is not None:
                what = "a pickled value" if mode == diskcache.core.MODE_PICKLE else "a value kept in a file"
                raise UnsafeRow(f"{what} refused (the cache holds inline text only)")
            return super().fetch(mode, filename, value, read)

        def filename(self, key: Any = None, value: Any = None) -> tuple[str, str]:
            raise TypeError("the ragdive cache never writes value files")

        def remove(self, file_path: Any) -> None:
            full = own_file(self._directory, file_path)
            if full is None:
                return  # a path a row named: never deleted
            with contextlib.suppress(OSError):
                os.unlink(full)  # a link is removed, never its target
            sub = os.path.dirname(full)
            for d in (sub, os.path.dirname(sub)):  # the two hex folders, never the cache's own
                with contextlib.suppress(OSError):
                    os.rmdir(d)

    return SafeDisk


def _settings() -> dict[str, Any]:
    """Every setting diskcache knows, given explicitly (a stored value never applies)."""
    from diskcache.core import DEFAULT_SETTINGS

    out: dict[str, Any] = dict(DEFAULT_SETTINGS)
    out.update(
        eviction_policy="none",  # never drop recorded answers; reads never write
        size_limit=2**40,
        disk_min_file_size=2**62,
        disk_pickle_protocol=0,
    )
    return out


def _drop_unknown_settings(directory: Path, known: set[str], timeout: float) -> None:
    """Delete the rows of ``cache.db``'s Settings table that diskcache would turn into a PRAGMA
    or an argument without our say (an unknown key)."""
    path = directory / "cache.db"
    if not path.is_file():
        return
    con = sqlite3.connect(str(path), timeout=max(timeout, 1.0), isolation_level=None)
    try:
        try:
            keys = [k for (k,) in con.execute("SELECT key FROM Settings")]
        except sqlite3.OperationalError as e:
            if "no such table" in str(e):
                return
            raise
        unknown = [k for k in keys if k not in known]
        if unknown:
            con.executemany("DELETE FROM Settings WHERE key = ?", [(k,) for k in unknown])
    finally:
        con.close()


def open_db(directory: str | Path, timeout: float) -> Any:
    """A ``diskcache.Cache`` on ``directory`` that holds data only (see the module);
    ``timeout`` is SQLite's busy timeout (0: a write fails at once, with :func:`is_busy`,
    when another writer holds the lock)."""
    import diskcache
    from diskcache.core import METADATA

    settings = _settings()
    _drop_unknown_settings(Path(directory), set(settings) | set(METADATA), timeout)
    return diskcache.Cache(str(directory), timeout=timeout, disk=_safe_disk_class(), **settings)


def is_busy(e: BaseException) -> bool:
    """Whether ``e`` says that another writer holds SQLite's lock (diskcache's Timeout,
    or sqlite3's "database is locked")."""
    if isinstance(e, sqlite3.OperationalError):
        return "locked" in str(e) or "busy" in str(e)
    return type(e).__name__ == "Timeout" and type(e).__module__.startswith("diskcache")
