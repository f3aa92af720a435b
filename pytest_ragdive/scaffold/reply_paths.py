"""Guess an HTTP target's reply paths from one live reply (``init --url``).

The paths are the dotted paths of :class:`~pytest_ragdive.core.config_models.HttpTargetConfig`
(``data.reply.text``, ``choices.0.message.content``). The answer is the string under a
key that names an answer (``answer``, ``reply``, ``text``, ``content``, ...), the longest
such when there are several; the contexts are the first list under a key that names
retrieved documents (``contexts``, ``sources``, ``documents``, ``chunks``, ...), and each
context item's fields are guessed the same way. A guess is only a guess: ``init`` shows
it, with the values it points to, before writing it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, Field

ANSWER_KEYS = ("answer", "reply", "response", "text", "content", "output", "message", "result", "completion")
CONTEXT_KEYS = ("contexts", "context", "sources", "source_documents", "documents", "docs", "chunks", "passages",
                "retrieved", "references", "hits", "results")
CITATION_KEYS = ("citations", "cited", "citation_ids")
FIELD_KEYS: dict[str, tuple[str, ...]] = {
    "id": ("id", "chunk_id", "node_id", "uid", "key"),
    "text": ("text", "content", "page_content", "chunk", "passage", "body", "snippet"),
    "doc_id": ("doc_id", "document_id", "doc", "source", "source_id", "docid", "url", "path", "file", "title"),
    "score": ("score", "similarity", "relevance", "distance"),
}
MAX_DEPTH = 6


class ReplyPaths(BaseModel):
    """The guessed mapping (the HttpTargetConfig keys ``init`` writes) and what each found."""

    answer: str | None = None
    contexts: str | None = None
    citations: str | None = None
    context_fields: dict[str, str] = Field(default_factory=dict)
    found: dict[str, str] = Field(default_factory=dict)  # key -> a short view of the value at that path

    def config(self) -> dict[str, Any]:
        """The keys of ``target = {...}`` (``contexts``/``citations`` null when the reply has none)."""
        out: dict[str, Any] = {"answer": self.answer or "answer", "contexts": self.contexts,
                               "citations": self.citations}
        if self.context_fields:
            out["context_fields"] = dict(self.context_fields)
        return out


def _walk(value: Any, path: tuple[str, ...] = (), depth: int = 0) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, value
    if depth >= MAX_DEPTH:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, (*path, str(k)), depth + 1)
    elif isinstance(value, list) and value and path and path[-1] in ("choices",):
        yield from _walk(value[0], (*path, "0"), depth + 1)


def _named(key: str, names: tuple[str, ...]) -> int | None:
    k = key.lower()
    return names.index(k) if k in names else None


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= 70 else text[:67] + "..."


def guess(reply: Any) -> ReplyPaths:
    """The reply paths of one JSON reply (``{}`` guesses nothing: every path None)."""
    out = ReplyPaths()
    if isinstance(reply, str):
        return out
    answers: list[tuple[int, int, int, str, str]] = []
    lists: list[tuple[int, int, str, list[Any]]] = []
    cites: list[tuple[int, str, list[Any]]] = []
    for path, value in _walk(reply):
        if not path:
            continue
        dotted = ".".join(path)
        rank = _named(path[-1], ANSWER_KEYS)
        if isinstance(value, str) and rank is not None:
            answers.append((len(path), rank, -len(value), dotted, value))
        if isinstance(value, list):
            if (r := _named(path[-1], CONTEXT_KEYS)) is not None:
                lists.append((len(path), r, dotted, value))
            if (r := _named(path[-1], CITATION_KEYS)) is not None and all(isinstance(x, str) for x in value):
                cites.append((r, dotted, value))
    if answers:
        # prefer a named key that is not a context's field (shallow first), the longest text
        best = min(answers, key=lambda a: (a[2], a[0], a[1]))
        out.answer, out.found["answer"] = best[3], _short(best[4])
    if lists:
        _, _, dotted, items = min(lists, key=lambda x: (x[0], x[1]))
        out.contexts, out.found["contexts"] = dotted, f"{len(items)} item(s)"
        first = next((x for x in items if isinstance(x, dict)), None)
        if first is not None:
            for fld, names in FIELD_KEYS.items():
                keys = [k for k in first if str(k).lower() in names]
                if keys:
                    key = min(keys, key=lambda k: names.index(str(k).lower()))
                    if fld == "doc_id" and key == out.context_fields.get("id"):
                        continue
                    out.context_fields[fld] = str(key)
                    out.found[f"context {fld}"] = _short(first[key])
    if cites:
        _, dotted, items = min(cites)
        out.citations, out.found["citations"] = dotted, _short(items)
    return out


def lines(paths: ReplyPaths) -> list[str]:
    """The guess as ``init`` shows it: each path and what it points to in the reply."""
    rows = [("answer", paths.answer, paths.found.get("answer")),
            ("contexts", paths.contexts, paths.found.get("contexts")),
            ("citations", paths.citations, paths.found.get("citations"))]
    rows += [(f"  context {k}", v, paths.found.get(f"context {k}")) for k, v in paths.context_fields.items()]
    out = []
    for name, path, seen in rows:
        out.append(f"  {name:14} {path or '(none found)':28} {('-> ' + seen) if seen else ''}".rstrip())
    return out
