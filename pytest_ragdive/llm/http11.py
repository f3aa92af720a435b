"""A minimal HTTP/1.1 client for the lean ``openai_http`` path: one POST of a JSON body to
one URL, on kept-alive connections of the running event loop (asyncio protocols, no
streams, no per-request objects beyond the reply).

Why: aiohttp's request machinery (its request and response objects, the connector, the
payload writers, header multidicts) cost about as much CPU per judge call as everything
else the client does; at 32 and 64 calls in flight that CPU is what kept the event loop
from keeping the calls in flight.

What it does: ``http`` and ``https`` (the default TLS context: certificates and host
names verified), ``Content-Length`` and chunked replies, ``gzip``/``deflate`` bodies
should a server compress unasked, connections kept alive unless the server says
``Connection: close``, an idle connection the server closed is never reused. What it
does not do, by design: redirects (a 3xx is the caller's error to report: the POST and
its key are never sent elsewhere), proxies, ``~/.netrc`` and credentials in the URL:
:class:`~.transport.OpenAIHTTPTransport` sends those requests through aiohttp. Timeouts
are the caller's (``asyncio.timeout`` around the call); a cancelled request closes its
connection. Nothing here imports more than the standard library.
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.parse
import zlib

__all__ = ["HTTPError", "Pool", "Reply", "lean_url"]

#: the largest reply accepted (a judge reply is a few kB)
MAX_BODY = 32 * 1024 * 1024
MAX_HEAD = 64 * 1024
#: idle connections kept per pool beyond what is in flight
MAX_IDLE = 256


class HTTPError(ConnectionError):
    """The connection failed or the reply could not be read."""


class Reply:
    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body


def lean_url(url: str) -> bool:
    """Whether :class:`Pool` can reach ``url``: http or https, a host, no credentials."""
    try:
        parts = urllib.parse.urlsplit(url)
        return parts.scheme in ("http", "https") and bool(parts.hostname) and "@" not in parts.netloc
    except ValueError:
        return False


class _Conn(asyncio.Protocol):
    """One connection; at most one request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiter: asyncio.Future[Reply] | None = None
        self.closed = False
        self._head: tuple[int, dict[str, str], int] | None = None  # status, headers, end of the head
        self._eof = False

    # -- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if self.waiter is not None and not self.waiter.done():
            self._parse()

    def eof_received(self) -> bool:
        self._eof = True
        if self.waiter is not None and not self.waiter.done():
            self._parse()
        return False  # close

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._eof = True
        w = self.waiter
        if w is not None and not w.done():
            self._parse()
            if not w.done():
                w.set_exception(HTTPError(f"the server closed the connection{f' ({exc})' if exc else ''}"))

    # -- one exchange
    def send(self, data: bytes) -> asyncio.Future[Reply]:
        assert self.transport is not None
        self.buf.clear()
        self._head = None
        self.waiter = fut = asyncio.get_running_loop().create_future()
        self.transport.write(data)
        return fut

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def _parse(self) -> None:
        try:
            reply = self._reply()
        except HTTPError as e:
            assert self.waiter is not None
            self.waiter.set_exception(e)
            self.abort()
            return
        if reply is not None:
            assert self.waiter is not None
            self.waiter.set_result(reply)

    def _reply(self) -> Reply | None:
        buf = self.buf
        while self._head is None:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > MAX_HEAD:
                    raise HTTPError("the reply's head is too long")
                if self._eof:
                    raise HTTPError("the server closed the connection before replying" if not buf else
                                    "the reply ended inside its head")
                return None
            lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
            try:
                version, code = lines[0].split(" ", 2)[:2]
                status = int(code)
            except ValueError:
                raise HTTPError(f"not an HTTP reply: {lines[0][:80]!r}") from None
            if not version.startswith("HTTP/1."):
                raise HTTPError(f"not an HTTP/1 reply: {lines[0][:80]!r}")
            if 100 <= status < 200:  # an interim reply (100 Continue): the real one follows
                del buf[: end + 4]
                continue
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, sep, value = line.partition(":")
                if sep:
                    name = name.strip().lower()
                    value = value.strip()
                    headers[name] = f"{headers[name]}, {value}" if name in headers else value
            if version == "HTTP/1.0" and "keep-alive" not in headers.get("connection", "").lower():
                headers["connection"] = "close"
            self._head = (status, headers, end + 4)
        status, headers, start = self._head
        te = headers.get("transfer-encoding", "").lower()
        if "chunked" in te:
            body = self._chunked(start)
            if body is None:
                return None
        elif "content-length" in headers:
            try:
                n = int(headers["content-length"])
            except ValueError:
                raise HTTPError("a bad Content-Length") from None
            if n > MAX_BODY:
                raise HTTPError(f"a reply of {n} bytes, more than the {MAX_BODY} accepted")
            if len(buf) - start < n:
                if self._eof:
                    raise HTTPError("the reply ended before its Content-Length")
                return None
            body = bytes(buf[start : start + n])
        elif status in (204, 304):
            body = b""
        else:  # no length: the body ends with the connection
            if len(buf) - start > MAX_BODY:
                raise HTTPError(f"a reply of more than the {MAX_BODY} bytes accepted")
            if not self._eof:
                return None
            body = bytes(buf[start:])
            headers["connection"] = "close"
        enc = headers.get("content-encoding", "").lower()
        if enc in ("gzip", "deflate", "x-gzip"):
            try:
                d = zlib.decompressobj(47)  # gzip or zlib, told apart by the header
                body = d.decompress(body, MAX_BODY)
                if d.unconsumed_tail:
                    raise HTTPError(f"a reply of more than the {MAX_BODY} bytes accepted")
            except zlib.error as e:
                raise HTTPError(f"a {enc} body that does not decompress ({e})") from None
        return Reply(status, headers, body)

    def _chunked(self, start: int) -> bytes | None:
        buf, pos, out = self.buf, start, bytearray()
        while True:
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                break
            try:
                size = int(bytes(buf[pos:eol]).split(b";", 1)[0].strip() or b"x", 16)
            except ValueError:
                raise HTTPError("a bad chunk size") from None
            if size == 0:
                if buf.find(b"\r\n\r\n", eol) < 0:  # the trailers end with an empty line
                    break
                return bytes(out)
            if len(out) + size > MAX_BODY:
                raise HTTPError(f"a reply of more than the {MAX_BODY} bytes accepted")
            if len(buf) < eol + 2 + size + 2:
                break
            out += buf[eol + 2 : eol + 2 + size]
            pos = eol + 2 + size + 2
        if self._eof:
            raise HTTPError("the reply ended inside its chunks")
        return None


