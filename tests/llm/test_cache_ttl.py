"""cache_ttl_days (seed 001: judge answers cached for 30 days): expired entries are misses,
fetched again and replaced; ``cache prune`` deletes them; the default never expires."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from pytest_ragdive.cli import main
from pytest_ragdive.core.config import RagdiveConfig
from pytest_ragdive.llm import LLMClient
from pytest_ragdive.llm.cache import CachedResponse, LLMCache
from pytest_ragdive.llm.claims import PREFIX
from pytest_ragdive.llm.ttl import DAY_S, expired, prune
from pytest_ragdive.testing import FakeLLMServer, config_for

NOW = 1_800_000_000.0


def _resp(age_days: float, now: float = NOW) -> CachedResponse:
    return CachedResponse(content="x", created=now - age_days * DAY_S)


def test_expiry_rule() -> None:
    ttl = 30 * DAY_S
    assert not expired(_resp(29), ttl, NOW) and expired(_resp(31), ttl, NOW)
    assert not expired(_resp(10_000), None, NOW)  # no TTL: never
    assert expired(CachedResponse(content="x", created=0.0), ttl, NOW)  # unknown age counts as expired
    assert RagdiveConfig().cache_ttl_days is None
    assert RagdiveConfig.model_fields["cache_ttl_days"].description


def test_an_expired_entry_is_a_miss_and_a_fresh_one_a_hit(tmp_path: Path) -> None:
    now = time.time()
    with LLMCache(tmp_path, ttl_s=30 * DAY_S) as cache:
        cache.set("old", CachedResponse(content="old", created=now - 31 * DAY_S))
        cache.set("new", CachedResponse(content="new", created=now - DAY_S))
        assert cache.get("old") is None and cache.get("new") is not None
        assert (cache.stats.hits, cache.stats.misses, cache.stats.expired) == (1, 1, 1)
        assert "1 expired (cache_ttl_days)" in cache.stats.summary()
    with LLMCache(tmp_path) as forever:  # the default: nothing expires
        assert forever.get("old") is not None


class Verdict(BaseModel):
    ok: bool


def test_the_client_fetches_an_expired_answer_again_and_replaces_it(tmp_path: Path) -> None:
    calls: list[int] = []

    def handler(body: dict[str, Any]) -> dict[str, Any]:
        calls.append(1)
        return {"ok": True}

    with FakeLLMServer(handler) as server:
        cfg = config_for(server, cache_dir=str(tmp_path / "c"), cache_ttl_days=30, llm={"transport": "openai_http"})

        def ask() -> None:
            async def go() -> None:
                client = LLMClient.from_config(cfg)
                try:
                    res = await client.complete_json("judge", [{"role": "user", "content": "judge this"}], Verdict)
                    assert res.value is not None and res.value.ok
                finally:
                    await client.aclose()

            asyncio.run(go())

        ask()
        ask()
        assert len(calls) == 1  # fresh: replayed
        with LLMCache(tmp_path / "c") as cache:  # age the stored answer by 31 days
            (key,) = [k for k in cache.db.iterkeys() if not k.startswith(PREFIX)]
            old = cache.get(key)
            assert old is not None
            cache.set(key, old.model_copy(update={"created": old.created - 31 * DAY_S}))
        ask()
        assert len(calls) == 2  # expired: a miss, fetched again
        ask()
        assert len(calls) == 2  # and replaced by the new answer


def test_prune_deletes_expired_and_unreadable_entries_only(tmp_path: Path) -> None:
    with LLMCache(tmp_path) as cache:
        cache.set("old", _resp(40, time.time()))
        cache.set("new", CachedResponse(content="n", created=time.time()))
        cache.db.set("junk", "not json")
        cache.db.set(PREFIX + "busy", "a claim marker")
    done = prune(tmp_path, 30 * DAY_S)
    assert (done.entries, done.expired, done.unreadable, done.kept) == (3, 1, 1, 1)
    with LLMCache(tmp_path) as cache:
        assert "new" in cache and "old" not in cache and "junk" not in cache
        assert (PREFIX + "busy") in cache.db  # claims are not cache entries


def test_cache_prune_command(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with LLMCache(tmp_path / ".ragdive" / "cache") as cache:
        cache.set("old", _resp(40, time.time()))
        cache.set("new", CachedResponse(content="n", created=time.time()))
    assert main(["cache", "prune"]) == 4  # no TTL configured or given
    assert "set cache_ttl_days" in capsys.readouterr().err
    (tmp_path / "pyproject.toml").write_text("[tool.ragdive]\ncache_ttl_days = 30\n")
    assert main(["cache", "prune"]) == 0
    assert "1 expired (older than 30 days)" in capsys.readouterr().out
    assert main(["cache", "prune", "--older-than-days", "0.5", "--cache-dir", str(tmp_path / "nowhere")]) == 4
    assert "no LLM cache" in capsys.readouterr().err
    assert os.path.isdir(tmp_path / ".ragdive" / "cache")
