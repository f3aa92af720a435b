"""Issue 10, the LLM client and its cache: secrets never leave it, an endpoint that
stops answering ends the run fast (circuit breaker), claim markers of a killed run
never stall a later one, and a corrupt cache.db is said once and bypassed."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import TOY_CONFTEST
from pydantic import BaseModel

from pytest_ragdive.core.config import RagdiveConfig
from pytest_ragdive.core.config_models import LLMConfig
from pytest_ragdive.core.errors import CacheUnusable, EndpointUnavailable, RagdiveCacheWarning
from pytest_ragdive.llm import LLMClient
from pytest_ragdive.llm import claims as claims_mod
from pytest_ragdive.llm.breaker import CircuitBreaker
from pytest_ragdive.llm.cache import LLMCache
from pytest_ragdive.llm.redact import Secrets, redact_url
from pytest_ragdive.testing import FakeLLMServer, config_for

TRANSPORTS = ["litellm", "openai_http"]
KEY = "sk-sentinel-key-5f3e9a1c7b"  # the API key, from OPENAI_API_KEY (not api_key_env)
QKEY = "qsentinel-77aa19"  # a credential in api_base's query string
PASSWORD = "pwsentinel-3141"  # a password in api_base's user info


class Verdict(BaseModel):
    ok: bool


def msgs(q: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": q}]


# -- secrets --------------------------------------------------------------------------------------


class _EchoHandler(BaseHTTPRequestHandler):
    """Refuses every request with a 401 whose message echoes the request headers and
    URL (some providers do)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        return

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        auth = headers.get("authorization", "")
        echoed = f"authorization: {auth}; url: {self.path}; request headers: {json.dumps(headers)}"
        body = json.dumps({"error": {"message": f"Incorrect API key provided. {echoed}", "type": "invalid_request_error"}})
        data = body.encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def echo_server() -> Iterator[str]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _EchoHandler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    finally:
        srv.shutdown()
        srv.server_close()
        t.join(timeout=5)


