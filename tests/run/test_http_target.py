"""The HTTP target adapter against a real HTTP service on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from conftest import CONVS, PYPROJECT, SINGLE

from pytest_ragdive.core.config_models import HttpTargetConfig
from pytest_ragdive.core.errors import ConfigError, TargetError
from pytest_ragdive.run.http_target import HttpTarget, public_url
from pytest_ragdive.run.http_target import http_target as http

Reply = tuple[int, dict[str, str], bytes]


class ChatService:
    """A tiny chatbot service: ``reply(body, n) -> (status, headers, bytes)``."""

    def __init__(self, reply: Callable[[dict[str, Any], int], Reply]) -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.release = threading.Event()
        service = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server API
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                n = len(service.requests)
                service.requests.append(body)
                service.headers.append(dict(self.headers))
                status, headers, data = service.reply(body, n)
                if status == 0:  # hang until the test ends
                    service.release.wait(60)
                    status, headers, data = 200, {}, b'{"answer": "late"}'
                self.send_response(status)
                for k, v in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/chat"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> ChatService:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)


def ok(data: Any) -> Reply:
    return 200, {}, json.dumps(data).encode()


@pytest.fixture
def service() -> Iterator[Callable[[Callable[[dict[str, Any], int], Reply]], ChatService]]:
    started: list[ChatService] = []

    def start(reply: Callable[[dict[str, Any], int], Reply]) -> ChatService:
        s = ChatService(reply).__enter__()
        started.append(s)
        return s

    yield start
    for s in started:
        s.__exit__()


HISTORY = [
    {"role": "user", "content": "Tell me about snow."},
    {"role": "assistant", "content": "Snow is white."},
    {"role": "user", "content": "Is it cold?"},
]


def test_default_request_is_the_openai_history_and_the_reply_maps_by_name(service: Any) -> None:
    svc = service(lambda body, n: ok({
        "answer": "Yes, it is cold.",
        "contexts": [{"id": "snow#0", "doc_id": "snow", "text": "Snow is white and cold.", "score": 0.9}, "plain text chunk"],
        "citations": ["snow"],
    }))
    resp = http(svc.url)(HISTORY)
    assert svc.requests == [{"messages": HISTORY}]
    assert svc.headers[0]["Content-Type"] == "application/json"
    assert resp.answer == "Yes, it is cold."
    assert [(c.id, c.doc_id, c.text, c.score) for c in resp.contexts] == [
        ("snow#0", "snow", "Snow is white and cold.", 0.9), ("1", None, "plain text chunk", None)
    ]
    assert resp.citations == ["snow"]


def test_a_request_template_and_reply_paths(service: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAT_TOKEN", "tok-123456")
    svc = service(lambda body, n: ok({
        "choices": [{"message": {"content": "Cold."}}],
        "data": {"docs": [{"page_content": "Snow is cold.", "metadata": {"source": "snow"}}]},
    }))
    target = http(
        svc.url,
        headers={"Authorization": "Bearer ${CHAT_TOKEN}"},
        request={"model": "bot-1", "input": "$question", "history": "$history", "options": {"k": 3}},
        answer="choices.0.message.content",
        contexts="data.docs",
        context_fields={"text": "page_content", "doc_id": "metadata.source"},
    )
    resp = target(HISTORY)
    assert svc.requests == [{"model": "bot-1", "input": "Is it cold?", "history": HISTORY[:-1], "options": {"k": 3}}]
    assert svc.headers[0]["Authorization"] == "Bearer tok-123456"
    assert resp.answer == "Cold." and resp.citations == []  # no citations in this reply: none, not an error
    assert [(c.id, c.doc_id, c.text) for c in resp.contexts] == [("snow", "snow", "Snow is cold.")]
    assert "tok-123456" not in repr(target) and "tok-123456" not in target.settings.model_dump_json()


def test_429_and_5xx_are_retried_a_bounded_number_of_times(service: Any) -> None:
    svc = service(lambda body, n: (429, {"Retry-After": "0"}, b"slow down") if n == 0
                  else (503, {}, b"busy") if n == 1 else ok({"answer": "finally"}))
    target = http(svc.url, retries=2)
    target._sleep = lambda s: None
    assert target(HISTORY).answer == "finally" and len(svc.requests) == 3

    down = service(lambda body, n: (502, {}, b"bad gateway"))
    target = http(down.url, retries=1)
    target._sleep = lambda s: None
    with pytest.raises(TargetError, match=r"still failing after 2 attempt\(s\): HTTP 502 .*bad gateway"):
        target(HISTORY)
    assert len(down.requests) == 2


def test_other_errors_fail_at_once_with_one_clear_line_and_no_credentials(service: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAT_TOKEN", "sk-secret-token-42")
    svc = service(lambda body, n: (404, {}, b'{"error": "no route", "echo": "Bearer sk-secret-token-42"}'))
    host = svc.url.split("//")[1]
    target = http(f"http://user:pw@{host}?api-key=KEY123", headers={"Authorization": "Bearer ${CHAT_TOKEN}"})
    with pytest.raises(TargetError) as e:
        target(HISTORY)
    msg = str(e.value)
    assert len(svc.requests) == 1 and "\n" not in msg
    assert msg.startswith(f"HTTP target http://{host} answered HTTP 404")
    assert "no route" in msg and "sk-secret-token-42" not in msg and "KEY123" not in msg and "pw" not in msg
    assert svc.headers[0]["Authorization"] == "Bearer sk-secret-token-42"  # the explicit header wins

    with pytest.raises(TargetError):
        http(f"http://user:pw@{host}")(HISTORY)
    assert svc.headers[1]["Authorization"] == "Basic dXNlcjpwdw=="  # user info becomes Basic auth


@pytest.mark.parametrize(
    ("reply", "settings", "expected"),
    [
        ((200, {"Content-Type": "text/html"}, b"<html>oops</html>"), {}, r"not JSON \(text/html\): <html>oops</html>"),
        (ok({"text": "hi"}), {}, r"no answer at 'answer' \(keys: text\)"),
        (ok({"answer": 3}), {}, r"answer at 'answer' is a int, expected a string"),
        (ok({"answer": "a", "contexts": "x"}), {}, r"contexts at 'contexts' is a str, expected a list"),
        (ok({"answer": "a"}), {"contexts": "hits"}, r"no contexts at 'hits'"),
        (ok({"answer": "a", "contexts": [{"body": "t"}]}), {}, r"context 0 has no text at 'text' \(keys: body\)"),
    ],
)
def test_unusable_replies_name_what_is_wrong(service: Any, reply: Reply, settings: dict[str, Any], expected: str) -> None:
    svc = service(lambda body, n: reply)
    with pytest.raises(TargetError, match=expected):
        http(svc.url, **settings)(HISTORY)


def test_nothing_listening_is_a_clear_error_after_the_retries() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    target = http(f"http://127.0.0.1:{port}/chat", retries=1)
    target._sleep = lambda s: None
    with pytest.raises(TargetError, match=r"still failing after 2 attempt\(s\): cannot connect"):
        target(HISTORY)


def test_bad_settings_are_one_line_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match=r"url: .*http:// or https://"):
        http("ftp://example.invalid/x")
    with pytest.raises(ConfigError, match=r"context_fields: unknown Context field\(s\) page"):
        http("http://127.0.0.1:9/x", context_fields={"page": "x"})
    monkeypatch.delenv("NOPE_TOKEN", raising=False)
    with pytest.raises(TargetError, match=r"header 'X-Key' needs the environment variable NOPE_TOKEN"):
        http("http://127.0.0.1:9/x", headers={"X-Key": "${NOPE_TOKEN}"})
    assert public_url("https://u:p@h.example:8443/v1/chat?key=1#f") == "https://h.example:8443/v1/chat"
    assert HttpTarget(HttpTargetConfig(url="http://h/x"), timeout_s=7).timeout_s == 7


# -- the config form, end to end through pytest -------------------------------

DOCS = {"sky": "The sky is blue on a clear day.", "grass": "Grass is green in spring.", "snow": "Snow is white and cold."}


def toy_reply(body: dict[str, Any], n: int) -> Reply:
    """The toy bot of conftest.py, as a service with its own reply shape."""
    users = [m["content"].lower() for m in body["messages"] if m["role"] == "user"]
    if "grass" in users[-1]:
        return 0, {}, b""  # hangs
    hits = [d for d in DOCS if d in users[-1]] or [d for d in DOCS if d in " ".join(users)]
    if not hits:
        return ok({"reply": "I don't know.", "sources": []})
    doc = hits[-1]
    return ok({"reply": DOCS[doc], "sources": [{"chunk": doc + "#0", "doc": doc, "body": DOCS[doc]}]})


def test_a_config_http_target_runs_the_suite_and_a_hanging_turn_times_out(pytester: pytest.Pytester, service: Any) -> None:
    svc = service(toy_reply)
    data = pytester.mkdir("data")
    (data / "single.jsonl").write_text("\n".join(json.dumps(r) for r in SINGLE) + "\n")
    (data / "convs.yaml").write_text(CONVS)
    extra = (
        "target_timeout_s = 3\n"
        f'target = {{ url = "{svc.url}", answer = "reply", contexts = "sources", '
        'context_fields = { id = "chunk", doc_id = "doc", text = "body" } }'
    )
    pytester.makefile(".toml", pyproject=PYPROJECT.format(extra=extra))
    t0 = time.perf_counter()
    res = pytester.runpytest_subprocess("--ragdive-suite=core", "-p", "no:cacheprovider", timeout=90)
    assert time.perf_counter() - t0 < 60
    res.assert_outcomes(passed=3, failed=2)  # q-grass and c-grass hang
    res.stdout.fnmatch_lines(["*TargetTimeout: the target did not answer within 3 s*"])
    out = json.loads((pytester.path / "report" / "results.json").read_text())
    snow = next(c for c in out["conversations"] if c["id"] == "q-snow")
    assert snow["turns"][0]["contexts"] == [{"id": "snow#0", "text": DOCS["snow"], "doc_id": "snow", "score": None}]
    assert snow["turns"][0]["scores"]["recall_at_k"] == 1.0
    assert svc.requests[0] == {"messages": [{"role": "user", "content": svc.requests[0]["messages"][0]["content"]}]}


def test_a_bad_http_target_table_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".toml", pyproject=PYPROJECT.format(extra='target = { uri = "http://127.0.0.1:9/x" }'))
    res = pytester.runpytest("--ragdive-suite=core")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*pyproject.toml: key 'target': HTTP target: url: Field required*"])
