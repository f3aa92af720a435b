"""BM25 retrieval over chunks with the ``bm25s`` package.

Each turn of the query is scored separately and the scores are added with the
turn's weight (see :meth:`Query.weighted`): the new message 1, the turn before
it ``history_weight``, older ones less and less.
"""

from __future__ import annotations

import bm25s
import numpy as np

from pytest_ragdive import Context

from .chunking import Chunk
from .history import Query
from .text import tokenize, tokenize_query


class BM25Retriever:
    def __init__(self, chunks: list[Chunk], k1: float = 1.2, b: float = 0.75, history_weight: float = 0.6) -> None:
        if not chunks:
            raise ValueError("nothing to index")
        self.chunks = chunks
        self.history_weight = history_weight
        self._bm25 = bm25s.BM25(k1=k1, b=b)
        # the title is indexed with every chunk of its document
        self._bm25.index([tokenize(f"{c.title}. {c.text}") for c in chunks], show_progress=False)

    def scores(self, query: Query | str) -> np.ndarray:
        q = query if isinstance(query, Query) else Query(current=query)
        total = np.zeros(len(self.chunks), dtype=np.float64)
        for text, weight in q.weighted(self.history_weight):
            tokens = tokenize_query(text)
            if tokens and weight > 0:
                total += weight * self._bm25.get_scores(tokens).astype(np.float64)
        return total

    def search(self, query: Query | str, top_k: int = 5) -> list[Context]:
        """The ``top_k`` best chunks, best first (ties keep corpus order); zero-score chunks are left out."""
        s = self.scores(query)
        order = sorted(range(len(s)), key=lambda i: (-s[i], i))[:top_k]
        return [
            Context(
                id=self.chunks[i].id,
                doc_id=self.chunks[i].doc_id,
                text=self.chunks[i].text,
                score=round(float(s[i]), 4),
            )
            for i in order
            if s[i] > 0
        ]
