"""Export and import of conversations in the RAG-DIVE reference format.

The reference implementation (github.com/lorenzbrehme/RAG-DIVE) writes a JSON
list (or JSONL, one item a line) of::

    {"title": ..., "document": <document text>, "role": ...,
     "conversation": [{"rag_input": ..., "question": <stand-alone question>,
                       "answer": <ground truth>, "type": <question type>,
                       "rag_answer": <chatbot's answer>,
                       "context": [{"id", "metadata", "page_content", "type": "Document"}],
                       "index": <0-based turn index>}]}

``context`` holds the retrieved chunks as LangChain ``Document`` dicts (its
evaluator reads ``page_content``). On import, ``context`` may also be a
plain string or a list of strings.

Export adds a few keys the reference tools ignore (``id``, ``document_id``,
``suite``, ``run``, ``source`` on the item; ``flags``, ``citations``,
``relevant_doc_ids`` on turns; ``doc_id``/``score`` in context metadata) so
that an export/import round trip preserves those fields too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, cast, get_args

from ..core.errors import RagdiveFormatError
from ..core.paths import atomic_open, read_text
from ..core.records import Context, Conversation, Document, QuestionType, Turn
from .validator import normalize_question_type


def _doc_map(documents: Iterable[Document] | Mapping[str, Document]) -> dict[str, Document]:
    if isinstance(documents, Mapping):
        return dict(documents)
    return {d.id: d for d in documents}


def _context_out(c: Context) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if c.doc_id is not None:
        meta["doc_id"] = c.doc_id
    if c.score is not None:
        meta["score"] = c.score
    return {"id": c.id, "metadata": meta, "page_content": c.text, "type": "Document"}


def export_ragdive(
    convs: Iterable[Conversation], documents: Iterable[Document] | Mapping[str, Document]
) -> list[dict[str, Any]]:
    """Conversations as RAG-DIVE items; ``documents`` supplies each one's title and text."""
    docs = _doc_map(documents)
    out: list[dict[str, Any]] = []
    for conv in convs:
        doc = docs.get(conv.document_id) if conv.document_id else None
        item: dict[str, Any] = {
            "title": (doc.title or doc.id) if doc else (conv.document_id or conv.id),
            "document": doc.text if doc else "",
            "role": conv.role or "",
            "conversation": [
                {
                    "rag_input": t.rag_input,
                    "question": t.standalone_question or t.rag_input,
                    "answer": t.ground_truth,
                    "type": t.question_type,
                    "rag_answer": t.answer if t.answer is not None else "",
                    "context": [_context_out(c) for c in t.contexts],
                    "index": t.index,
                    "flags": list(t.flags),
                    "citations": list(t.citations),
                    "relevant_doc_ids": list(t.relevant_doc_ids),
                }
                for t in conv.turns
            ],
            "id": conv.id,
            "document_id": conv.document_id,
            "suite": conv.suite,
            "run": conv.run,
            "source": conv.source,
        }
        out.append(item)
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:60] or "doc"


def _context_in(raw: Any, where: str) -> list[Context]:
    if raw is None or raw == "":
        return []
    if isinstance(raw, str):
        return [Context(id="ctx-0", text=raw)]
    if not isinstance(raw, list):
        raise RagdiveFormatError(f"{where}: 'context' must be a list or a string, got {type(raw).__name__}")
    out: list[Context] = []
    for k, c in enumerate(raw):
        if isinstance(c, str):
            out.append(Context(id=f"ctx-{k}", text=c))
            continue
        if not isinstance(c, dict):
            raise RagdiveFormatError(f"{where}: context {k} must be a mapping or a string")
        raw_meta = c.get("metadata")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        text = c.get("page_content", c.get("text", c.get("content", "")))
        score = meta.get("score", c.get("score"))
        doc_id = meta.get("doc_id", c.get("doc_id"))
        out.append(
            Context(
                id=str(c.get("id") or f"ctx-{k}"),
                text=str(text or ""),
                doc_id=None if doc_id is None else str(doc_id),
                score=float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None,
            )
        )
    return out


def _question_type(raw: Any, index: int) -> QuestionType:
    value = normalize_question_type(raw) if raw else None
    for qt in get_args(QuestionType):
        if value == qt:
            return cast(QuestionType, qt)
    return "Initial" if index == 0 else "Follow-up"


def _item_doc_id(item: Mapping[str, Any], i: int) -> str:
    doc_id = item.get("document_id")
    if doc_id:
        return str(doc_id)
    return _slug(str(item.get("title") or f"document-{i}"))


