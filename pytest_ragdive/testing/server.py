"""Offline test harness: a fake OpenAI-compatible chat completions server.

``FakeLLMServer`` is a real HTTP server (``http.server.ThreadingHTTPServer`` in
a daemon thread) on ``127.0.0.1``. It answers ``POST /v1/chat/completions``
(and ``/chat/completions``) like the OpenAI API does, non-streaming, so the
ragdive LLM client reaches it exactly as it would reach vLLM, Ollama or
llama.cpp: model ``openai/fake-model`` with ``api_base=server.url``.

The reply is scripted by ``handler(body) -> str | dict`` (a dict is sent as
its JSON text). Latency and faults are configurable:

* ``"429"``: status 429 with a ``Retry-After`` header (``retry_after_s``)
* ``"500"``: status 500 with an OpenAI-style error body
* ``"timeout"``: the request hangs for ``hang_s`` seconds (past the client's
  timeout), then gets a normal reply
* ``"malformed"``: a 200 reply whose content is not JSON
* ``"schema"``: a 200 reply whose content is JSON with the wrong fields

Not in the default set: ``"disconnect"`` (the connection is closed without a
reply), ``"bad_body"`` (a 200 whose body is not JSON), ``"400"`` and ``"401"``
(client errors that must not be retried).

It also speaks OpenAI's files and batches endpoints (upload a JSONL file,
create a batch, poll it, download the output file), answering each batch line
with the same handler; ``batch_outcome`` (``completed``, ``failed``,
``expired``, ``stuck``) and ``batch_delay_s`` script how a batch ends (see
:mod:`pytest_ragdive.testing.batch`; ``server.batch`` holds the state).

Random faults hit a ``fault_rate`` share of requests (seeded RNG); a scripted
hook ``fault_for(body, n) -> str | None`` (``n`` = 0-based request number)
decides per request and wins over the random draw.

Users enable the fixtures (:mod:`.fixtures`) with ``pytest_plugins = ["pytest_ragdive.testing"]``::

    def test_my_setup(fake_llm_server):
        fake_llm_server.handler = lambda body: {"verdict": "yes"}
        cfg = config_for(fake_llm_server, cache_dir=str(tmp_path))
"""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from .replies import default_handler

if TYPE_CHECKING:
    from .batch import BatchOutcome

__all__ = ["ALL_FAULTS", "DEFAULT_FAULTS", "FAKE_KEY_ENV", "FAKE_KEY_VALUE", "FAKE_MODEL", "FakeLLMServer", "Handler"]

Handler = Callable[[dict[str, Any]], "str | dict[str, Any]"]
FaultHook = Callable[[dict[str, Any], int], "str | None"]

DEFAULT_FAULTS: tuple[str, ...] = ("429", "500", "timeout", "malformed", "schema")
ALL_FAULTS: frozenset[str] = frozenset(DEFAULT_FAULTS) | {"disconnect", "bad_body", "400", "401"}
FAKE_MODEL = "openai/fake-model"
FAKE_KEY_ENV = "RAGDIVE_FAKE_LLM_KEY"
FAKE_KEY_VALUE = "sk-ragdive-fake-key"

MALFORMED_CONTENT = 'Sure! Here is the JSON you asked for: {"answer": '
SCHEMA_FAULT_CONTENT = {"ragdive_fake_wrong_field": "this object breaks the schema"}


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


