"""The lean HTTP/1.1 client of the openai_http path (llm/http11.py) against raw replies from a
socket server on 127.0.0.1: lengths, chunks, compression, keep-alive, closes, redirects,
and the requests that still go through aiohttp (a proxy in the environment)."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_ragdive.core.errors import FatalTransportError, TransientTransportError
from pytest_ragdive.llm.http11 import HTTPError, Pool, lean_url
from pytest_ragdive.llm.keys import canonical_json
from pytest_ragdive.llm.transport import OpenAIHTTPTransport, Request, _EnvRoute

REPLY = {"choices": [{"message": {"content": "{\"score\": 1}"}, "finish_reason": "stop"}],
         "usage": {"prompt_tokens": 3, "completion_tokens": 2}, "model": "m"}


def _head(status: int, headers: dict[str, str]) -> bytes:
    return (f"HTTP/1.1 {status} X\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode()


def plain(body: bytes, status: int = 200, **headers: str) -> bytes:
    return _head(status, {"Content-Length": str(len(body)), **headers}) + body


def chunked(body: bytes) -> bytes:
    mid = len(body) // 2
    chunks = b"".join(f"{len(p):x};ext=1\r\n".encode() + p + b"\r\n" for p in (body[:mid], body[mid:]))
    return _head(200, {"Transfer-Encoding": "chunked"}) + chunks + b"0\r\nX-Trailer: 1\r\n\r\n"


Script = Callable[[int, bytes], bytes | None]  # (request number, request) -> raw reply, None: close


async def _serve(script: Script, n: int, stats: dict[str, int]) -> tuple[asyncio.AbstractServer, str]:
    count = [0]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        stats["connections"] = stats.get("connections", 0) + 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                body = await reader.readexactly(length)
                i = count[0]
                count[0] += 1
                out = script(i, head + body)
                if out is None:
                    break
                # in two writes: the reader must put a reply together from pieces
                writer.write(out[:7])
                await writer.drain()
                await asyncio.sleep(0.001)
                writer.write(out[7:])
                await writer.drain()
                if b"Connection: close" in out:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}/v1/chat/completions?api-version=1"


def _run(script: Script, n: int, fn: Callable[[Pool], Any]) -> tuple[Any, dict[str, int]]:
    stats: dict[str, int] = {}

    async def main() -> Any:
        server, url = await _serve(script, n, stats)
        pool = Pool(url)
        try:
            return await fn(pool)
        finally:
            await pool.aclose()
            server.close()

    return asyncio.run(main()), stats


def test_replies_by_length_by_chunks_and_compressed_on_one_kept_alive_connection() -> None:
    body = json.dumps(REPLY).encode()
    replies = [plain(body), chunked(body), plain(gzip.compress(body), **{"Content-Encoding": "gzip"})]
    seen: list[bytes] = []

    def script(i: int, req: bytes) -> bytes:
        seen.append(req)
        return replies[i]

    async def three(pool: Pool) -> list[bytes]:
        return [(await pool.post(b'{"a": 1}', "sk-test")).body for _ in range(3)]

    got, stats = _run(script, 3, three)
    assert got == [body] * 3
    assert stats["connections"] == 1  # kept alive
    head = seen[0].decode()
    assert head.startswith("POST /v1/chat/completions?api-version=1 HTTP/1.1\r\n")
    assert "Authorization: Bearer sk-test\r\n" in head and "Content-Length: 8\r\n" in head
    assert head.endswith('\r\n\r\n{"a": 1}')


def test_connection_close_and_a_dropped_connection() -> None:
    body = json.dumps(REPLY).encode()

    def script(i: int, req: bytes) -> bytes | None:
        if i == 0:
            return plain(body, Connection="close")
        return None  # closed without a reply

    async def two(pool: Pool) -> tuple[bytes, str]:
        first = (await pool.post(b"{}", None)).body
        with pytest.raises(HTTPError) as e:
            await pool.post(b"{}", None)
        return first, str(e.value)

    (first, err), stats = _run(script, 2, two)
    assert first == body and "closed the connection" in err
    assert stats["connections"] == 2  # the first was not reused after Connection: close


def test_a_truncated_reply_is_an_error_not_a_short_body() -> None:
    def script(i: int, req: bytes) -> bytes:
        return _head(200, {"Content-Length": "100", "Connection": "close"}) + b"{}"

    async def one(pool: Pool) -> str:
        with pytest.raises(HTTPError) as e:
            await pool.post(b"{}", None)
        return str(e.value)

    err, _ = _run(script, 1, one)
    assert "before its Content-Length" in err


def test_a_cancelled_request_closes_its_connection() -> None:
    def script(i: int, req: bytes) -> bytes:
        return plain(json.dumps(REPLY).encode())

    async def cancelled(pool: Pool) -> int:
        await pool.post(b"{}", None)
        assert len(pool._idle) == 1
        conn = pool._idle[0]
        task = asyncio.create_task(pool.post(b"{}", None))
        await asyncio.sleep(0)  # sent on the kept-alive connection, waiting for the reply
        assert not pool._idle
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return len(pool._idle) + (0 if conn.closed else 1)

    idle, _ = _run(script, 1, cancelled)
    assert idle == 0  # neither kept nor open: its reply would answer the next request


def _transport_send(script: Script) -> Any:
    stats: dict[str, int] = {}

    async def main() -> Any:
        server, url = await _serve(script, 1, stats)
        tr = OpenAIHTTPTransport(url.rsplit("/chat/completions", 1)[0], 4)
        try:
            return await tr.send("openai/m", Request([{"role": "user", "content": "hi"}], {"temperature": 0}, None),
                                 "sk-key-123456", 5.0)
        finally:
            await tr.aclose()
            server.close()

    return asyncio.run(main())


def test_the_transport_reads_a_reply_and_maps_errors() -> None:
    body = json.dumps(REPLY).encode()
    resp = _transport_send(lambda i, req: plain(body))
    assert resp.content == '{"score": 1}' and resp.prompt_tokens == 3 and resp.model == "m"
    with pytest.raises(TransientTransportError, match="HTTP 429") as e:
        _transport_send(lambda i, req: plain(b'{"error": {"message": "slow down"}}', 429, **{"Retry-After": "2"}))
    assert e.value.retry_after == 2.0
    with pytest.raises(FatalTransportError, match="HTTP 401: bad key"):
        _transport_send(lambda i, req: plain(b'{"error": {"message": "bad key"}}', 401))
    with pytest.raises(TransientTransportError, match="connection error"):
        _transport_send(lambda i, req: None)


def test_a_redirect_is_not_followed_and_its_target_is_redacted() -> None:
    def script(i: int, req: bytes) -> bytes:
        return plain(b"", 307, Location="http://elsewhere.example/v1/chat/completions?key=abcdef123")

    with pytest.raises(FatalTransportError) as e:
        _transport_send(script)
    msg = str(e.value)
    assert "HTTP 307" in msg and "elsewhere.example" in msg and "not followed" in msg and "abcdef123" not in msg


def test_a_proxy_in_the_environment_sends_through_aiohttp(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(var, raising=False)
    tr = OpenAIHTTPTransport("http://llm.example:8000/v1", 4)
    assert tr._pool("sk-x") is not None
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    assert OpenAIHTTPTransport("http://llm.example:8000/v1", 4)._pool("sk-x") is None
    assert not lean_url("http://user:pw@llm.example/v1") and not lean_url("ftp://llm.example/v1")
    assert lean_url("https://llm.example/v1/chat/completions")
    with pytest.raises(ValueError, match="line break"):
        Pool("http://llm.example/v1/chat/completions").request_bytes(b"{}", "sk-x\r\nX-Evil: 1")


def test_a_clean_environment_is_read_without_aiohttp_and_a_netrc_file_still_counts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(HOME=str(tmp_path), PYTHONPATH=os.pathsep.join(sys.path))
    env.pop("NETRC", None)
    probe = ("import sys; from pytest_ragdive.llm.transport import _EnvRoute; "
             "r = _EnvRoute.of('http://llm.example:8000/v1/chat/completions'); "
             "print(r.proxy is None and r.netrc_auth is None and not r.trust_env, 'aiohttp' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]  # nothing to route by, and aiohttp never imported
    # a netrc file: aiohttp's own helpers decide, as before (its entry for the host is used)
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(var, raising=False)
    netrc = tmp_path / "netrc"
    netrc.write_text("machine llm.example login user password pw\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    route = _EnvRoute.of("http://llm.example:8000/v1/chat/completions")
    assert route.netrc_auth is not None and route.netrc_auth.login == "user"
    assert OpenAIHTTPTransport("http://llm.example:8000/v1", 4)._pool(None) is None  # sent through aiohttp


def test_the_body_reuses_the_schemas_format_text_and_says_the_same() -> None:
    from pydantic import BaseModel

    from pytest_ragdive.llm.structured import build_request

    class Verdict(BaseModel):
        ok: bool
        why: str = "é"

    js = Verdict.model_json_schema()
    for mode, seed, cap in (("json_schema", 7, 64), ("json_schema", None, None), ("json_object", None, None), (None, 1, None)):
        msgs = [{"role": "user", "content": "q ü \"quoted\"\n"}]
        for text in (None, canonical_json(msgs)):  # the messages' text the cache key made, reused
            req = build_request(msgs, mode=mode, temperature=0.2, seed=seed, schema=Verdict, json_schema=js,
                                max_tokens=cap, messages_text=text)
            assert (req.format_text is not None) == (mode == "json_schema")
            assert (req.messages_text is not None) == (text is not None and mode != "json_object")
            want = {"model": "m", "messages": req.messages, **req.params}
            assert json.loads(req.body("m")) == want
    again = build_request([], mode="json_schema", temperature=0, seed=None, schema=Verdict, json_schema=js)
    assert again.format_text is req.format_text or again.format_text == json.dumps(again.params["response_format"])


def test_a_url_that_needs_aiohttp_survives_a_new_loop_and_closing() -> None:
    """A URL the lean path cannot take (credentials in it) goes through aiohttp; moving to a new
    event loop and closing then work (its "no pool" mark used to be taken for a pool)."""
    tr = OpenAIHTTPTransport("http://user:pw@llm.example:8000/v1", 4)
    assert tr._pool("sk-x") is None and tr._pool("sk-x") is None
    tr.reset_loop()
    asyncio.run(tr.aclose())