def test_secrets_are_scrubbed_from_text() -> None:
    old = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = KEY
    try:
        s = Secrets(LLMConfig(api_base=f"http://user:{PASSWORD}@h:1/v1?api-key={QKEY}&api-version=1"))
        text = (
            f"Bearer {KEY} | https://h/v1?api-key={QKEY} | user:{PASSWORD}@h | "
            f'"x-api-key": "other-secret-123" | token=abcdef123456 | sk-unknown-abcdefghijkl'
        )
        out = s.redact(text)
        for secret in (KEY, QKEY, PASSWORD, "other-secret-123", "abcdef123456", "sk-unknown-abcdefghijkl"):
            assert secret not in out, out
        assert "Bearer ***" in out
    finally:
        if old is None:
            del os.environ["OPENAI_API_KEY"]
        else:
            os.environ["OPENAI_API_KEY"] = old
    assert redact_url(f"http://u:{PASSWORD}@h:1/v1?api-key={QKEY}") == "http://***@h:1/v1?api-key=***"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_no_secret_reaches_disk_or_output(
    pytester: pytest.Pytester, echo_server: str, transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A provider echoes the request (headers, URL) in its error: neither the key from
    OPENAI_API_KEY nor api_base's query credential shows up in results, reports,
    JUnit, the cache or the terminal, on either transport."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    pytester.makeconftest(TOY_CONFTEST)
    (pytester.path / "corpus.jsonl").write_text(
        json.dumps({"id": "sky", "title": "Sky", "text": "The sky is blue on a clear day."}) + "\n"
    )
    pytester.makefile(
        ".toml",
        pyproject=f"""
[tool.ragdive]
corpus = "corpus.jsonl"
report_dir = "report"
model = "openai/fake-model"
[tool.ragdive.llm]
api_base = "{echo_server}?api-key={QKEY}"
transport = "{transport}"
timeout_s = 10
max_retries = 0
[tool.ragdive.suites.core]
generated = {{ conversations = 2, turns = 2, seed = 1 }}
""",
    )
    res = pytester.runpytest_subprocess("--ragdive-suite=core", "--junitxml=junit.xml", "-v", "-rA")
    out = res.stdout.str() + res.stderr.str()
    assert "401" in out or "Incorrect API key" in out  # the provider's error did come back
    assert KEY not in out and QKEY not in out, out
    files = [p for p in pytester.path.rglob("*") if p.is_file() and p.name != "pyproject.toml"]
    assert any(p.name == "junit.xml" for p in files) and any(p.name == "results.json" for p in files)
    for p in files:
        data = p.read_bytes()
        assert KEY.encode() not in data and QKEY.encode() not in data, p


# -- the circuit breaker --------------------------------------------------------------------------


def _hanging(**kw: Any) -> FakeLLMServer:
    return FakeLLMServer(fault_rate=1.0, faults=("timeout",), hang_s=60, **kw)


async def _many(client: LLMClient, n: int) -> list[BaseException | Any]:
    try:
        return await asyncio.gather(
            *(client.complete_json("judge", msgs(f"q{i}"), Verdict) for i in range(n)), return_exceptions=True
        )
    finally:
        await client.aclose()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_breaker_stops_sending_to_an_endpoint_that_never_answers(tmp_path: Path, transport: str) -> None:
    with _hanging() as srv:
        # one request in flight (concurrency bounds conversations; requests default to 4 x that)
        cfg = config_for(srv, record_mode="off", concurrency=1,
                         llm={"transport": transport, "timeout_s": 0.3, "max_in_flight": 1})
        client = LLMClient.from_config(cfg, backoff_base_s=0.01, backoff_max_s=0.02)
        out = asyncio.run(_many(client, 12))
        sent = srv.request_count
        host = srv.url.split("//")[1].split("/")[0]
    assert all(isinstance(e, EndpointUnavailable) for e in out), out
    assert sent <= 5  # 5 consecutive timeouts, then nothing more is sent (12 calls x 5 attempts before)
    msg = str(out[-1])
    assert host in msg  # names the endpoint
    assert "5 consecutive timeouts" in msg


def test_breaker_ignores_a_flaky_server_that_answers(tmp_path: Path) -> None:
    """Timeouts between answers never open it: any reply resets the count."""
    with FakeLLMServer(fault_for=lambda body, n: "timeout" if n % 3 != 2 else None, hang_s=60) as srv:
        cfg = config_for(srv, record_mode="off", concurrency=1, llm={"transport": "openai_http", "timeout_s": 0.6})
        client = LLMClient.from_config(cfg, backoff_base_s=0.01, backoff_max_s=0.02)
        out = asyncio.run(_many(client, 2))
        assert srv.request_count == 6  # two timeouts and an answer, twice
    assert all(isinstance(v.value, Verdict) for v in out), out


def test_breaker_needs_consecutive_failures_and_a_quiet_endpoint() -> None:
    now = [0.0]
    b = CircuitBreaker("http://h/v1", threshold=3, quiet_s=10.0, clock=lambda: now[0])  # 3 in a row, 10 s quiet
    b.before_attempt()
    for _ in range(5):
        b.unreachable("timed out")
    assert b.opened is None  # 5 failures, but the endpoint was heard from just now
    now[0] = 11.0
    b.unreachable("timed out")
    assert b.opened is not None
    with pytest.raises(EndpointUnavailable, match="http://h/v1"):
        b.before_attempt()
    off = CircuitBreaker("x", threshold=0, quiet_s=0.0)
    for _ in range(10):
        off.unreachable("timed out")
    assert off.opened is None


def test_default_settings_end_a_dead_endpoint_in_under_two_minutes() -> None:
    """One conversation at a time (the slowest case): breaker_failures attempts, each
    timing out, plus the backoffs between them."""
    llm = LLMConfig()
    assert llm.breaker_failures >= 1
    n = llm.breaker_failures
    assert n * llm.timeout_s + 0.5 * 1.5 * (2 ** (n - 1) - 1) < 120


# -- claim markers ----------------------------------------------------------------------------------


def _claim_marker(**over: Any) -> str:
    m = claims_mod.new_marker().model_copy(update=over)
    return m.dump()


def test_markers_of_a_killed_run_are_stale(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = socket.gethostname()
    now = time.time()
    with LLMCache(tmp_path / "c") as c:
        cases = {
            "other-host-old": _claim_marker(host="ci-runner-7", pid=4242, heartbeat=now - 60),
            "dead-pid": _claim_marker(host=host, pid=dead.pid),
            "reused-pid": _claim_marker(host=host, pid=os.getppid(), started="1"),
            "garbage": "???",
            "old-format-other-host": "ci-runner-7|4242|0",
        }
        for key, raw in cases.items():
            c.db.set(claims_mod.PREFIX + key, raw, expire=600)
            assert c.claim(key), key  # taken over at once
        live = _claim_marker(host="ci-runner-7", pid=4242)  # fresh heartbeat: wait for it
        c.db.set(claims_mod.PREFIX + "live", live, expire=600)
        assert not c.claim("live")


def test_a_claim_that_stops_beating_is_taken_over_quickly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another host's marker with a fresh-looking heartbeat (its clock runs ahead, or it was
    killed a moment ago): the waiter takes over once it saw no heartbeat for STALE_S."""
    monkeypatch.setattr(claims_mod, "STALE_S", 0.4)
    future = time.time() + 3600  # a clock far ahead: never stale by age
    with FakeLLMServer(lambda body: "fresh answer") as srv:
        cfg = config_for(srv, cache_dir=str(tmp_path / "cache"), llm={"transport": "openai_http"})
        client = LLMClient.from_config(cfg)
        from pytest_ragdive.llm.cache import cache_key

        key = cache_key(
            model=cfg.role_model("simulator") or "",
            messages=msgs("hello"),
            temperature=0.7,
            seed=0,
            prompt_id=None,
            prompt_version=None,
        )
        assert client.cache is not None
        client.cache.db.set(
            claims_mod.PREFIX + key, _claim_marker(host="ci-runner-7", pid=4242, heartbeat=future), expire=600
        )

        async def go() -> str:
            try:
                return await asyncio.wait_for(client.complete_text("simulator", msgs("hello")), timeout=20)
            finally:
                await client.aclose()

        t0 = time.perf_counter()
        assert asyncio.run(go()) == "fresh answer"
        assert time.perf_counter() - t0 < 5  # it used to wait out the marker's ~445 s
        assert srv.request_count == 1


def test_a_live_holder_keeps_its_claim_with_heartbeats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(claims_mod, "STALE_S", 0.3)
    with LLMCache(tmp_path / "c") as holder, LLMCache(tmp_path / "c") as waiter:
        assert holder.claim("k")
        watch = claims_mod.Watch()
        t_end = time.monotonic() + 1.0
        while time.monotonic() < t_end:
            assert holder.heartbeat("k")
            assert not waiter.claim("k", watch=watch)  # beating: never stale
            time.sleep(0.05)
        time.sleep(0.1)  # stops beating (killed): stale by its age
        time.sleep(0.3)
        assert waiter.claim("k", watch=watch)
        assert not holder.heartbeat("k")  # the holder learns it lost the claim


# -- a corrupt cache.db ---------------------------------------------------------------------------


def _corrupt(cache_dir: Path) -> Path:
    cache_dir.mkdir(parents=True)
    db = cache_dir / "cache.db"
    db.write_bytes(b"this is not a SQLite database, it was truncated or overwritten\n" * 64)
    with pytest.raises(sqlite3.DatabaseError):
        sqlite3.connect(db).execute("select * from sqlite_master").fetchall()
    return db


def test_a_corrupt_cache_is_said_once_and_bypassed(tmp_path: Path) -> None:
    db = _corrupt(tmp_path / "cache")
    with FakeLLMServer() as srv:
        cfg = config_for(srv, cache_dir=str(tmp_path / "cache"), llm={"transport": "openai_http"})
        client = LLMClient.from_config(cfg)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            out = asyncio.run(_many(client, 6))
        assert all(isinstance(v.value, Verdict) for v in out), out
        assert srv.request_count == 6
    ours = [w for w in seen if issubclass(w.category, RagdiveCacheWarning)]
    assert len(ours) == 1, [str(w.message) for w in ours]
    text = str(ours[0].message)
    assert "unusable" in text and str(db) in text and "without a cache" in text
    st = client.stats.cache
    assert st.unusable == 1 and st.stores == 0 and st.errors == 1
    assert "UNUSABLE" in st.summary()


def test_a_corrupt_cache_ends_a_replay_only_run(tmp_path: Path) -> None:
    db = _corrupt(tmp_path / "cache")
    cfg = RagdiveConfig.model_validate(
        {"model": "openai/fake-model", "cache_dir": str(tmp_path / "cache"), "record_mode": "none"}
    )
    client = LLMClient.from_config(cfg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(CacheUnusable, match="record mode 'none'") as e:
            asyncio.run(client.complete_text("judge", msgs("q")))
    assert str(db) in str(e.value)


# -- shutdown ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("behaviour", ["hang", "fail"])
def test_aclose_is_bounded_and_always_closes_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, behaviour: str
) -> None:
    """A transport whose close hangs or fails at shutdown (after an interrupt) neither
    hangs nor breaks it, and the cache is closed anyway."""
    import pytest_ragdive.llm.client as client_mod

    monkeypatch.setattr(client_mod, "CLOSE_TIMEOUT_S", 0.2)

    async def bad_close() -> None:
        if behaviour == "hang":
            await asyncio.sleep(3600)
        raise RuntimeError("close failed")

    with FakeLLMServer() as srv:
        cfg = config_for(srv, cache_dir=str(tmp_path / "c"), llm={"transport": "openai_http"})
        client = LLMClient.from_config(cfg)

        async def go() -> float:
            await client.complete_text("judge", msgs("q"))
            assert client._transport is not None
            real_close = client._transport.aclose
            monkeypatch.setattr(client._transport, "aclose", bad_close)
            t0 = time.perf_counter()
            await client.aclose()
            took = time.perf_counter() - t0
            await real_close()  # the test's own clean-up: no unclosed HTTP session left behind
            return took

        took = asyncio.run(go())
    assert took < 2
    assert client.cache is not None and client.cache._db is None  # closed