class Pool:
    """Kept-alive connections to the host of one URL, on one event loop."""

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.https = parts.scheme == "https"
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if self.https else 80)
        netloc = parts.netloc
        self.target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._head = (
            f"POST {self.target} HTTP/1.1\r\nHost: {netloc}\r\nContent-Type: application/json\r\n"
            "Accept: application/json\r\nUser-Agent: pytest-ragdive\r\n"
        )
        self._ssl: ssl.SSLContext | None = None
        self._idle: list[_Conn] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    def request_bytes(self, body: bytes, api_key: str | None) -> bytes:
        auth = f"Authorization: Bearer {api_key}\r\n" if api_key else ""
        if api_key and ("\r" in api_key or "\n" in api_key):
            raise ValueError("the API key holds a line break, which would end its header")
        try:
            return f"{self._head}{auth}Content-Length: {len(body)}\r\n\r\n".encode("latin-1") + body
        except UnicodeEncodeError:
            raise ValueError("the API key holds characters an HTTP header cannot carry") from None

    async def _connect(self) -> _Conn:
        loop = asyncio.get_running_loop()
        if self.https and self._ssl is None:
            self._ssl = ssl.create_default_context()
        _, conn = await loop.create_connection(
            _Conn, self.host, self.port, ssl=self._ssl if self.https else None,
            server_hostname=self.host if self.https else None,
        )
        return conn

    def _take(self) -> _Conn | None:
        idle = self._idle
        while idle:
            conn = idle.pop()
            if not conn.closed and not conn._eof and conn.transport is not None and not conn.transport.is_closing():
                return conn
            conn.close()
        return None

    async def post(self, body: bytes, api_key: str | None) -> Reply:
        """Send one POST and read its reply; :class:`HTTPError` (or an ``OSError``) when the
        connection fails. Cancelled, it closes the connection it used."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self.reset()
            self._loop = loop
        data = self.request_bytes(body, api_key)
        conn = self._take()
        if conn is None:
            conn = await self._connect()
        try:
            reply = await conn.send(data)
        except BaseException:
            conn.abort()
            raise
        conn.waiter = None
        if reply.headers.get("connection", "").lower() == "close" or conn._eof or len(self._idle) >= MAX_IDLE:
            conn.close()
        else:
            self._idle.append(conn)
        return reply

    def reset(self) -> None:
        """Drop every idle connection (their loop is gone, or the pool closes)."""
        idle, self._idle = self._idle, []
        for conn in idle:
            try:
                conn.abort()
            except Exception:  # noqa: BLE001 - a loop that is gone cannot close it
                pass

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        await asyncio.sleep(0)  # the transports close on the next turn
