"""Retrieval metrics: recall_at_k, mrr, ndcg_at_k and context_precision.

recall_at_k, mrr and ndcg_at_k work on the ranked list of *distinct* source
documents of the retrieved contexts (``Context.source_id``, a document that
comes back as several chunks counts once, at its first rank), compared with a
turn's ``relevant_doc_ids``. recall_at_k and ndcg_at_k look at the top ``k`` of
them: the config's ``recall_k``, seed 001's k = 5 by default (``RECALL_K``), with
recall_at_3 and recall_at_10 reported beside it (seed 001's ``k_values = [3, 5, 10]``),
not at every document the target happened to return.

**A turn with no relevant document** (no ``relevant_doc_ids``: an unanswerable
question, a chit-chat turn, a case without retrieval labels) follows one rule for
every rank metric: it is not applicable (None) and left out of the means, never
1.0 (seed 001's sketch returns 1.0, which would reward any retrieval on a question
with nothing to find) and never 0.0. context_precision works on the contexts
themselves (chunks, in rank order) and falls back to lexical relevance
against the ground truth when the turn names no relevant document.

All are pure Python, higher is better, in [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from ..core.records import Context
from .lexical import _content_set, _covered, _token_set, is_unanswerable

__all__ = [
    "LEXICAL_RELEVANCE_THRESHOLD",
    "RECALL_K",
    "context_precision",
    "distinct_source_ids",
    "is_relevant_context",
    "mrr",
    "ndcg_at_k",
    "recall_at_k",
]

#: the k of recall_at_k and ndcg_at_k unless the config sets ``recall_k`` (seed 001: recall@5)
RECALL_K = 5
#: share of the ground truth's content tokens a context must hold to count as relevant
#: (context_precision's fallback when a turn names no relevant document)
LEXICAL_RELEVANCE_THRESHOLD = 0.3


def _dedupe(ids: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for i in ids:
        if i not in seen:
            seen.add(i)
            out.append(i)
    return out


def distinct_source_ids(contexts: Iterable[Context]) -> list[str]:
    """The source document ids of ``contexts`` in rank order, each kept at its first rank."""
    return _dedupe(c.source_id for c in contexts)


def _top(retrieved_ids: Sequence[str], k: int | None) -> list[str]:
    if k is not None and k < 1:
        raise ValueError(f"k must be a positive integer or None, got {k!r}")
    ids = _dedupe(retrieved_ids)
    return ids if k is None else ids[:k]


def recall_at_k(retrieved_ids: Sequence[str], relevant_ids: Iterable[str], k: int | None = None) -> float | None:
    """Share of the relevant documents found among the top ``k`` distinct retrieved
    documents (all retrieved when ``k`` is None). Higher is better. None when there is no
    relevant document; 0.0 when nothing was retrieved."""
    relevant = set(relevant_ids)
    if not relevant:
        return None
    top = set(_top(retrieved_ids, k))
    return len(top & relevant) / len(relevant)


def mrr(retrieved_ids: Sequence[str], relevant_ids: Iterable[str]) -> float | None:
    """Reciprocal rank (1/rank) of the first relevant document among the distinct retrieved
    documents; 0.0 when none is retrieved. Higher is better. None when there is no relevant
    document. (The mean over turns makes it the *mean* reciprocal rank.)"""
    relevant = set(relevant_ids)
    if not relevant:
        return None
    for rank, doc in enumerate(_dedupe(retrieved_ids), start=1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(retrieved_ids: Sequence[str], relevant_ids: Iterable[str], k: int | None = None) -> float | None:
    """Binary-relevance nDCG of the top ``k`` distinct retrieved documents (all when ``k`` is
    None). Higher is better.

    DCG = sum over ranks r <= k of rel_r / log2(r + 1), rel_r in {0, 1}; the ideal DCG puts
    min(k, |relevant|) relevant documents at ranks 1.. (|relevant| when ``k`` is None).
    nDCG = DCG / ideal DCG. None when there is no relevant document.
    """
    relevant = set(relevant_ids)
    if not relevant:
        return None
    top = _top(retrieved_ids, k)
    dcg = sum(1.0 / math.log2(rank + 1) for rank, doc in enumerate(top, start=1) if doc in relevant)
    n_ideal = len(relevant) if k is None else min(k, len(relevant))
    idcg = sum(1.0 / math.log2(rank + 1) for rank in range(1, n_ideal + 1))
    return dcg / idcg


def is_relevant_context(context: Context, relevant_ids: Iterable[str], ground_truth: str = "") -> bool:
    """Whether one retrieved context is relevant: its source id is in ``relevant_ids`` when
    that is non-empty; otherwise it holds >= 30% (``LEXICAL_RELEVANCE_THRESHOLD``) of the
    ground truth's distinct content tokens."""
    relevant = set(relevant_ids)
    if relevant:
        return context.source_id in relevant
    gold = _content_set(ground_truth or "")
    return _covered(gold, _token_set(context.text), LEXICAL_RELEVANCE_THRESHOLD)


def context_precision(contexts: Sequence[Context], relevant_ids: Iterable[str], ground_truth: str = "") -> float | None:
    """Rank-aware precision of the retrieved contexts: average precision over the contexts
    (chunks, not deduplicated) in rank order. Higher is better.

    AP = sum over the ranks k of relevant contexts of precision@k, divided by the number of
    relevant contexts retrieved; 0.0 when none is relevant. Relevance is
    ``is_relevant_context``: by source id when ``relevant_ids`` is non-empty, else lexical
    against the ground truth. None when there is no context, or when there is neither a
    relevant id nor an answerable ground truth with content to judge by.
    """
    if not contexts:
        return None
    relevant = set(relevant_ids)
    if not relevant and (is_unanswerable(ground_truth) or not _content_set(ground_truth or "")):
        return None
    hits = 0
    total = 0.0
    for rank, ctx in enumerate(contexts, start=1):
        if is_relevant_context(ctx, relevant, ground_truth):
            hits += 1
            total += hits / rank
    return total / hits if hits else 0.0
