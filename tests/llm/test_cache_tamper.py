"""A tampered cache directory (what CI restores from a shared cache) is data only: a row that
names a file is refused like a pickle and never opens or deletes that file (replay, expiry,
``cache prune``), a setting stored in cache.db never runs, and the NLI score cache follows
the same rule (issue 32, cases 1 and 2)."""

from __future__ import annotations

import os
import pickle
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_ragdive.core.errors import RagdiveCacheWarning
from pytest_ragdive.llm import disk
from pytest_ragdive.llm.cache import CachedResponse, LLMCache
from pytest_ragdive.llm.ttl import DAY_S, prune
from pytest_ragdive.metrics import nli

VICTIM_TEXT = CachedResponse(content="read from a file outside the cache", created=time.time()).model_dump_json()


def _victim(tmp_path: Path) -> Path:
    """A file outside the cache, alone in its folder (diskcache also removes emptied folders),
    holding a valid cached response: reading it would replay it."""
    victim = tmp_path / "outside" / "deep" / "victim.json"
    victim.parent.mkdir(parents=True)
    victim.write_text(VICTIM_TEXT)
    return victim


def _tamper(cache_dir: Path, key: str, filename: str, *, mode: int = 3, expire: float | None = None) -> None:
    con = sqlite3.connect(cache_dir / "cache.db")
    with con:
        n = con.execute(
            "UPDATE Cache SET mode = ?, filename = ?, value = NULL, expire_time = ? WHERE key = ?",
            (mode, filename, expire, key),
        ).rowcount
    con.close()
    assert n == 1


def _cache_with(cache_dir: Path, *keys: str) -> None:
    with LLMCache(cache_dir) as c:
        for k in keys:
            assert c.set(k, CachedResponse(content=f"answer {k}", created=time.time()))


def _intact(victim: Path) -> bool:
    return victim.is_file() and victim.read_text() == VICTIM_TEXT


@pytest.mark.parametrize("mode", [2, 3, 4])  # binary, text, pickle kept in a file
@pytest.mark.parametrize("record_mode", ["none", "new_episodes"])
def test_a_row_naming_a_file_is_refused_counted_dropped_never_read_or_deleted(
    tmp_path: Path, mode: int, record_mode: str
) -> None:
    cache_dir, victim = tmp_path / "cache", _victim(tmp_path)
    _cache_with(cache_dir, "k", "ok")
    _tamper(cache_dir, "k", str(victim), mode=mode)
    with LLMCache(cache_dir, record_mode) as c:
        with pytest.warns(RagdiveCacheWarning, match="corrupt entry"):
            assert c.get("k") is None  # a miss: never the file's content
        assert c.stats.corrupt == 1 and c.stats.misses == 1
        assert c.get("ok") is not None  # the rest of the cache still replays
        assert "k" not in c  # the row is dropped
    assert _intact(victim)


@pytest.mark.parametrize("filename", ["ABS", "../outside/deep/victim.json", "ab/cd/../../../outside/deep/victim.json"])
def test_deleting_replacing_or_expiring_a_row_never_deletes_the_file_it_names(tmp_path: Path, filename: str) -> None:
    cache_dir, victim = tmp_path / "cache", _victim(tmp_path)
    name = str(victim) if filename == "ABS" else filename
    # replaced by a new answer (a TTL refetch), deleted, and expired by diskcache's cleanup on a write
    _cache_with(cache_dir, "replaced", "deleted", "expired")
    (cache_dir / "ab" / "cd").mkdir(parents=True)  # so that a path through them resolves
    _tamper(cache_dir, "replaced", name)
    _tamper(cache_dir, "deleted", name)
    _tamper(cache_dir, "expired", name, expire=time.time() - 10)
    with LLMCache(cache_dir) as c:
        assert c.set("replaced", CachedResponse(content="new", created=time.time()))
        c.discard("deleted")
        assert c.set("another", CachedResponse(content="x", created=time.time()))  # culls the expired row
        assert c.get("replaced") is not None and "deleted" not in c
    con = sqlite3.connect(cache_dir / "cache.db")
    assert con.execute("SELECT COUNT(*) FROM Cache WHERE filename IS NOT NULL").fetchone()[0] == 0
    con.close()
    assert _intact(victim)


