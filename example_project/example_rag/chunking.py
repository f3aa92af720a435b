"""Split documents into overlapping chunks of whole sentences.

A chunk packs consecutive sentences up to ``size`` words; the next chunk starts
with the trailing sentences of the previous one that fit in ``overlap`` words.
A sentence longer than ``size`` becomes a chunk of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_ragdive import Document

from .corpus import is_archived
from .text import split_sentences, word_count


@dataclass(frozen=True)
class Chunk:
    id: str  # "<doc_id>#<n>"
    doc_id: str
    title: str
    text: str
    archived: bool = False


def _pack(sentences: list[str], size: int, overlap: int) -> list[list[str]]:
    groups: list[list[str]] = []
    i = 0
    while i < len(sentences):
        group = [sentences[i]]
        words = word_count(sentences[i])
        j = i + 1
        while j < len(sentences) and words + word_count(sentences[j]) <= size:
            group.append(sentences[j])
            words += word_count(sentences[j])
            j += 1
        groups.append(group)
        if j >= len(sentences):
            break
        # step back over trailing sentences that fit in the overlap, but always advance
        back, k = 0, j
        while k - 1 > i and back + word_count(sentences[k - 1]) <= overlap:
            back += word_count(sentences[k - 1])
            k -= 1
        i = max(k, i + 1)
    return groups


def chunk_document(doc: Document, size: int = 80, overlap: int = 20) -> list[Chunk]:
    if size < 1:
        raise ValueError("chunk size must be at least 1 word")
    if not 0 <= overlap < size:
        raise ValueError("chunk overlap must be >= 0 and smaller than the chunk size")
    groups = _pack(split_sentences(doc.text), size, overlap)
    archived = is_archived(doc)
    return [
        Chunk(id=f"{doc.id}#{n}", doc_id=doc.id, title=doc.title, text=" ".join(g), archived=archived)
        for n, g in enumerate(groups)
    ]


def chunk_corpus(docs: list[Document], size: int = 80, overlap: int = 20) -> list[Chunk]:
    return [c for d in docs for c in chunk_document(d, size, overlap)]
