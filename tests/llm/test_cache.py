"""The response cache: keys, secrets, corruption, interruption, several processes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pytest_ragdive.llm import LLMClient
from pytest_ragdive.llm.cache import LLMCache, RagdiveCacheWarning, cache_key
from pytest_ragdive.llm.keys import CachedResponse
from pytest_ragdive.testing import FakeLLMServer, config_for

SECRET = "sk-secret-123"


def answer(body: dict[str, Any]) -> str:
    return "answer to " + body["messages"][-1]["content"]


def msgs(q: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": q}]


async def _texts(client: LLMClient, qs: list[str]) -> list[str]:
    try:
        return list(await asyncio.gather(*[client.complete_text("judge", msgs(q), prompt_id="p") for q in qs]))
    finally:
        await client.aclose()


# -- keys -------------------------------------------------------------------------


def test_cache_key_covers_what_changes_the_answer() -> None:
    base: dict[str, Any] = dict(
        model="openai/m",
        messages=[{"role": "user", "content": "hi"}],
        temperature=0.0,
        seed=0,
        schema={"type": "object"},
        structured="auto",
        prompt_id="judge",
        prompt_version="1",
    )
    k = cache_key(**base)
    assert len(k) == 64 and k == cache_key(**dict(reversed(list(base.items()))))
    changes = {
        "model": "openai/n",
        "messages": [{"role": "user", "content": "hi!"}],
        "temperature": 0.7,
        "seed": 1,
        "schema": {"type": "object", "properties": {}},
        "structured": "json_schema",
        "prompt_id": "judge2",
        "prompt_version": "2",
    }
    keys = {cache_key(**{**base, name: value}) for name, value in changes.items()}
    assert len(keys) == len(changes) and k not in keys
    # message dict key order does not matter
    assert cache_key(**{**base, "messages": [{"content": "hi", "role": "user"}]}) == k


def test_key_ignores_api_base_and_api_key(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("RAGDIVE_TEST_KEY", SECRET)
    with FakeLLMServer(answer) as a, FakeLLMServer(answer) as b:
        ca = config_for(a, cache_dir=str(tmp_path), llm={"transport": "openai_http", "api_key_env": "RAGDIVE_TEST_KEY"})
        asyncio.run(_texts(LLMClient.from_config(ca), ["x", "y"]))
        monkeypatch.setenv("RAGDIVE_TEST_KEY", "sk-another-key")
        cb = config_for(b, cache_dir=str(tmp_path), llm={"transport": "openai_http", "api_key_env": "RAGDIVE_TEST_KEY"})
        asyncio.run(_texts(LLMClient.from_config(cb), ["x", "y"]))
        assert a.request_count == 2 and b.request_count == 0


@pytest.mark.parametrize("transport", ["litellm", "openai_http"])
def test_api_key_appears_in_no_cache_file(tmp_path: Path, monkeypatch, transport: str) -> None:
    monkeypatch.setenv("RAGDIVE_TEST_KEY", SECRET)
    cache_dir = tmp_path / "cache"
    with FakeLLMServer(answer) as s:
        cfg = config_for(s, cache_dir=str(cache_dir), llm={"transport": transport, "api_key_env": "RAGDIVE_TEST_KEY"})
        client = LLMClient.from_config(cfg)

        def scan() -> list[str]:
            files = [p for p in cache_dir.rglob("*") if p.is_file()]
            assert files
            return [str(p) for p in files if SECRET.encode() in p.read_bytes()]

        asyncio.run(_texts(client, [f"q{i}" for i in range(5)]))
        assert s.request_headers[0]["authorization"] == f"Bearer {SECRET}"
        assert scan() == []  # while open (WAL files included)
        client.close()
        assert scan() == []
        assert SECRET not in client.stats.model_dump_json()


# -- corruption ------------------------------------------------------------------------


def _raw_db(cache_dir: Path) -> Any:
    import diskcache

    return diskcache.Cache(str(cache_dir))


@pytest.mark.parametrize(
    "garbage", ["not json at all", b"\xff\xfe binary", {"content": "a pickled dict"}, '{"no_content": 1}']
)
def test_corrupt_entry_is_dropped_warned_and_refetched(tmp_path: Path, garbage: Any) -> None:
    cache_dir = tmp_path / "cache"
    with FakeLLMServer(answer) as s:
        cfg = config_for(s, cache_dir=str(cache_dir), llm={"transport": "openai_http"})
        asyncio.run(_texts(LLMClient.from_config(cfg), ["a", "b"]))
        raw = _raw_db(cache_dir)
        keys = list(raw.iterkeys())
        assert len(keys) == 2
        raw.set(keys[0], garbage)  # a dict is pickled by plain diskcache: must be refused
        raw.close()
        client = LLMClient.from_config(cfg)
        with pytest.warns(RagdiveCacheWarning, match="corrupt entry"):
            out = asyncio.run(_texts(client, ["a", "b"]))
        assert out == ["answer to a", "answer to b"]
        assert s.request_count == 3
        assert client.stats.cache.corrupt == 1 and client.stats.cache.hits == 1
        # the entry was re-stored and is fine now
        client3 = LLMClient.from_config(cfg)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            asyncio.run(_texts(client3, ["a", "b"]))
        assert s.request_count == 3 and client3.stats.cache.corrupt == 0


def test_cache_api_roundtrip(tmp_path: Path) -> None:
    with LLMCache(tmp_path / "c") as c:
        assert c.get("k") is None and c.stats.misses == 1
        assert c.set("k", CachedResponse(content="hi", model="m", prompt_tokens=3))
        got = c.get("k")
        assert got is not None and got.content == "hi" and got.prompt_tokens == 3
        assert c.stats.hits == 1 and c.stats.stores == 1 and len(c) == 1
    ro = LLMCache(tmp_path / "c", "none")
    assert ro.get("k") is not None and not ro.set("k2", CachedResponse(content="x"))
    ro.close()
    with pytest.raises(ValueError, match="record_mode"):
        LLMCache(tmp_path, "sometimes")


def test_claim_left_by_a_dead_process_is_taken_over(tmp_path: Path) -> None:
    import socket

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with LLMCache(tmp_path / "c") as c:
        c.db.add("inflight:k", f"{socket.gethostname()}|{dead.pid}|0", expire=600)
        assert c.claimed("k")
        assert c.claim("k", 60)  # dead holder: taken over at once
        other = LLMCache(tmp_path / "c")
        other.db.set("inflight:k2", f"{socket.gethostname()}|{os.getppid()}|0", expire=600)
        assert not c.claim("k2", 60)  # live holder: wait
        other.close()


# -- interruption ----------------------------------------------------------------------------


def test_interrupted_run_repeats_no_finished_call(tmp_path: Path) -> None:
    def slow_for_some(body: dict[str, Any]) -> str:
        q = body["messages"][-1]["content"]
        time.sleep(1.5 if q.startswith("slow") else 0.01)
        return "answer to " + q

    import aiohttp  # noqa: F401 - imported before the clock starts (a first import takes ~0.8 s)

    qs = [f"fast{i}" for i in range(6)] + [f"slow{i}" for i in range(3)]
    with FakeLLMServer(slow_for_some) as s:
        cfg = config_for(s, cache_dir=str(tmp_path / "cache"), llm={"transport": "openai_http"})
        client = LLMClient.from_config(cfg)

        async def interrupted() -> None:
            await asyncio.wait_for(_texts(client, qs), timeout=1.2)  # like Ctrl-C mid-run (the slow calls take 1.5 s)

        with pytest.raises(asyncio.TimeoutError):
            asyncio.run(interrupted())
        assert s.request_count == 9
        s.reset()
        s.handler = answer
        t0 = time.perf_counter()
        out = asyncio.run(_texts(LLMClient.from_config(cfg), qs))
        assert out == [f"answer to {q}" for q in qs]
        assert sorted(b["messages"][-1]["content"] for b in s.requests) == ["slow0", "slow1", "slow2"]
        assert time.perf_counter() - t0 < 1.0  # no waiting on claims left behind


# -- several processes ----------------------------------------------------------------------------

WORKER = textwrap.dedent(
    """
    import asyncio, json, random, sys, time, warnings
    from pathlib import Path
    from pytest_ragdive.llm import LLMClient
    from pytest_ragdive.testing import config_for

    url, cache_dir, seed, go = sys.argv[1:5]
    cfg = config_for(url, cache_dir=cache_dir, concurrency=4, llm={"transport": "openai_http"})
    qs = [f"q{i}" for i in range(30)]
    random.Random(int(seed)).shuffle(qs)

    async def main():
        client = LLMClient.from_config(cfg)
        try:
            out = await asyncio.gather(*[client.complete_text("judge", [{"role": "user", "content": q}]) for q in qs])
        finally:
            await client.aclose()
        return client, out

    while not Path(go).exists():
        time.sleep(0.01)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        client, out = asyncio.run(main())
    print(json.dumps({
        "ok": out == [f"answer to {q}" for q in qs],
        "stats": client.stats.model_dump(mode="json"),
        "warnings": [str(x.message) for x in w],
    }))
    """
)


def _run_workers(s: FakeLLMServer, tmp_path: Path, cache_dir: Path, n: int = 2) -> list[dict[str, Any]]:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    go = tmp_path / f"go-{time.monotonic_ns()}"
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), s.url, str(cache_dir), str(i), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(n)
    ]
    time.sleep(0.5)  # let both import, then start together
    go.write_text("go")
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        outs.append(json.loads(out.strip().splitlines()[-1]))
    return outs


def test_processes_sharing_a_cache_never_repeat_a_request(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    with FakeLLMServer(answer, latency_s=0.03) as s:
        outs = _run_workers(s, tmp_path, cache_dir)
        assert all(o["ok"] for o in outs)
        per_request = Counter(b["messages"][-1]["content"] for b in s.requests)
        assert len(per_request) == 30 and max(per_request.values()) == 1, per_request
        assert all(o["stats"]["cache"]["corrupt"] == 0 and o["warnings"] == [] for o in outs)
        hits = sum(o["stats"]["cache"]["hits"] for o in outs)
        stores = sum(o["stats"]["cache"]["stores"] for o in outs)
        assert stores == 30 and hits == 30
        # and again: everything replays
        outs = _run_workers(s, tmp_path, cache_dir)
        assert all(o["ok"] for o in outs) and s.request_count == 30
        assert all(o["stats"]["cache"]["hits"] == 30 for o in outs)


XDIST_TEST = textwrap.dedent(
    """
    import asyncio, json, os
    import pytest
    from pytest_ragdive.llm import LLMClient
    from pytest_ragdive.testing import config_for

    @pytest.mark.parametrize("worker", [0, 1])
    def test_calls(worker, tmp_path_factory):
        cfg = config_for(os.environ["FAKE_URL"], cache_dir=os.environ["SHARED_CACHE"], concurrency=4,
                         llm={"transport": "openai_http"})
        qs = [f"q{i}" for i in range(20)]
        if worker:
            qs.reverse()

        async def main():
            client = LLMClient.from_config(cfg)
            try:
                return client, await asyncio.gather(
                    *[client.complete_text("judge", [{"role": "user", "content": q}]) for q in qs])
            finally:
                await client.aclose()

        client, out = asyncio.run(main())
        assert out == [f"answer to {q}" for q in qs]
        assert client.stats.cache.corrupt == 0
    """
)


def test_two_xdist_workers_share_the_cache(pytester: pytest.Pytester, tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(test_shared=XDIST_TEST)
    with FakeLLMServer(answer, latency_s=0.03) as s:
        monkeypatch.setenv("FAKE_URL", s.url)
        monkeypatch.setenv("SHARED_CACHE", str(tmp_path / "shared"))
        r = pytester.runpytest_subprocess(
            "-n", "2", "-p", "xdist", "-W", "error::pytest_ragdive.errors.RagdiveCacheWarning"
        )
        r.assert_outcomes(passed=2)
        per_request = Counter(b["messages"][-1]["content"] for b in s.requests)
        assert len(per_request) == 20 and max(per_request.values()) == 1


def test_the_key_put_together_field_by_field_is_the_key_of_the_whole_dict() -> None:
    """cache_key builds its canonical JSON field by field (with the schema's text kept by the
    client); every key stays the one the canonical JSON of the whole dict gives."""
    import hashlib

    from pytest_ragdive.llm.keys import KEY_VERSION, canonical_json

    def cache_key_of_dict(schema: Any = None, structured: Any = None, prompt_id: Any = None,
                          prompt_version: Any = None, extra: Any = None, **rest: Any) -> str:
        """The key as first written: the canonical JSON of one dict (the reference)."""
        data = {"v": KEY_VERSION, **rest, "schema": schema, "structured": structured if schema is not None else None,
                "prompt_id": prompt_id, "prompt_version": prompt_version}
        if extra:
            data["extra"] = extra
        return hashlib.sha256(canonical_json(data).encode("utf-8")).hexdigest()

    schema = {"title": "S", "type": "object", "properties": {"ü": {"type": "number"}, "a": {"default": 1.5}}}
    cases: list[dict[str, Any]] = [
        dict(model="openai/m", messages=[{"role": "user", "content": "q"}], temperature=0.0, seed=None),
        dict(model="m", messages=[{"role": "system", "content": "é \u2028 \"x\""}, {"role": "user", "content": ""}],
             temperature=0.7, seed=3, schema=schema, structured="auto", prompt_id="judge_x", prompt_version="4"),
        dict(model="m", messages=[], temperature=None, seed=None, schema=None, structured="auto",
             extra={"repair": 1, "max_tokens": 64, "tag": "combined"}),
        dict(model="m", messages=[{"role": "user", "content": "q", "name": 1e-7}], temperature=1, seed=0,
             schema=schema, structured="json_object", extra={}),
    ]
    for case in cases:
        want = cache_key_of_dict(**case)
        assert cache_key(**case) == want
        if case.get("schema") is not None:
            assert cache_key(**case, schema_text=canonical_json(case["schema"])) == want
        assert cache_key(**case, messages_text=canonical_json(case["messages"])) == want
    assert len({cache_key_of_dict(**c) for c in cases}) == len(cases)
