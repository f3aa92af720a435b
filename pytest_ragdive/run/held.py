"""The scored conversations a session holds until the end of the run, held compactly.

A conversation's retrieved contexts (five or so chunks per turn and per
stand-alone probe) are most of its size, and nothing that decides the run
reads them: aggregation, the gate, the baseline and the text reports read
scores, ids and questions. So a scored conversation whose answered turns have
contexts is held as

- a *slim* copy: the same record with every turn's ``contexts``,
  ``standalone_contexts`` and ``standalone_answer`` left empty (what
  :func:`~pytest_ragdive.conclude.conclude` reads: it never reads them, they
  were scored already), and, when reports will be written,
- its full JSON (``Conversation.model_dump_json``, as results.json holds it)
  and its rendered report.html body, zlib-compressed in one stream (the body
  repeats the JSON's texts, so it adds little: together about a fifth of the
  objects' size).

Conversations without contexts, errored ones, generated and sharded ones
(whose end-of-run statistics and exports read contexts) are held as they are.
The reports write the stored JSON and HTML, so results.json and report.html
are byte for byte what the full conversations give. Imports no pytest.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any, TypeVar

from pydantic import BaseModel

from ..core.records import Conversation


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
    (both already scored; the rest is shared, not copied)."""
    turns = [_bare_copy(t, _DROPPED) for t in conv.turns]
    return _bare_copy(conv, {"turns": turns})


_M = TypeVar("_M", bound=BaseModel)


def _bare_copy(model: _M, update: dict[str, Any]) -> _M:
    """``model.model_copy(update=update)`` with an empty fields-set. Nothing reads a held
    record's fields-set (no dump of it excludes unset fields), and the set pydantic keeps
    per record, of every field name given (0.7 to 1.2 KB), was half of a slim
    conversation's size."""
    copy = model.model_copy(update=update)
    object.__setattr__(copy, "__pydantic_fields_set__", set())  # BaseModel's own attribute
    return copy


class HeldConversations:
    """Scored conversations by key, in the order they were added (a later one with
    the same key replaces the earlier)."""

    def __init__(self, keep_reports: bool) -> None:
        self._keep = keep_reports  # store what results.json and report.html need
        self._convs: dict[str, Conversation] = {}
        self._stored: dict[str, tuple[int, bytes]] = {}  # key -> (JSON length, zlib(JSON + page body))
        self.had_contexts = False  # some held conversation's answered turns had contexts (slimmed ones do)

    def add(self, conv: Conversation, as_json: str | None = None) -> None:
        """Hold ``conv`` (scored, and not changed afterwards: the stored JSON is of this moment).
        ``as_json``: its ``model_dump_json()`` where the caller has it already (an xdist
        worker's report)."""
        key = conv.key
        self._stored.pop(key, None)
        if not _slimmable(conv):
            self._convs[key] = conv
            return
        self.had_contexts = True
        if self._keep:
            from ..reports.html import conversation_body

            full = (as_json if as_json is not None else conv.model_dump_json()).encode("utf-8")
            # one stream: the page shows the JSON's texts again, so the body costs little more
            self._stored[key] = (len(full), zlib.compress(full + conversation_body(conv).encode("utf-8"), 1))
        self._convs[key] = slim(conv)

    def clear(self) -> None:
        """Let go of everything held (the run is concluded and its reports written)."""
        self._convs.clear()
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
        got = self._stored.get(key)
        if got is None:
            return None
        n, z = got
        if body:
            return zlib.decompress(z)[n:].decode("utf-8")
        return zlib.decompressobj().decompress(z, n).decode("utf-8")  # the JSON comes first: stop after it

    def full_json(self, key: str) -> str | None:
        """The full conversation's JSON, where it was slimmed (else None: dump the held one)."""
        return self._part(key, body=False)

    def html_body(self, key: str) -> str | None:
        """The full conversation's report.html body, where it was slimmed (else None: render the held one)."""
        return self._part(key, body=True)