def test_cache_prune_drops_a_row_naming_a_file_and_leaves_the_file(tmp_path: Path) -> None:
    cache_dir, victim = tmp_path / "cache", _victim(tmp_path)
    _cache_with(cache_dir, "k", "ok")
    _tamper(cache_dir, "k", str(victim))
    done = prune(cache_dir, 30 * DAY_S)
    assert (done.entries, done.unreadable, done.kept) == (2, 1, 1)
    assert _intact(victim)


def test_only_a_value_file_in_diskcaches_own_layout_inside_the_cache_is_removable(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    own = "ab/cd/" + "0" * 28 + ".val"
    assert disk.own_file(root, own) == os.path.join(os.path.realpath(root), own)
    for bad in ["/etc/passwd", "../x.val", "ab/cd/../../x.val", "ab/cd/" + "z" * 28 + ".val", None, 3]:
        assert disk.own_file(root, bad) is None
    (root / "ab").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (root / "ab" / "cd").symlink_to(tmp_path / "elsewhere")  # a linked folder leads out
    assert disk.own_file(root, own) is None


def test_a_setting_stored_in_cache_db_never_runs(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    _cache_with(cache_dir, "k")
    con = sqlite3.connect(cache_dir / "cache.db")
    with con:  # diskcache runs every sqlite_* setting as a PRAGMA and passes every disk_* to its Disk
        con.execute("INSERT INTO Settings VALUES ('sqlite_user_version', 7)")
        con.execute("INSERT INTO Settings VALUES ('disk_evil', 1)")
        con.execute("UPDATE Settings SET value = 0 WHERE key = 'disk_min_file_size'")
    con.close()
    with LLMCache(cache_dir, "none") as c:
        assert c.get("k") is not None and c.unusable is None
        big = "x" * 100_000
        assert c.db.set("big", big) and c.db.get("big") == big  # kept inline, never in a file
    con = sqlite3.connect(cache_dir / "cache.db")
    assert con.execute("PRAGMA user_version").fetchone()[0] == 0
    assert con.execute("SELECT COUNT(*) FROM Settings WHERE key IN ('sqlite_user_version', 'disk_evil')").fetchone()[0] == 0
    con.close()
    assert [p for p in cache_dir.rglob("*") if p.name != "cache.db" and not p.name.startswith("cache.db-")] == []


class _Evil:
    """A pickle that, when loaded, creates the file ``marker``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.marker), "w"))


def test_the_nli_score_cache_never_unpickles(tmp_path: Path) -> None:
    import diskcache

    folder, marker = tmp_path / "nli", tmp_path / "ran"
    key = nli.ScoreCache.key("m", "premise", "hypothesis")
    with diskcache.Cache(str(folder)) as raw:  # a plain diskcache pickles what is not text
        raw.set(key, _Evil(marker))
        raw.set("text", "0.5; not a score")
    cache = nli.ScoreCache(folder)
    with pytest.warns(RagdiveCacheWarning, match="NLI score cache"):
        assert cache.get(key) is None
    assert cache.get("text") is None
    assert not marker.exists() and cache.dropped == 2
    cache.put(key, 0.75)
    assert nli.ScoreCache(folder).get(key) == 0.75  # a new process reads the score back


def test_the_nli_score_cache_refuses_a_row_naming_a_file(tmp_path: Path) -> None:
    folder, victim = tmp_path / "nli", _victim(tmp_path)
    victim.write_text("0.9")
    key = nli.ScoreCache.key("m", "p", "h")
    nli.ScoreCache(folder).put(key, 0.25)
    _tamper(folder, key, str(victim))
    cache = nli.ScoreCache(folder)
    with pytest.warns(RagdiveCacheWarning):
        assert cache.get(key) is None
    assert victim.read_text() == "0.9" and cache.dropped == 1


def test_open_db_stores_text_only(tmp_path: Path) -> None:
    db = disk.open_db(tmp_path, 1.0)
    try:
        with pytest.raises(TypeError, match="text only"):
            db.set("k", {"a": 1})
        pickled = pickle.dumps({"a": 1})
        assert db.set("b", pickled) and db.get("b") == pickled  # bytes stay bytes, never loaded
    finally:
        db.close()
