"""What the judges see: the retrieved contexts, the reference document and the
transcript, every untrusted text fenced (:func:`~pytest_ragdive.llm.prompts.fence`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...core.records import Context, Conversation, Document, Turn
from ...llm.prompts import fence

__all__ = ["MAX_REFERENCE_CHARS", "contexts_block", "reference_text", "transcript"]

# a reference document longer than this is cut (the judge sees a note saying so)
MAX_REFERENCE_CHARS = 24_000


def contexts_block(contexts: Sequence[Context]) -> str:
    return "\n\n".join(f"Context {i}:\n{fence(c.text, f'context {i}')}" for i, c in enumerate(contexts, start=1))


def reference_text(conv: Conversation, turn: Turn, documents: Mapping[str, Document]) -> str:
    """The reference document: the conversation's document, else the turn's relevant documents."""
    doc = documents.get(conv.document_id) if conv.document_id else None
    if doc is not None:
        window = conv.window
        if window is not None and len(doc.text) > MAX_REFERENCE_CHARS:
            # a generated conversation about a long document: the part the
            # simulator saw (and took its ground truths from)
            start, end = window.start, window.end
            mid = (start + end) // 2
            lo = max(0, min(mid - MAX_REFERENCE_CHARS // 2, len(doc.text) - MAX_REFERENCE_CHARS))
            texts = [doc.text[lo : lo + MAX_REFERENCE_CHARS]]
        else:
            texts = [doc.text]
    else:
        texts = [documents[d].text for d in dict.fromkeys(turn.relevant_doc_ids) if d in documents]
    text = "\n\n".join(t for t in texts if t)
    if len(text) > MAX_REFERENCE_CHARS:
        text = text[:MAX_REFERENCE_CHARS] + "\n[... document cut here ...]"
    return text


def transcript(turns: Sequence[Turn]) -> str:
    """The rag_input/answer transcript, each message fenced (labels stay outside the fences)."""
    parts = []
    for n, t in enumerate(turns, start=1):
        parts.append(f"Turn {n}, user:\n{fence(t.rag_input, f'user {n}')}")
        parts.append(f"Turn {n}, chatbot:\n{fence(t.answer or '', f'chatbot {n}')}")
    return "\n\n".join(parts)