# --------------------------------------------------------------------------
# the server


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256
    owner: FakeLLMServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client that gave up (timeout) makes the late reply fail: not news
        return


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # no 40 ms Nagle/delayed-ACK stalls on loopback
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence access log
        return

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode("utf-8"), headers)

    def _send_raw(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        # status line, headers and body in one write: no Nagle/delayed-ACK stalls
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = ""
        lines = [
            f"{self.protocol_version} {status} {phrase}",
            f"Server: {self.version_string()}",
            f"Date: {self.date_time_string()}",
            "Content-Type: application/json",
            f"Content-Length: {len(data)}",
            *(f"{k}: {v}" for k, v in (headers or {}).items()),
        ]
        self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + data)

    def _route(self) -> list[str]:
        """The path's parts after an optional ``v1``: ``/v1/batches/b1`` -> ``["batches", "b1"]``."""
        parts = [p for p in self.path.split("?")[0].split("/") if p]
        return parts[1:] if parts[:1] == ["v1"] else parts

    def _not_found(self) -> None:
        self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_GET(self) -> None:  # noqa: N802
        owner = self.server.owner
        route = self._route()
        if route == ["models"]:
            self._send_json(200, {"object": "list", "data": [{"id": owner.model, "object": "model"}]})
        elif route[:1] in (["files"], ["batches"]):
            if route[0] == "batches" and len(route) == 2:
                owner._polled()
            self._send_batch(owner.batch.get(route, owner._answer_line))
        else:
            self._not_found()

    def do_DELETE(self) -> None:  # noqa: N802
        self._send_batch(self.server.owner.batch.delete(self._route()))

    def _send_batch(self, got: tuple[int, Any] | None) -> None:
        """What a files or batches route of :class:`~pytest_ragdive.testing_batch.BatchStore` answered."""
        if got is None:
            self._not_found()
        elif isinstance(got[1], bytes):
            self._send_raw(got[0], got[1])
        else:
            self._send_json(got[0], got[1])

    def do_POST(self) -> None:  # noqa: N802
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        route = self._route()
        if route[:1] in (["files"], ["batches"]):
            self._send_batch(owner.batch.post(route, self.headers.get("Content-Type", ""), raw))
            return
        if route != ["chat", "completions"]:
            self._not_found()
            return
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("body is not a JSON object")
        except ValueError as e:
            self._send_json(400, {"error": {"message": f"bad request body: {e}", "type": "invalid_request_error"}})
            return
        if body.get("stream"):
            self._send_json(400, {"error": {"message": "streaming is not supported", "type": "invalid_request_error"}})
            return
        owner._serve(self, body, {k.lower(): v for k, v in self.headers.items()})


