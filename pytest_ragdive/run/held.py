"""The scored conversations a session holds until the end of the run, held compactly.

A conversation's retrieved contexts (five or so chunks per turn and per
stand-alone probe) are most of its size, and nothing that decides the run
reads them: aggregation, the gate, the baseline and the text reports read
scores, ids and questions. So a scored conversation whose answered turns have
contexts is held as

- a *slim* copy: the same record with every turn's ``contexts``,
  ``standalone_contexts`` and ``standalone_answer`` left empty (what
  :func:`~pytest_ragdive.gate.conclude.conclude` reads: it never reads them, they
  were scored already) and its evidence cut to the one unit the text reports
  quote (:meth:`~pytest_ragdive.core.records.Evidence.worst`, without its span
  and missing words; the reference's coverage dropped: report.html, which
  shows all of it, is rendered from the full conversation), and, when reports
  will be written,
- its full JSON (``Conversation.model_dump_json``, as results.json holds it)
  and its rendered report.html body, zlib-compressed in one stream (the body
  repeats the JSON's texts, so it adds little: together about a fifth of the
  objects' size), written to an anonymous temporary file (:class:`Spool`:
  the operating system's page cache holds it, not the process's heap; in
  memory where no temporary file can be written).

Conversations without contexts, errored ones, generated and sharded ones
(whose end-of-run statistics and exports read contexts) are held as they are.
The reports write the stored JSON and HTML, so results.json and report.html
are byte for byte what the full conversations give. Imports no pytest.
"""

from __future__ import annotations

import os
import tempfile
import zlib
from collections.abc import Iterator
from typing import IO, Any, TypeVar

from pydantic import BaseModel

from ..core.records import Conversation, Evidence, Support


def _slimmable(conv: Conversation) -> bool:
    return (
        conv.error is None
        and conv.sharded is None
        and conv.source != "generated"
        and any(t.contexts for t in conv.turns if t.answer is not None)
    )


_DROPPED: dict[str, Any] = {"contexts": [], "standalone_contexts": [], "standalone_answer": None}


def slim(conv: Conversation) -> Conversation:
    """A copy of ``conv`` whose turns hold no contexts and no stand-alone probe answer
    (both already scored) and only the worst unit of their evidence (the rest is
    shared, not copied)."""
    turns = [_bare_copy(t, {**_DROPPED, "evidence": _worst_only(t.evidence)}) for t in conv.turns]
    return _bare_copy(conv, {"turns": turns})


def _worst_only(evidence: Evidence | None) -> Evidence | None:
    """``evidence`` cut to what the culprits quote (:func:`~pytest_ragdive.gate.ranking.culprits`):
    its worst unit's text, score, weight and verdict; None when every unit is supported."""
    worst = evidence.worst() if evidence is not None else None
    if worst is None:
        return None
    unit = Support(text=worst.text, score=worst.score, weight=worst.weight, verdict=worst.verdict, rule=worst.rule)
    object.__setattr__(unit, "__pydantic_fields_set__", set())
    return _bare_copy(Evidence(), {"support": [unit]})


_M = TypeVar("_M", bound=BaseModel)


def _bare_copy(model: _M, update: dict[str, Any]) -> _M:
    """``model.model_copy(update=update)`` with an empty fields-set. Nothing reads a held
    record's fields-set (no dump of it excludes unset fields), and the set pydantic keeps
    per record, of every field name given (0.7 to 1.2 KB), was half of a slim
    conversation's size."""
    copy = model.model_copy(update=update)
    object.__setattr__(copy, "__pydantic_fields_set__", set())  # BaseModel's own attribute
    return copy


class Spool:
    """Byte strings by key, in an anonymous temporary file (unlinked at once: a killed run
    leaves nothing behind), read back with ``os.pread``; in memory where the file cannot
    be created or written (a full or read-only temporary directory)."""

    def __init__(self) -> None:
        self._fh: IO[bytes] | None = None
        self._end = 0
        self._at: dict[str, tuple[int, int]] = {}  # key -> (offset, length) in the file
        self._mem: dict[str, bytes] = {}  # where the file failed
        self._failed = False

    def put(self, key: str, data: bytes) -> None:
        self._at.pop(key, None)
        self._mem.pop(key, None)
        if not self._failed:
            try:
                if self._fh is None:
                    self._fh = tempfile.TemporaryFile(prefix="ragdive-held-")
                n = os.pwrite(self._fh.fileno(), data, self._end)
                if n == len(data):
                    self._at[key] = (self._end, n)
                    self._end += n
                    return
            except OSError:
                pass
            self._failed = True  # from now on in memory (what was written stays readable)
        self._mem[key] = data

    def get(self, key: str) -> bytes | None:
        at = self._at.get(key)
        if at is not None and self._fh is not None:
            return os.pread(self._fh.fileno(), at[1], at[0])
        return self._mem.get(key)

    def clear(self) -> None:
        self._at.clear()
        self._mem.clear()
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        self._end = 0


class HeldConversations:
    """Scored conversations by key, in the order they were added (a later one with
    the same key replaces the earlier)."""

    def __init__(self, keep_reports: bool) -> None:
        self._keep = keep_reports  # store what results.json and report.html need
        self._convs: dict[str, Conversation] = {}
        self._json_len: dict[str, int] = {}  # key -> the length of its JSON in the stored stream
        self._stored = Spool()  # key -> zlib(JSON + page body)
        self.had_contexts = False  # some held conversation's answered turns had contexts (slimmed ones do)

    def add(self, conv: Conversation, as_json: str | None = None) -> None:
        """Hold ``conv`` (scored, and not changed afterwards: the stored JSON is of this moment).
        ``as_json``: its ``model_dump_json()`` where the caller has it already (an xdist
        worker's report)."""
        key = conv.key
        self._json_len.pop(key, None)
        if not _slimmable(conv):
            self._convs[key] = conv
            return
        self.had_contexts = True
        if self._keep:
            from ..reports.html import conversation_body

            full = (as_json if as_json is not None else conv.model_dump_json()).encode("utf-8")
            # one stream: the page shows the JSON's texts again, so the body costs little more
            self._stored.put(key, zlib.compress(full + conversation_body(conv).encode("utf-8"), 1))
            self._json_len[key] = len(full)
        self._convs[key] = slim(conv)

    def clear(self) -> None:
        """Let go of everything held (the run is concluded and its reports written)."""
        self._convs.clear()
        self._json_len.clear()
        self._stored.clear()

    def get(self, key: str) -> Conversation | None:
        return self._convs.get(key)

    def values(self) -> list[Conversation]:
        return list(self._convs.values())

    def __len__(self) -> int:
        return len(self._convs)

    def __iter__(self) -> Iterator[str]:
        return iter(self._convs)

    def _part(self, key: str, body: bool) -> str | None:
        n = self._json_len.get(key)
        z = self._stored.get(key) if n is not None else None
        if n is None or z is None:
            return None
        if body:
            return zlib.decompress(z)[n:].decode("utf-8")
        return zlib.decompressobj().decompress(z, n).decode("utf-8")  # the JSON comes first: stop after it

    def full_json(self, key: str) -> str | None:
        """The full conversation's JSON, where it was slimmed (else None: dump the held one)."""
        return self._part(key, body=False)

    def html_body(self, key: str) -> str | None:
        """The full conversation's report.html body, where it was slimmed (else None: render the held one)."""
        return self._part(key, body=True)
