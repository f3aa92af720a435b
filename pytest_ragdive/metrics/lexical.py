"""Lexical (token-overlap) metrics: answer_f1, exact_match and context_recall, and
the term sets the grounding rule (:mod:`.grounding`) compares.

Everything here is deterministic pure Python: no model, no network, no numpy.
The text rules (normaliser, tokens, match terms, sentences, citation markers,
abstention, courtesy and unanswerable) live in :mod:`.text` and are re-exported here.
Citation markers such as ``[doc-1]`` are not answer content, and neither is courtesy
("Happy to help!"): answer_f1 and exact_match compare ``text.substantive_text``.
Faithfulness and correctness (lexical and semantic evidence) are in :mod:`.grounding`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Protocol

from ..core.memo import memo
from .text import (
    STOPWORDS,
    citation_markers,
    content_tokens,
    has_abstention,
    is_abstention,
    is_no_answer,
    is_unanswerable,
    match_terms,
    normalize_answer,
    split_sentences,
    strip_citations,
    substantive_text,
    tokens,
)

__all__ = [
    "STOPWORDS",
    "answer_f1",
    "citation_markers",
    "content_tokens",
    "context_recall",
    "exact_match",
    "has_abstention",
    "is_abstention",
    "is_no_answer",
    "is_unanswerable",
    "normalize_answer",
    "split_sentences",
    "strip_citations",
    "substantive_text",
    "tokens",
]

# words that answer "yes/no" or keep a conversation going: they assert nothing to ground
_DISCOURSE = frozenset({"yes", "yeah", "ok", "okay", "sure", "please", "thank", "thanks", "certainly", "indeed"})


class _HasText(Protocol):
    @property
    def text(self) -> str: ...


ContextLike = str | _HasText


# --------------------------------------------------------------------------- token sets


@memo(maxsize=4096)
def _content_set(text: str) -> frozenset[str]:
    return frozenset(content_tokens(text))


@memo(maxsize=4096)
def _token_set(text: str) -> frozenset[str]:
    return frozenset(tokens(text))


@memo(maxsize=8192)
def _terms(text: str) -> frozenset[str]:
    return frozenset(match_terms(text)) - _DISCOURSE


def _covered(needles: frozenset[str], haystack: frozenset[str], ratio: float) -> bool:
    return bool(needles) and len(needles & haystack) >= ratio * len(needles) - 1e-9


def _context_text(c: ContextLike) -> str:
    return c if isinstance(c, str) else c.text


# --------------------------------------------------------------------------- answer metrics


def answer_f1(answer: str, ground_truth: str) -> float:
    """Token F1 of the answer against the ground truth, on match terms. Higher is better, in [0, 1].

    F1 = 2PR/(P+R) over the multisets of the two texts' match terms (``text.match_terms``:
    SQuAD-normalised content tokens, stemmed, number words as digits, general equivalents
    merged) of the answer's ``text.substantive_text`` (citation markers, courtesy and
    fillers left out: "Happy to help!" costs nothing), so that a restatement in other
    words ("four hours" for "4 hours", "receives" for "gets") is not a miss; stopwords do
    not count.
    When either side has no term, the SQuAD-normalised tokens are compared instead, and
    when either side has no token at all, 1.0 if both are empty else 0.0 (SQuAD v2). When
    the ground truth marks the question unanswerable, 1.0 iff the answer abstains (SQuAD
    v2's no-answer rule; a partial answer that says it cannot answer counts).
    Cached per (answer, ground truth): the same answer to the same question scores once.
    """
    return _answer_f1(answer, ground_truth)


@memo(maxsize=4096)
def _answer_f1(answer: str, ground_truth: str) -> float:
    if is_unanswerable(ground_truth):
        return float(has_abstention(answer))
    answer = substantive_text(answer)
    pred, gold = list(match_terms(answer)), list(match_terms(ground_truth))
    if not pred or not gold:
        pred, gold = tokens(answer), tokens(ground_truth)
    if not pred or not gold:
        return float(pred == gold)
    common = Counter(pred) & Counter(gold)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred)
    recall = same / len(gold)
    return 2 * precision * recall / (precision + recall)


def exact_match(answer: str, ground_truth: str) -> float:
    """1.0 when the SQuAD-normalised answer (citation markers, courtesy and fillers left out) equals the
    normalised ground truth, else 0.0. Higher is better. On an unanswerable ground truth,
    1.0 iff the answer abstains. Cached per (answer, ground truth)."""
    return _exact_match(answer, ground_truth)


@memo(maxsize=4096)
def _exact_match(answer: str, ground_truth: str) -> float:
    if is_unanswerable(ground_truth):
        return float(has_abstention(answer))
    return float(normalize_answer(substantive_text(answer)) == normalize_answer(ground_truth))


def context_recall(ground_truth: str, contexts: Iterable[ContextLike]) -> float | None:
    """Share of the ground truth's distinct content tokens present in the union of the
    retrieved contexts' tokens. Higher is better. 0.0 with no context; None when the ground
    truth has no content token or marks the question unanswerable."""
    if is_unanswerable(ground_truth):
        return None
    gold = _content_set(ground_truth or "")
    if not gold:
        return None
    union: set[str] = set()
    for c in contexts:
        union |= _token_set(_context_text(c))
    return len(gold & union) / len(gold)