def import_ragdive(data: Iterable[Mapping[str, Any]]) -> list[Conversation]:
    """RAG-DIVE items -> conversations (ids, suite and run from the export's extra keys when present).

    Items from the reference tools get ids ``ragdive-{i:03d}-{title}``,
    ``source="ragdive"``, the role text as ``role`` and a document id made
    from the title.
    """
    convs: list[Conversation] = []
    for i, item in enumerate(data):
        where = f"item {i}"
        if not isinstance(item, Mapping):
            raise RagdiveFormatError(f"{where}: expected a mapping, got {type(item).__name__}")
        raw_turns = item.get("conversation")
        if not isinstance(raw_turns, list):
            raise RagdiveFormatError(f"{where}: 'conversation' must be a list of turns")
        turns: list[Turn] = []
        for k, rt in enumerate(raw_turns):
            tw = f"{where}, turn {k}"
            if not isinstance(rt, Mapping):
                raise RagdiveFormatError(f"{tw}: expected a mapping")
            if not isinstance(rt.get("rag_input"), str):
                raise RagdiveFormatError(f"{tw}: 'rag_input' is missing")
            index = rt.get("index")
            index = index if isinstance(index, int) and not isinstance(index, bool) else k
            rag_answer = rt.get("rag_answer")
            turns.append(
                Turn(
                    index=index,
                    rag_input=rt["rag_input"],
                    standalone_question=str(rt.get("question") or rt["rag_input"]),
                    ground_truth=str(rt.get("answer") or ""),
                    question_type=_question_type(rt.get("type"), k),
                    answer=None if rag_answer is None else str(rag_answer),
                    contexts=_context_in(rt.get("context"), tw),
                    citations=[str(x) for x in rt.get("citations") or []],
                    relevant_doc_ids=[str(x) for x in rt.get("relevant_doc_ids") or []],
                    flags=[str(x) for x in rt.get("flags") or []],
                )
            )
        title = str(item.get("title") or "")
        run = item.get("run")
        convs.append(
            Conversation(
                id=str(item.get("id") or f"ragdive-{i:03d}-{_slug(title or str(i))}"),
                suite=str(item.get("suite") or "core"),
                run=run if isinstance(run, int) and not isinstance(run, bool) else 0,
                role=str(item["role"]) if item.get("role") else None,
                source=str(item.get("source") or "ragdive"),
                document_id=_item_doc_id(item, i),
                turns=turns,
            )
        )
    return convs


def import_ragdive_documents(data: Iterable[Mapping[str, Any]]) -> list[Document]:
    """The documents carried by RAG-DIVE items (one per distinct document id)."""
    docs: dict[str, Document] = {}
    for i, item in enumerate(data):
        doc_id = _item_doc_id(item, i)
        if doc_id not in docs:
            docs[doc_id] = Document(id=doc_id, title=str(item.get("title") or ""), text=str(item.get("document") or ""))
    return list(docs.values())


def read_ragdive(path: str | Path) -> list[dict[str, Any]]:
    """Load a RAG-DIVE file: a JSON list, or JSONL (one item a line, as the reference generator writes)."""
    p = Path(path)
    text = read_text(p, RagdiveFormatError)
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise RagdiveFormatError(f"{p}: invalid JSON: {e.msg} (line {e.lineno})") from None
        if not isinstance(data, list):
            raise RagdiveFormatError(f"{p}: expected a JSON list of conversations")
        return data
    items: list[dict[str, Any]] = []
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            items.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise RagdiveFormatError(f"{p}:{no}: invalid JSON: {e.msg}") from None
    return items


def write_ragdive(
    path: str | Path,
    convs: Iterable[Conversation],
    documents: Iterable[Document] | Mapping[str, Document],
    *,
    jsonl: bool | None = None,
) -> Path:
    """Write conversations as a RAG-DIVE JSON list (JSONL when ``jsonl`` or the suffix is ``.jsonl``)."""
    p = Path(path)
    items = export_ragdive(convs, documents)
    as_jsonl = p.suffix == ".jsonl" if jsonl is None else jsonl
    text = (
        "".join(json.dumps(it, ensure_ascii=False) + "\n" for it in items) if as_jsonl
        else json.dumps(items, ensure_ascii=False, indent=2) + "\n"
    )
    with atomic_open(p) as fh:
        fh.write(text)
    return p


def load_ragdive(path: str | Path) -> tuple[list[Conversation], list[Document]]:
    """Read a RAG-DIVE file into conversations and the documents they were generated from."""
    data = read_ragdive(path)
    return import_ragdive(data), import_ragdive_documents(data)
