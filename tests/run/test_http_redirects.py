"""Issue 22 (2): an HTTP target follows no redirect by default (a clear error naming
the location); ``follow_redirects = "same-origin"`` follows 307/308 to the same
scheme, host and port with the method and body kept, and credentials never
reach another origin. (Before: a 302 to another host was followed as a bodyless
GET carrying the Bearer token, and that host's reply was scored as the answer.)"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from pytest_ragdive.core.errors import TargetError
from pytest_ragdive.run.http_target import http_target as http

TOKEN = "sk-redirect-secret-5150"
HISTORY = [{"role": "user", "content": "Is snow cold?"}]
Route = Callable[[str, str], tuple[int, dict[str, str], bytes]]


class Service:
    """Answers GET and POST by ``route(method, path) -> (status, headers, body)``; records every request."""

    def __init__(self, route: Route) -> None:
        self.seen: list[tuple[str, str, dict[str, str], bytes]] = []
        service = self

        class H(BaseHTTPRequestHandler):
            def _any(self, method: str) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                service.seen.append((method, self.path, dict(self.headers), body))
                status, headers, data = route(method, self.path)
                self.send_response(status)
                for k, v in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                self._any("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._any("POST")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def services() -> Iterator[Callable[[Route], Service]]:
    made: list[Service] = []

    def start(route: Route) -> Service:
        made.append(Service(route))
        return made[-1]

    yield start
    for s in made:
        s.close()


def answer(text: str) -> tuple[int, dict[str, str], bytes]:
    return 200, {}, json.dumps({"answer": text}).encode()


def test_a_redirect_to_another_host_is_not_followed_and_gets_no_credentials(services: Any) -> None:
    other = services(lambda method, path: answer("the other host's page"))
    bot = services(lambda method, path: (302, {"Location": f"{other.base}/landing?sig=abc"}, b""))
    target = http(f"{bot.base}/chat", headers={"Authorization": f"Bearer {TOKEN}"})
    with pytest.raises(TargetError) as e:
        target(HISTORY)
    msg = str(e.value)
    assert "HTTP 302" in msg and f"redirect to {other.base}/landing" in msg and "follow_redirects" in msg
    assert "sig=abc" not in msg and "\n" not in msg
    assert other.seen == []  # nothing reached the other host: no token, no answer scored


@pytest.mark.parametrize("code", [307, 308])
def test_same_origin_follows_307_and_308_keeping_method_and_body(services: Any, code: int) -> None:
    def route(method: str, path: str) -> tuple[int, dict[str, str], bytes]:
        if path == "/chat":
            return code, {"Location": "/v2/chat"}, b""
        return answer(f"{method} at {path}")

    bot = services(route)
    target = http(f"{bot.base}/chat", headers={"Authorization": f"Bearer {TOKEN}"}, follow_redirects="same-origin")
    assert target(HISTORY).answer == "POST at /v2/chat"
    (m1, p1, _, b1), (m2, p2, h2, b2) = bot.seen
    assert (m1, p1, m2, p2) == ("POST", "/chat", "POST", "/v2/chat")
    assert b2 == b1 and json.loads(b2) == {"messages": HISTORY}  # the question travelled with it
    assert h2["Authorization"] == f"Bearer {TOKEN}"  # the same origin: its credentials


def test_same_origin_never_sends_credentials_to_another_origin(services: Any) -> None:
    other = services(lambda method, path: answer("elsewhere"))
    bot = services(lambda method, path: (307, {"Location": f"{other.base}/chat"}, b""))
    target = http(f"{bot.base}/chat", headers={"Authorization": f"Bearer {TOKEN}"}, follow_redirects="same-origin")
    with pytest.raises(TargetError, match=r"redirect to another origin \(http://127\.0\.0\.1:\d+/chat\): not followed"):
        target(HISTORY)
    assert other.seen == []


def test_same_origin_does_not_turn_the_post_into_a_get(services: Any) -> None:
    bot = services(lambda method, path: (302, {"Location": "/elsewhere"}, b"") if path == "/chat" else answer("page"))
    target = http(f"{bot.base}/chat", follow_redirects="same-origin")
    with pytest.raises(TargetError, match=r"HTTP 302, a redirect to .*/elsewhere: following it would turn the POST into a GET"):
        target(HISTORY)
    assert [m for m, *_ in bot.seen] == ["POST"]


def test_a_redirect_loop_ends(services: Any) -> None:
    bot = services(lambda method, path: (307, {"Location": "/chat"}, b""))
    with pytest.raises(TargetError, match="more than 5 redirects"):
        http(f"{bot.base}/chat", follow_redirects="same-origin")(HISTORY)
