"""The LLM response cache: diskcache (SQLite) in ``cache_dir``, keyed by request hash.

Key
    sha256 of the canonical JSON (``sort_keys``, compact separators) of
    everything that can change the answer: model, messages, temperature,
    seed, the response schema (``model_json_schema()``), the configured
    structured-output mode, prompt id and version, plus :data:`KEY_VERSION`.
    Never the API key, never ``api_base``: the same model behind another host
    (a proxy, a CI mirror) gives the same answer, and a base URL may carry
    credentials. Neither is the transport (litellm and openai_http send the
    same request) nor the *resolved* structured mode: the key holds the
    configured mode (``auto`` stays ``auto``), so replaying a cache never has
    to import litellm to find out what ``auto`` means for a model.

Value
    JSON text of :class:`CachedResponse`: the raw assistant content, token
    usage, the model that answered, finish reason and cost. No headers, no
    key. Values are stored as plain text only; a pickled value (which a
    tampered, committed cache could use to run code) is refused as corrupt.

Record modes
    :class:`~pytest_ragdive.core.config_models.RecordMode` (``new_episodes``, ``none``,
    ``all``, ``off``); callers test its properties, never the names. ``ttl_s``
    (``cache_ttl_days``, default never): an older entry is a miss (:mod:`.ttl`).

Several processes (pytest-xdist workers) can share one directory: SQLite
serialises writers (busy timeout :data:`DB_TIMEOUT_S`), each finished call is
stored at once, and a miss is *claimed* (an atomic ``add`` of an in-flight
marker, :mod:`.claims`) so that two processes do not send the same request at
the same time: the second waits for the first one's answer, and takes the
claim over as soon as the marker is stale.

Nothing here imports diskcache at module import; it is imported when a cache is opened.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from ..core.config_models import RecordMode
from ..core.errors import CacheUnusable, RagdiveCacheWarning, one_line
from .claims import EXPIRE_S, PREFIX, Marker, Watch, is_stale, new_marker, parse
from .disk import is_busy, open_db
from .keys import KEY_VERSION, CachedResponse, cache_key, canonical_json
from .stats import CacheStats
from .ttl import expired, ttl_seconds

if TYPE_CHECKING:
    from ..core.config import RagdiveConfig

__all__ = [
    "DB_TIMEOUT_S", "KEY_VERSION", "CacheStats", "CachedResponse", "LLMCache", "RagdiveCacheWarning", "RecordMode",
    "cache_key", "canonical_json",
]


R = TypeVar("R")


# plain statements on diskcache's table (``mode`` 1: raw, inline; no file, no tag; size 0, as
# the data-only Disk of .disk stores them). Its triggers keep the Settings counts.
_MODE_RAW = 1
_GET = (
    "SELECT mode, filename, value FROM Cache WHERE key = ? AND raw = 1 AND (expire_time IS NULL OR expire_time > ?)"
)
_SELECT_BOTH = "SELECT key, expire_time, mode, filename, value FROM Cache WHERE key IN (?, ?) AND raw = 1"
_DELETE_KEY = "DELETE FROM Cache WHERE key = ? AND raw = 1"
_UPSERT = (
    "INSERT INTO Cache(key, raw, store_time, expire_time, access_time, access_count, tag, size, mode, filename, value)"
    " VALUES (?, 1, ?, ?, ?, 0, NULL, 0, ?, NULL, ?)"
    " ON CONFLICT(key, raw) DO UPDATE SET store_time = excluded.store_time, expire_time = excluded.expire_time,"
    " access_time = excluded.access_time, access_count = 0, tag = NULL, size = 0, mode = excluded.mode,"
    " filename = NULL, value = excluded.value"
)
# the presence rows of the clients sharing the cache (.presence), read by key range
PRESENCE = PREFIX + "presence:"
PRESENCE_END = PREFIX + "presence;"  # the next key after the range
_PRESENCE = "SELECT key, expire_time, mode, filename, value FROM Cache WHERE key >= ? AND key < ? AND raw = 1 LIMIT 64"
# diskcache culls up to 10 expired rows (claim markers of killed runs) on each write; once per batch here
_CULL = (
    "DELETE FROM Cache WHERE rowid IN (SELECT rowid FROM Cache WHERE expire_time IS NOT NULL"
    " AND expire_time < ? ORDER BY expire_time LIMIT 10)"
)


def _run(op: Callable[[], Any]) -> Any:
    try:
        return op()
    except Exception as e:  # noqa: BLE001 - handed to the op's caller
        return e

#: SQLite busy timeout: how long a writer waits for another process's lock
DB_TIMEOUT_S = 30.0


class LLMCache:
    """diskcache-backed store of chat completions, shared by processes."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        record_mode: RecordMode | str = RecordMode.NEW_EPISODES,
        *,
        timeout: float = DB_TIMEOUT_S,
        ttl_s: float | None = None,
    ):
        try:
            mode = RecordMode(record_mode)
        except ValueError:
            names = ", ".join(m.value for m in RecordMode)
            raise ValueError(f"record_mode must be one of {names}, got {record_mode!r}") from None
        self.directory = Path(directory)
        self.record_mode = mode
        self.timeout, self.ttl_s = timeout, ttl_s
        self.stats = CacheStats()
        self._db: Any = None
        self._fast: Any = None  # the same database on connections that never wait for a lock (see nowait)
        self._tls = threading.local()  # .fast: the connection of this thread's nowait call
        self._lock = threading.RLock()  # writes may run in worker threads
        self._claims: dict[str, Marker] = {}  # the claims this process holds
        self._written: dict[str, str] = {}  # the marker text this process last wrote for each claim
        self.unusable: str | None = None  # why the whole cache cannot be used (said once)

    def _count(self, name: str, n: int = 1) -> None:
        with self._lock:
            setattr(self.stats, name, getattr(self.stats, name) + n)

    @classmethod
    def from_config(cls, cfg: RagdiveConfig) -> LLMCache | None:
        """The cache of a config (``cache_dir`` resolved against the config's
        directory); None when ``record_mode`` is ``off``."""
        if not cfg.record_mode.cached:
            return None
        return cls(cfg.path(cfg.cache_dir), cfg.record_mode, ttl_s=ttl_seconds(cfg.cache_ttl_days))

    # -- modes -------------------------------------------------------------
    @property
    def reads(self) -> bool:
        """Whether lookups may answer (new_episodes, none)."""
        return self.record_mode.reads

    @property
    def writes(self) -> bool:
        """Whether finished calls are stored (new_episodes, all)."""
        return self.record_mode.writes

    @property
    def replay_only(self) -> bool:
        """Whether a miss is an error (none)."""
        return self.record_mode.replay_only

    # -- storage -----------------------------------------------------------
    @property
    def db(self) -> Any:
        fast = getattr(self._tls, "fast", None)
        if fast is not None:
            return fast
        if self._db is not None:
            return self._db
        with self._lock:
            if self._db is not None:
                return self._db
            if self.unusable is not None:
                raise CacheUnusable(self.unusable)
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                self._db = open_db(self.directory, self.timeout)
            except Exception as e:  # a corrupt cache.db, an unwritable directory
                self._mark_unusable(e)
                raise CacheUnusable(self.unusable or str(e)) from None
        return self._db

    def nowait(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> tuple[bool, R | None]:
        """Run the write ``fn`` (a method of this cache) on a connection whose SQLite
        busy timeout is 0: ``(True, its result)``, or ``(False, None)`` when another
        writer (another process, or a worker thread of this one) holds the lock; the
        caller then runs it again in a worker thread, where waiting blocks nobody.
        This lets the event loop write without a thread hop when nobody else is
        writing, and never wait for a lock."""
        fast = self._fast_db()
        if fast is None:
            return False, None
        self._tls.fast = fast
        try:
            return True, fn(*args, **kwargs)
        except Exception as e:
            if is_busy(e):
                return False, None
            raise
        finally:
            self._tls.fast = None

    def _fast_db(self) -> Any:
        if self._fast is None and self.unusable is None:
            try:
                self.db  # noqa: B018 - opened (and checked) as usual first
                self._fast = open_db(self.directory, 0)
            except Exception:  # noqa: BLE001 - the worker-thread path still works
                self._fast = False
        return None if self._fast is False else self._fast  # never its truth value: len() counts rows

    def _raise_busy(self, e: BaseException) -> None:
        """Inside :meth:`nowait`, a busy lock is handed to it (not counted as an error)."""
        if getattr(self._tls, "fast", None) is not None and is_busy(e):
            raise e

    # -- an unusable cache (corrupt cache.db): said once, then no cache at all
    def _mark_unusable(self, e: BaseException) -> None:
        if self.unusable is not None:
            return
        where = self.directory / "cache.db"
        self.unusable = f"ragdive cache {where} is unusable ({type(e).__name__}: {e})"
        self._count("errors")
        self.stats.unusable = 1
        what = (
            "record mode 'none' replays only from it, so the run stops"
            if self.replay_only
            else "running without a cache: nothing is replayed or stored"
        )
        warnings.warn(
            f"{self.unusable}; {what}. Delete {self.directory} (or restore it) to start a new cache.",
            RagdiveCacheWarning,
            stacklevel=4,
        )

    def _broken(self, e: BaseException) -> bool:
        """Whether ``e`` means the whole cache is unusable (then said once)."""
        if isinstance(e, CacheUnusable):
            return True
        if isinstance(e, sqlite3.DatabaseError) and not isinstance(e, sqlite3.OperationalError):
            self._mark_unusable(e)  # "file is not a database", "database disk image is malformed"
            return True
        return False

    def _check_usable(self) -> bool:
        """False when the cache is unusable; under record mode none that ends the run."""
        if self.unusable is None:
            return True
        if self.replay_only:
            raise CacheUnusable(
                f"{self.unusable}, and record mode 'none' replays only from the cache: restore the "
                f"committed cache, or record again with --ragdive-record-mode=new_episodes"
            )
        return False

    def close(self) -> None:
        fast, self._fast = self._fast, None
        if fast is not None and fast is not False:
            try:
                fast.close()
            except Exception:  # noqa: BLE001 - its twin below is what matters
                pass
        if self._db is not None:
            try:
                self._db.close()
            finally:
                self._db = None

    def __enter__(self) -> LLMCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _warn(self, msg: str) -> None:
        warnings.warn(f"ragdive cache {self.directory}: {msg}", RagdiveCacheWarning, stacklevel=3)

    def peek(self, key: str) -> CachedResponse | None:
        """Read an entry without counting a hit or miss (corrupt ones are still dropped)."""
        if not self._check_usable():
            return None
        try:
            raw = self._read(key)
        except ValueError as e:  # refused pickle
            return self._drop(key, str(e))
        except Exception as e:  # sqlite errors, timeouts
            if self._broken(e):
                self._check_usable()
                return None
            self._count("errors")
            self._warn(f"read failed ({type(e).__name__}: {e}); treating as a miss")
            return None
        if raw is None:
            return None
        try:
            if isinstance(raw, bytes):
                raw = raw.decode("utf-8")
            if not isinstance(raw, str):
                raise ValueError(f"unexpected value type {type(raw).__name__}")
            resp = CachedResponse.model_validate_json(raw)
            if expired(resp, self.ttl_s):  # older than cache_ttl_days: a miss, fetched again
                self._count("expired")
                return None
            return resp
        except ValidationError as e:
            return self._drop(key, f"not a cached response: {one_line(e, inputs=False)}")
        except (ValueError, UnicodeDecodeError) as e:
            return self._drop(key, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")

    def _read(self, key: str) -> Any:
        """``db.get(key)`` on the connection :meth:`nowait` writes on, once open (its page cache
        survives its own writes: half the cost of a read on the other one), else or when busy on ``db``."""
        fast = self._fast
        if fast is not None and fast is not False:
            try:
                return self._fast_get(fast, key)
            except Exception as e:
                if not is_busy(e):
                    raise
        return self.db.get(key)

    @staticmethod
    def _fast_get(fast: Any, key: str) -> Any:
        """diskcache's ``get`` on ``fast`` without its per-call layers: one statement, then
        the data-only Disk's checks (a pickled or file-backed row raises, as there)."""
        row = fast._con.execute(_GET, (key, time.time())).fetchone()
        return None if row is None else fast.disk.fetch(row[0], row[1], row[2], False)

    def _drop(self, key: str, why: str) -> CachedResponse | None:
        self._count("corrupt")
        self._warn(f"corrupt entry {key[:16]}... dropped ({why}); it will be fetched again")
        try:
            self.db.delete(key)
        except Exception:
            self._count("errors")
        return None

    def get(self, key: str) -> CachedResponse | None:
        """A stored response, or None (counted as a hit or a miss)."""
        if not self.reads:
            self.stats.misses += 1
            return None
        value = self.peek(key)
        if value is None:
            self.stats.misses += 1
        else:
            self.stats.hits += 1
        return value

    def set(self, key: str, value: CachedResponse, *, release: bool = False) -> bool:
        """Store a finished call at once; False (with a warning) if the write failed.

        ``release=True`` also drops this process's claim on ``key``, in the same
        transaction.
        """
        if not self.writes or self.unusable is not None:
            return False
        data = value.model_dump_json()
        try:
            db = self.db
            if release:
                with db.transact():
                    db.set(key, data)
                    db.delete(PREFIX + key)
                self._claims.pop(key, None)
                self._written.pop(key, None)
            else:
                db.set(key, data)
        except Exception as e:
            self._raise_busy(e)
            if self._broken(e):
                return False
            self._count("errors")
            self._warn(f"write failed ({type(e).__name__}: {e}); the answer is not cached")
            return False
        self._count("stores")
        return True

    def delete(self, key: str) -> None:
        self.db.delete(key)

    def discard(self, key: str) -> None:
        """Drop a stored entry if there is one (never raises)."""
        if not self.writes or self.unusable is not None:
            return
        try:
            self.db.delete(key)
        except Exception as e:
            self._raise_busy(e)
            self._count("errors")

    def __contains__(self, key: str) -> bool:
        try:
            return key in self.db
        except Exception:
            return False

    def __len__(self) -> int:
        """Number of stored responses (in-flight markers excluded)."""
        n = 0
        for k in self.db.iterkeys():
            if isinstance(k, str) and not k.startswith(PREFIX):
                n += 1
        return n

    # -- several writes in one transaction (.writes) -------------------------
    def apply(self, ops: list[Callable[[], Any]]) -> list[Any]:
        """Run ``ops`` (calls of :meth:`claim_unless_stored`, :meth:`store` and :meth:`release`)
        in one transaction: one lock, one commit for all of them, where each alone paid
        both; inside it, those two write with a few plain statements on diskcache's own
        table (:data:`_UPSERT`: the same rows diskcache writes, its triggers keep its counts)
        instead of diskcache's select-insert-cull per call, and expired rows are culled once.
        Each op's result, or the exception it raised, in order. Inside :meth:`nowait`, a busy
        lock raises (the batch is then run in a worker thread); a transaction that cannot be
        had or committed otherwise runs the ops one by one through diskcache, as before."""
        if self.unusable is None:
            try:
                db = self.db
                with db.transact():
                    self._tls.sql = sql = db._con.execute
                    try:
                        out = [_run(op) for op in ops]
                        sql(_CULL, (time.time(),))
                    finally:
                        self._tls.sql = None
                return out
            except Exception as e:
                self._raise_busy(e)
                self._broken(e)
        return [_run(op) for op in ops]

    def claim_unless_stored(self, key: str, watch: Watch | None = None) -> tuple[CachedResponse | None, bool]:
        """``(answer, False)`` when ``key`` holds an answer (another process stored it since
        our lookup), else ``(None, claimed)``: :meth:`claim`'s verdict. The check and the
        claim share one transaction under :meth:`apply` (they used to be a claim, a read,
        and a release when the read found an answer)."""
        sql = getattr(self._tls, "sql", None)
        if sql is None or not self.writes:
            hit = self.peek(key)
            if hit is not None:
                return hit, False
            return None, self.claim(key, None, watch)
        name = PREFIX + key
        now = time.time()
        row = None
        for found, *rest in sql(_SELECT_BOTH, (key, name)).fetchall():  # the answer and the marker, at once
            if found == key:  # an answer: read as any lookup reads it (TTL, a corrupt row dropped)
                hit = self.peek(key)
                if hit is not None:
                    return hit, False
            else:
                row = rest
        marker = new_marker()
        text = marker.dump()
        if row is not None:  # another holder's marker: taken over when expired, stale or unreadable
            expire_time, mode, filename, held = row
            live = expire_time is None or expire_time > now
            if live and not is_stale(held if mode == _MODE_RAW and filename is None else None, watch):
                return None, False
        sql(_UPSERT, (name, now, now + EXPIRE_S, now, _MODE_RAW, text))
        self._claims[key] = marker
        self._written[key] = text
        return None, True

    def store(self, key: str, value: CachedResponse, *, release: bool = False) -> bool:
        """:meth:`set`; with ``release``, this process's claim on ``key`` is dropped even
        when the write failed (a claim is never left behind)."""
        sql = getattr(self._tls, "sql", None)
        if sql is None:
            ok = self.set(key, value, release=release)
            if release and not ok:
                self.release(key)
            return ok
        if not self.writes:
            return False
        try:
            now = time.time()
            sql(_UPSERT, (key, now, None, now, _MODE_RAW, value.model_dump_json()))
        except Exception as e:  # noqa: BLE001 - as set() says it
            if not self._broken(e):
                self._count("errors")
                self._warn(f"write failed ({type(e).__name__}: {e}); the answer is not cached")
                if release:
                    self.release(key)
            return False
        if release:
            sql(_DELETE_KEY, (PREFIX + key,))
            self._claims.pop(key, None)
            self._written.pop(key, None)
        self._count("stores")
        return True

    # -- cross-process claims (markers: .claims) ---------------------------
    def claim(self, key: str, ttl_s: float | None = None, watch: Watch | None = None) -> bool:
        """Atomically mark ``key`` as being fetched by this process; False while
        another process holds a live claim. A stale claim (:func:`.claims.is_stale`:
        a dead or killed holder, no heartbeat) is taken over at once. The claim
        lives for ``ttl_s`` (default :data:`.claims.EXPIRE_S`) unless
        :meth:`heartbeat` renews it."""
        if not self.writes or self.unusable is not None:
            return True
        name = PREFIX + key
        marker = new_marker()
        text = marker.dump()
        expire = ttl_s if ttl_s is not None else EXPIRE_S
        try:
            db = self.db
            if not db.add(name, text, expire=expire):
                with db.transact():
                    holder = db.get(name)
                    if holder is not None and not is_stale(holder, watch):
                        return False
                    db.set(name, text, expire=expire)
            self._claims[key] = marker
            self._written[key] = text
            return True
        except Exception as e:
            self._raise_busy(e)
            if not self._broken(e):
                self._count("errors")
            return True  # cannot coordinate: fetch it ourselves

    def heartbeat(self, key: str) -> bool:
        """Renew this process's claim on ``key``; False when it is no longer ours."""
        marker = self._claims.get(key)
        if marker is None or self.unusable is not None:
            return False
        name = PREFIX + key
        try:
            db = self.db
            with db.transact():
                raw = db.get(name)
                if raw != self._written.get(key):  # not the text we wrote last: is it still ours?
                    held = parse(raw)
                    if not isinstance(held, Marker) or held.token != marker.token:
                        self._claims.pop(key, None)
                        self._written.pop(key, None)
                        return False
                marker = marker.beat()
                text = marker.dump()
                db.set(name, text, expire=EXPIRE_S)
            self._claims[key] = marker
            self._written[key] = text
            return True
        except Exception as e:
            self._raise_busy(e)
            self._count("errors")
            return False

    def heartbeat_many(self, keys: list[str]) -> list[bool]:
        """:meth:`heartbeat` for each of ``keys``, in one transaction."""
        if self.unusable is not None:
            return [False] * len(keys)
        try:
            with self.db.transact():
                return [self.heartbeat(k) for k in keys]
        except Exception as e:
            self._raise_busy(e)
            self._count("errors")
            return [False] * len(keys)

    def release(self, key: str) -> None:
        if not self.writes or self.unusable is not None:
            return
        self._claims.pop(key, None)
        self._written.pop(key, None)
        try:
            self.db.delete(PREFIX + key)
        except Exception as e:
            self._raise_busy(e)
            self._count("errors")

    # -- presence: whether another process shares the cache now (.presence) ---------
    def presence_beat(self, marker: Marker) -> int:
        """Write (or renew) ``marker`` as a client's presence; the number of other live ones."""
        if self.unusable is not None:
            return 1  # cannot tell: claim
        try:
            self.db.set(PRESENCE + marker.token, marker.dump(), expire=EXPIRE_S)
        except Exception as e:
            self._raise_busy(e)
            self._broken(e)
            return 1
        return self.presence_of_others(marker.token)[0]

    def presence_of_others(self, token: str) -> tuple[int, int]:
        """The live presence rows other than ``token``'s (at most 64 read; an error counts as
        one: claim), and how many of those say their client does not claim yet (a row that
        does not say, or cannot be read, counts as claiming: nobody waits on it)."""
        if self.unusable is not None:
            return 1, 0
        try:
            rows = self.db._con.execute(_PRESENCE, (PRESENCE, PRESENCE_END)).fetchall()
        except Exception:  # noqa: BLE001 - cannot tell: claim
            return 1, 0
        now = time.time()
        n = unready = 0
        for key, expire_time, mode, filename, value in rows:
            if key == PRESENCE + token or (expire_time is not None and expire_time <= now):
                continue
            if mode != _MODE_RAW or filename is not None or not isinstance(value, str) or not is_stale(value, None, now):
                n += 1  # anything not plainly stale counts: claiming when in doubt costs only CPU
                m = parse(value)
                unready += isinstance(m, Marker) and not m.claims
        return n, unready

    def presence_leave(self, token: str) -> None:
        """Delete ``token``'s presence row (never reopens a closed cache)."""
        if self._db is not None and self.unusable is None:
            self._db.delete(PRESENCE + token)

    def claimed(self, key: str) -> bool:
        """Whether some process holds a claim on ``key`` (live or not yet judged stale)."""
        try:
            return (PREFIX + key) in self.db
        except Exception:
            return False