class FakeLLMServer:
    """A scripted OpenAI-compatible chat completions server on 127.0.0.1.

    Attributes may be changed while it runs (``handler``, ``latency_s``,
    ``fault_rate``, ``faults``, ``fault_for``, ``hang_s``, ``retry_after_s``).
    """

    def __init__(
        self,
        handler: Handler | None = None,
        *,
        latency_s: float = 0.0,
        fault_rate: float = 0.0,
        faults: Iterable[str] = DEFAULT_FAULTS,
        seed: int = 0,
        fault_for: FaultHook | None = None,
        hang_s: float = 5.0,
        retry_after_s: float = 0.05,
        model: str = "fake-model",
        host: str = "127.0.0.1",
        port: int = 0,
        batch_outcome: BatchOutcome = "completed",
        batch_delay_s: float = 0.0,
    ) -> None:
        self.handler: Handler = handler or default_handler
        self.latency_s = latency_s
        self.fault_rate = fault_rate
        self.faults = tuple(faults)
        unknown = set(self.faults) - ALL_FAULTS
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}, expected a subset of {sorted(ALL_FAULTS)}")
        from .batch import BATCH_OUTCOMES

        if batch_outcome not in BATCH_OUTCOMES:
            raise ValueError(f"unknown batch_outcome {batch_outcome!r}, expected one of {', '.join(BATCH_OUTCOMES)}")
        self.fault_for = fault_for
        self.hang_s = hang_s
        self.retry_after_s = retry_after_s
        self.model = model
        self._host = host
        self._port = port
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ids = itertools.count(1)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        # observable state (guarded by _lock)
        self._requests: list[dict[str, Any]] = []
        self._headers: list[dict[str, str]] = []
        self.statuses: Counter[int] = Counter()
        self.faults_injected: Counter[str] = Counter()
        self.handler_errors: list[str] = []
        self._in_flight = 0
        self.max_in_flight = 0
        # the files and batches endpoints (batch judging)
        from .batch import BatchStore

        self.batch = BatchStore()
        self.batch.outcome = batch_outcome
        self.batch.delay_s = batch_delay_s
        self.batch_polls = 0

    # -- lifecycle ---------------------------------------------------------
    def start(self) -> FakeLLMServer:
        if self._server is not None:
            return self
        self._stop.clear()
        srv = _Server((self._host, self._port), _RequestHandler)
        srv.owner = self
        self._server = srv
        self._thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.name = f"FakeLLMServer:{self.port}"
        self._thread.start()
        return self

    def stop(self) -> None:
        srv, self._server = self._server, None
        self._stop.set()  # wakes hanging "timeout" requests
        if srv is not None:
            srv.shutdown()
            srv.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    close = stop

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses ---------------------------------------------------------
    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeLLMServer is not running (use it as a context manager or call start())")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The api_base: ``http://127.0.0.1:PORT/v1``."""
        return f"http://{self._host}:{self.port}/v1"

    # -- observations ------------------------------------------------------
    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies received so far (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def request_headers(self) -> list[dict[str, str]]:
        with self._lock:
            return list(self._headers)

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self._requests)

    @property
    def fault_count(self) -> int:
        with self._lock:
            return sum(self.faults_injected.values())

    def reset(self) -> None:
        """Forget the requests and counters seen so far."""
        with self._lock:
            self._requests.clear()
            self._headers.clear()
            self.statuses.clear()
            self.faults_injected.clear()
            self.handler_errors.clear()
            self.max_in_flight = 0

    # -- serving -----------------------------------------------------------
    def _choose_fault(self, body: dict[str, Any], n: int) -> str | None:
        fault: str | None = None
        if self.fault_for is not None:
            fault = self.fault_for(body, n)
            if fault is not None and fault not in ALL_FAULTS:
                raise ValueError(f"fault_for returned unknown fault {fault!r}")
        if fault is None and self.fault_rate > 0 and self.faults:
            with self._lock:
                if self._rng.random() < self.fault_rate:
                    fault = self._rng.choice(self.faults)
        return fault

    def _serve(self, req: _RequestHandler, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self._lock:
            n = len(self._requests)
            self._requests.append(body)
            self._headers.append(headers)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            self._respond(req, body, n)
        finally:
            with self._lock:
                self._in_flight -= 1

    def _count(self, status: int, fault: str | None = None) -> None:
        with self._lock:
            self.statuses[status] += 1
            if fault:
                self.faults_injected[fault] += 1

    def _respond(self, req: _RequestHandler, body: dict[str, Any], n: int) -> None:
        try:
            fault = self._choose_fault(body, n)
        except Exception as e:  # a broken hook must not kill the server thread
            with self._lock:
                self.handler_errors.append(f"fault_for: {type(e).__name__}: {e}")
            fault = None
        if self.latency_s > 0:
            time.sleep(self.latency_s)
        if fault == "429":
            self._count(429, fault)
            ra = self.retry_after_s
            ra_s = str(int(ra)) if float(ra).is_integer() else f"{ra:g}"
            req._send_json(
                429,
                {
                    "error": {
                        "message": "Rate limit reached (fake)",
                        "type": "rate_limit_error",
                        "code": "rate_limit_exceeded",
                    }
                },
                {"Retry-After": ra_s},
            )
            return
        if fault == "500":
            self._count(500, fault)
            req._send_json(500, {"error": {"message": "Internal server error (fake)", "type": "server_error"}})
            return
        if fault in ("400", "401"):
            self._count(int(fault), fault)
            kind = "invalid_request_error" if fault == "400" else "authentication_error"
            req._send_json(int(fault), {"error": {"message": f"fake {fault} error", "type": kind}})
            return
        if fault == "bad_body":
            self._count(200, fault)
            req._send_raw(200, b'{"id": "chatcmpl-broken", "choices": [{"message": ')
            return
        if fault == "disconnect":
            self._count(0, fault)
            req.close_connection = True
            return
        if fault == "timeout":
            self._count(200, fault)
            self._stop.wait(self.hang_s)
            if self._stop.is_set():
                req.close_connection = True
                return
            fault = None  # late, but a normal reply
        elif fault is not None:
            self._count(200, fault)
        try:
            if fault == "malformed":
                content = MALFORMED_CONTENT
            elif fault == "schema":
                content = json.dumps(SCHEMA_FAULT_CONTENT)
            else:
                out = self.handler(body)
                content = out if isinstance(out, str) else json.dumps(out)
        except Exception as e:
            with self._lock:
                self.handler_errors.append(f"{type(e).__name__}: {e}")
            self._count(500)
            req._send_json(
                500, {"error": {"message": f"fake handler failed: {type(e).__name__}", "type": "server_error"}}
            )
            return
        if fault is None:
            self._count(200)
        req._send_json(200, self.completion(body, content))

    def completion(self, body: dict[str, Any], content: str) -> dict[str, Any]:
        """The chat.completion object answering ``body`` with ``content`` (usage: 4 characters a token)."""
        prompt_text = "".join(
            m.get("content", "") if isinstance(m.get("content"), str) else json.dumps(m.get("content"))
            for m in body.get("messages") or []
        )
        pt, ct = _tokens(prompt_text), _tokens(content)
        return {
            "id": f"chatcmpl-fake-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
            "system_fingerprint": "fp_fake",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
        }

    # -- files and batches (see testing_batch) ------------------------------
    def _answer_line(self, body: dict[str, Any]) -> dict[str, Any]:
        """A batch line: the handler's reply, as a direct call would get it (no faults, no latency)."""
        out = self.handler(body)
        return self.completion(body, out if isinstance(out, str) else json.dumps(out))

    def _polled(self) -> None:
        with self._lock:
            self.batch_polls += 1
