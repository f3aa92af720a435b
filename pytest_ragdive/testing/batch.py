"""The fake server's OpenAI files and batches endpoints (for batch judging tests).

:class:`BatchStore` holds uploaded files and batches in memory; the HTTP
handler of :class:`pytest_ragdive.testing.FakeLLMServer` routes to it:

* ``POST /v1/files`` (multipart: ``purpose``, ``file``) -> a file object;
  ``GET /v1/files/{id}`` -> the file object, ``GET /v1/files/{id}/content``
  -> its bytes; ``DELETE /v1/files/{id}``
* ``POST /v1/batches`` (``input_file_id``, ``endpoint``,
  ``completion_window``, ``metadata``) -> a batch object, ``validating``;
  ``GET /v1/batches/{id}`` -> the batch as it stands; ``GET /v1/batches``;
  ``POST /v1/batches/{id}/cancel``

A batch is ``in_progress`` until ``delay_s`` seconds after it was created,
then ends as ``outcome`` says:

* ``"completed"``: every line answered by the server's chat handler (the same
  replies as a direct call), written to an output file; a line whose body the
  handler cannot answer goes to the error file
* ``"failed"``: ``status = failed`` with an ``errors`` list, no output
* ``"expired"``: ``status = expired``; the first ``expire_after`` lines are
  answered, the rest go to the error file with code ``batch_expired``
* ``"stuck"``: stays ``in_progress`` (tests of a bounded wait)
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from email.parser import BytesParser
from email.policy import default as email_policy
from typing import Any, Literal

BatchOutcome = Literal["completed", "failed", "expired", "stuck"]
BATCH_OUTCOMES: tuple[str, ...] = ("completed", "failed", "expired", "stuck")
Answer = Callable[[dict[str, Any]], dict[str, Any]]  # a chat body -> a chat.completion object
Route = list[str]  # a request path's parts after ``/v1`` (``["batches", "b1"]``)
Response = tuple[int, Any]  # (HTTP status, a JSON object or a file's bytes); None where there is no such route or object


class BatchRequestError(ValueError):
    """A batch API request the fake server rejects (answered 400)."""


def parse_multipart(content_type: str, body: bytes) -> dict[str, tuple[str | None, bytes]]:
    """``{field: (filename, bytes)}`` of a multipart/form-data body."""
    msg = BytesParser(policy=email_policy).parsebytes(
        b"Content-Type: " + content_type.encode("latin-1") + b"\r\nMIME-Version: 1.0\r\n\r\n" + body
    )
    if not msg.is_multipart():
        raise BatchRequestError("expected a multipart/form-data body")
    out: dict[str, tuple[str | None, bytes]] = {}
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not name:
            continue
        payload = part.get_payload(decode=True) or b""
        out[str(name)] = (part.get_filename(), bytes(payload) if isinstance(payload, (bytes, bytearray)) else b"")
    return out


class BatchStore:
    """In-memory files and batches; thread-safe (the server is threaded)."""

    def __init__(self) -> None:
        self.outcome: BatchOutcome = "completed"
        self.delay_s = 0.0
        self.expire_after = 0
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.files: dict[str, dict[str, Any]] = {}
        self._content: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self._born: dict[str, float] = {}
        self.lines_answered = 0  # chat bodies answered through batches
        self.bodies: list[dict[str, Any]] = []  # the bodies of every batch line answered

    # -- files -------------------------------------------------------------
    def add_file(self, data: bytes, filename: str, purpose: str) -> dict[str, Any]:
        with self._lock:
            fid = f"file-fake{next(self._ids)}"
            obj = {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                   "filename": filename, "purpose": purpose, "status": "processed", "status_details": None}
            self.files[fid] = obj
            self._content[fid] = data
            return obj

    def upload(self, content_type: str, body: bytes) -> dict[str, Any]:
        fields = parse_multipart(content_type, body)
        if "file" not in fields:
            raise BatchRequestError("missing the 'file' field")
        purpose = fields.get("purpose", (None, b""))[1].decode() or "batch"
        filename, data = fields["file"]
        return self.add_file(data, filename or "upload.jsonl", purpose)

    def file(self, fid: str) -> dict[str, Any] | None:
        with self._lock:
            return self.files.get(fid)

    def content(self, fid: str) -> bytes | None:
        with self._lock:
            return self._content.get(fid)

    def delete_file(self, fid: str) -> dict[str, Any] | None:
        with self._lock:
            if self.files.pop(fid, None) is None:
                return None
            self._content.pop(fid, None)
            return {"id": fid, "object": "file", "deleted": True}

    # -- batches -----------------------------------------------------------
    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        fid = body.get("input_file_id")
        data = self.content(str(fid)) if fid else None
        if data is None:
            raise BatchRequestError(f"no such input file {fid!r}")
        endpoint = body.get("endpoint")
        if endpoint not in ("/v1/chat/completions", "/chat/completions"):
            raise BatchRequestError(f"unsupported endpoint {endpoint!r}")
        lines = [ln for ln in data.decode("utf-8").splitlines() if ln.strip()]
        now = int(time.time())
        with self._lock:
            bid = f"batch_fake{next(self._ids)}"
            batch = {
                "id": bid, "object": "batch", "endpoint": endpoint, "errors": None, "input_file_id": fid,
                "completion_window": body.get("completion_window", "24h"), "status": "validating",
                "output_file_id": None, "error_file_id": None, "created_at": now, "in_progress_at": None,
                "expires_at": now + 86400, "finalizing_at": None, "completed_at": None, "failed_at": None,
                "expired_at": None, "cancelling_at": None, "cancelled_at": None,
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "metadata": body.get("metadata"),
            }
            self.batches[bid] = batch
            self._born[bid] = time.monotonic()
            return dict(batch)

    def cancel(self, bid: str) -> dict[str, Any] | None:
        with self._lock:
            batch = self.batches.get(bid)
            if batch is None:
                return None
            if batch["status"] in ("validating", "in_progress"):
                now = int(time.time())
                batch.update(status="cancelled", cancelling_at=now, cancelled_at=now)
            return dict(batch)

    def list(self) -> dict[str, Any]:
        with self._lock:
            data = [dict(b) for b in self.batches.values()]
        return {"object": "list", "data": data, "has_more": False}

    # -- the HTTP routes (the server's handler sends what these return) -------
    def get(self, route: Route, answer: Answer) -> Response | None:
        """``GET /v1/files/{id}``, ``/v1/files/{id}/content``, ``/v1/batches`` and ``/v1/batches/{id}``."""
        obj: Any = None
        if route[0] == "files" and len(route) == 2:
            obj = self.file(route[1])
        elif route[0] == "files" and len(route) == 3 and route[2] == "content":
            obj = self.content(route[1])
        elif route == ["batches"]:
            obj = self.list()
        elif route[0] == "batches" and len(route) == 2:
            obj = self.retrieve(route[1], answer)
        return None if obj is None else (200, obj)

    def post(self, route: Route, content_type: str, raw: bytes) -> Response | None:
        """``POST /v1/files``, ``/v1/batches`` and ``/v1/batches/{id}/cancel``; a bad request is a 400."""
        try:
            if route == ["files"]:
                return 200, self.upload(content_type, raw)
            if route == ["batches"]:
                body = json.loads(raw or b"{}")
                if not isinstance(body, dict):
                    raise BatchRequestError("body is not a JSON object")
                return 200, self.create(body)
            if len(route) == 3 and route[0] == "batches" and route[2] == "cancel":
                obj = self.cancel(route[1])
                return None if obj is None else (200, obj)
        except (BatchRequestError, ValueError) as e:
            return 400, {"error": {"message": str(e), "type": "invalid_request_error"}}
        return None

    def delete(self, route: Route) -> Response | None:
        """``DELETE /v1/files/{id}``."""
        obj = self.delete_file(route[1]) if len(route) == 2 and route[0] == "files" else None
        return None if obj is None else (200, obj)

    def retrieve(self, bid: str, answer: Answer) -> dict[str, Any] | None:
        """The batch as it stands now; past ``delay_s`` it ends as ``outcome`` says."""
        with self._lock:
            batch = self.batches.get(bid)
            if batch is None:
                return None
            if batch["status"] == "validating":
                batch.update(status="in_progress", in_progress_at=int(time.time()))
            done = batch["status"] != "in_progress"
            due = time.monotonic() - self._born[bid] >= self.delay_s
            outcome = self.outcome
        if done or not due or outcome == "stuck":
            return dict(batch)
        self._finish(batch, outcome, answer)
        return dict(batch)

    def _finish(self, batch: dict[str, Any], outcome: str, answer: Answer) -> None:
        now = int(time.time())
        if outcome == "failed":
            with self._lock:
                batch.update(status="failed", failed_at=now, errors={"object": "list", "data": [
                    {"code": "fake_failure", "message": "the fake server fails this batch", "param": None, "line": None}
                ]})
            return
        data = self.content(batch["input_file_id"]) or b""
        lines = [ln for ln in data.decode("utf-8").splitlines() if ln.strip()]
        limit = len(lines) if outcome == "completed" else min(self.expire_after, len(lines))
        out: list[str] = []
        err: list[str] = []
        for i, line in enumerate(lines):
            row: dict[str, Any] = {}
            try:
                row = json.loads(line)
                custom_id = row["custom_id"]
                body = row["body"]
            except (ValueError, KeyError, TypeError):
                err.append(json.dumps({"id": f"batch_req_{i}", "custom_id": row.get("custom_id") if isinstance(row, dict) else None,
                                       "response": None,
                                       "error": {"code": "invalid_json_line", "message": "not a batch request line"}}))
                continue
            if i >= limit:
                err.append(json.dumps({"id": f"batch_req_{i}", "custom_id": custom_id, "response": None,
                                       "error": {"code": "batch_expired", "message": "This request could not be "
                                                 "executed before the completion window expired."}}))
                continue
            try:
                completion = answer(body)
            except Exception as e:  # noqa: BLE001 - one line's error, like the real API
                err.append(json.dumps({"id": f"batch_req_{i}", "custom_id": custom_id, "response": None,
                                       "error": {"code": "server_error", "message": f"{type(e).__name__}: {e}"}}))
                continue
            with self._lock:
                self.lines_answered += 1
                self.bodies.append(body)
            out.append(json.dumps({"id": f"batch_req_{i}", "custom_id": custom_id, "response": {
                "status_code": 200, "request_id": f"req_fake{i}", "body": completion}, "error": None}))
        out_file = self.add_file(("\n".join(out) + "\n").encode(), "batch_output.jsonl", "batch_output") if out else None
        err_file = self.add_file(("\n".join(err) + "\n").encode(), "batch_errors.jsonl", "batch_output") if err else None
        with self._lock:
            batch.update(
                status="completed" if outcome == "completed" else "expired",
                finalizing_at=now,
                output_file_id=out_file["id"] if out_file else None,
                error_file_id=err_file["id"] if err_file else None,
                request_counts={"total": len(lines), "completed": len(out), "failed": len(err)},
            )
            batch["completed_at" if outcome == "completed" else "expired_at"] = now
