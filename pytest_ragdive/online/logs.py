"""The production request log: JSONL, one event a line, written by the monitor.

Two kinds of line (``kind``), both with ``v`` (format version, 1) and ``time``
(ISO 8601, UTC)::

    {"v": 1, "kind": "request", "time": "2026-12-01T09:00:00.123Z",
     "request_id": "4f1c...", "conversation_id": null,
     "messages": [{"role": "user", "content": "How do I reset my camera?"}],
     "response": {"answer": "...", "contexts": [{"id": "...", "text": "...", "doc_id": "...", "score": 7.1}],
                  "citations": ["camera-reset"]},
     "error": null,
     "timings": {"retrieval_s": 0.004, "generation_s": 0.012, "total_s": 0.017}}

    {"v": 1, "kind": "feedback", "time": "...", "request_id": "4f1c...", "category": "wrong_answer"}

``messages`` is the history the target got (system, user and assistant messages;
other roles and extra keys are left out), ``response`` what it returned (null
when it raised; ``error`` then holds ``ExceptionType: message``). A feedback line
names the request it is about (``request_id``, may be null). The log holds what
users typed: store and keep it as the rest of your production data.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ..core.errors import LogFormatError, one_line
from ..core.paths import read_text
from ..core.records import Message, TargetResponse

__all__ = ["FeedbackEvent", "LogFile", "LogWriter", "RequestEvent", "Timings", "history_messages", "read_logs", "utc_now"]

FORMAT_VERSION = 1


class _Line(BaseModel):
    model_config = ConfigDict(extra="forbid")

    v: Literal[1] = 1
    time: str


class Timings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    retrieval_s: float | None = None
    generation_s: float | None = None
    total_s: float | None = None


class RequestEvent(_Line):
    """One target call: the history it got and what it returned (or the error it raised)."""

    kind: Literal["request"] = "request"
    request_id: str
    conversation_id: str | None = None
    messages: list[Message]
    response: TargetResponse | None = None
    error: str | None = None
    timings: Timings = Field(default_factory=Timings)


class FeedbackEvent(_Line):
    """One negative feedback event of a user, about one request when known."""

    kind: Literal["feedback"] = "feedback"
    request_id: str | None = None
    category: str


_LINE = TypeAdapter(Annotated[RequestEvent | FeedbackEvent, Field(discriminator="kind")])


class LogFile(BaseModel):
    """The events of one or more log files, in file order."""

    model_config = ConfigDict(extra="forbid")

    requests: list[RequestEvent] = Field(default_factory=list)
    feedback: list[FeedbackEvent] = Field(default_factory=list)


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def history_messages(messages: Sequence[Mapping[str, object]]) -> list[Message]:
    """The history as :class:`Message` records: system/user/assistant messages with string
    content; other roles, non-string contents and extra keys are left out."""
    out: list[Message] = []
    for m in messages:
        role, content = m.get("role"), m.get("content")
        if role in ("system", "user", "assistant") and isinstance(content, str):
            out.append(Message(role=role, content=content))
    return out


class LogWriter:
    """Appends events to a JSONL file, one line each, flushed per line; thread-safe."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def write(self, event: RequestEvent | FeedbackEvent) -> None:
        line = event.model_dump_json() + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line)


def read_logs(paths: Iterable[str | Path]) -> LogFile:
    """Every event of the files; a malformed line raises :class:`LogFormatError` naming
    the file and line. Blank lines are skipped."""
    log = LogFile()
    for p in paths:
        path = Path(p)
        if not path.is_file():
            raise LogFormatError(f"{path}: file not found")
        try:
            _read_log(path, log)
        except UnicodeDecodeError:
            read_text(path, LogFormatError)  # raises, naming the line and column of the byte
            raise
    return log


#: the longest log line read (a line without an end is never held whole)
MAX_LINE_CHARS = 16 * 2**20


def _read_log(path: Path, log: LogFile) -> None:
    with path.open(encoding="utf-8") as f:
        no = 0
        while line := f.readline(MAX_LINE_CHARS + 1):
            no += 1
            if len(line) > MAX_LINE_CHARS:
                raise LogFormatError(f"{path}:{no}: a line over {MAX_LINE_CHARS >> 20} M characters: not a ragdive log line")
            if not line.strip():
                continue
            try:
                event = _LINE.validate_json(line)
            except ValidationError as e:
                raise LogFormatError(f"{path}:{no}: not a ragdive log line: {one_line(e)}") from None
            if isinstance(event, RequestEvent):
                log.requests.append(event)
            else:
                log.feedback.append(event)
