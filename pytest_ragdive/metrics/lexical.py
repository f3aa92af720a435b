"""Lexical (token-overlap) metrics: answer_f1, exact_match, correctness,
faithfulness and context_recall.

Everything here is deterministic pure Python: no model, no network, no numpy.
The text rules (normaliser, tokens, match terms, sentences, citation markers,
abstention and unanswerable) live in :mod:`.text` and are re-exported here.
Citation markers such as ``[doc-1]`` are not answer content: every metric
strips them before scoring.

Graded grounding (faithfulness)
    The answer's *asserted units* (``text.asserted_units``: its clauses minus
    abstentions, courtesy and fillers) are scored one by one. A unit's
    *support* is the share of its distinct match terms (``text.match_terms``)
    found in the union of the retrieved contexts. With a conversation, a unit
    is also supported by one earlier message that restates it: its support is
    at least the share of its terms in the single best conversation text (an
    earlier user message, or an earlier answer's grounded unit) when that share
    reaches ``REPEAT_THRESHOLD``. Faithfulness is the mean unit support
    weighted by the unit's number of distinct terms, so a long unsupported
    sentence weighs more than a short connective one.

Graded coverage (correctness)
    ``coverage``: the share of the ground truth's distinct match terms that
    the answer's asserted units contain (capped: a long reference is covered
    by ``COVERAGE_CAP`` of its terms). ``correctness`` multiplies it by the
    answer's support (its faithfulness), since a complete answer that also
    invents is not correct.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from typing import Protocol

from .text import (
    STOPWORDS,
    asserted_units,
    citation_markers,
    content_tokens,
    has_abstention,
    is_abstention,
    is_unanswerable,
    match_terms,
    normalize_answer,
    split_sentences,
    strip_citations,
    tokens,
)

__all__ = [
    "CORRECTNESS_THRESHOLD",
    "COVERAGE_CAP",
    "GROUNDED_UNIT",
    "REPEAT_THRESHOLD",
    "STOPWORDS",
    "answer_f1",
    "citation_markers",
    "content_tokens",
    "context_recall",
    "correctness",
    "coverage",
    "exact_match",
    "faithfulness",
    "grounded_units",
    "has_abstention",
    "is_abstention",
    "is_unanswerable",
    "normalize_answer",
    "split_sentences",
    "strip_citations",
    "tokens",
    "unit_support",
]

#: coverage of the ground truth at which an answer counts as correct (forgetfulness probe)
CORRECTNESS_THRESHOLD = 0.6
#: ground-truth terms an answer must state for full coverage of a long reference
COVERAGE_CAP = 12
#: strict support at which an earlier answer's unit is grounded (and then supports later turns)
GROUNDED_UNIT = 0.8
#: share of a unit's terms one conversation text must hold for the unit to count as a restatement
REPEAT_THRESHOLD = 0.8

# words that answer "yes/no" or keep a conversation going: they assert nothing to ground
_DISCOURSE = frozenset({"yes", "yeah", "ok", "okay", "sure", "please", "thank", "thanks", "certainly", "indeed"})


class _HasText(Protocol):
    @property
    def text(self) -> str: ...


ContextLike = str | _HasText


# --------------------------------------------------------------------------- token sets


@lru_cache(maxsize=4096)
def _content_set(text: str) -> frozenset[str]:
    return frozenset(content_tokens(text))


@lru_cache(maxsize=4096)
def _token_set(text: str) -> frozenset[str]:
    return frozenset(tokens(text))


@lru_cache(maxsize=8192)
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
    merged; citation markers stripped), so that a restatement in other words ("four
    hours" for "4 hours", "receives" for "gets") is not a miss; stopwords do not count.
    When either side has no term, the SQuAD-normalised tokens are compared instead, and
    when either side has no token at all, 1.0 if both are empty else 0.0 (SQuAD v2). When
    the ground truth marks the question unanswerable, 1.0 iff the answer abstains (SQuAD
    v2's no-answer rule; a partial answer that says it cannot answer counts).
    """
    if is_unanswerable(ground_truth):
        return float(has_abstention(answer))
    answer = strip_citations(answer)
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
    """1.0 when the SQuAD-normalised answer (citation markers stripped) equals the
    normalised ground truth, else 0.0. Higher is better. On an unanswerable ground truth,
    1.0 iff the answer abstains."""
    if is_unanswerable(ground_truth):
        return float(has_abstention(answer))
    return float(normalize_answer(strip_citations(answer)) == normalize_answer(ground_truth))


def coverage(answer: str, ground_truth: str) -> float | None:
    """Graded coverage of the ground truth's content by the answer, in [0, 1].

    The distinct match terms of the ground truth found in the answer's asserted units,
    divided by the number of ground-truth terms capped at ``COVERAGE_CAP`` (12): a short
    ground truth must be covered whole, a long reference (written to be complete, in more
    words than an answer needs) is covered once 12 of its terms are stated. A pure
    abstention covers nothing (0.0). A ground truth made only of stopwords uses all its
    normalised tokens instead. None when the ground truth has no token at all. Unanswerable
    ground truths are ``correctness``'s concern."""
    gold = _terms(ground_truth)
    use_tokens = not gold
    if use_tokens:
        gold = _token_set(ground_truth)
    if not gold:
        return None
    if is_abstention(answer):
        return 0.0
    have: set[str] = set()
    for unit in asserted_units(strip_citations(answer)):
        have |= _token_set(unit) if use_tokens else _terms(unit)
    return min(1.0, len(gold & have) / min(len(gold), COVERAGE_CAP))


def correctness(answer: str, ground_truth: str, support: float | None = None) -> float | None:
    """How correct and complete the answer is against the ground truth. Higher is better, in [0, 1].

    - Unanswerable ground truth (``is_unanswerable``): 1.0 when the answer says it cannot
      answer (a pure abstention, or a partial answer with an abstaining clause), else 0.0.
    - Answerable: ``coverage`` (a pure abstention covers nothing, so not answering an
      answerable question costs correctness), times ``support`` when given: the answer's
      faithfulness, so that what it asserts with nothing to support it makes it less correct
      (an answer that states the reference and adds invented details is not fully correct).
      ``score_turn`` passes the turn's faithfulness when the turn has contexts.
    - None when there is no ground truth (no token at all).
    """
    if is_unanswerable(ground_truth):
        return float(has_abstention(answer))
    cov = coverage(answer, ground_truth)
    if cov is None:
        return None
    return cov if support is None else cov * support


def _support(terms: frozenset[str], context_terms: frozenset[str], conversation: Sequence[frozenset[str]]) -> tuple[float, int | None]:
    """``unit_support`` of a unit's terms, and which conversation text raised it (None: the contexts)."""
    s = len(terms & context_terms) / len(terms)
    by: int | None = None
    for i, text in enumerate(conversation):
        r = len(terms & text) / len(terms)
        if r >= REPEAT_THRESHOLD - 1e-9 and r > s:
            s, by = r, i
    return s, by


def unit_support(unit: str, context_terms: frozenset[str], conversation: Sequence[frozenset[str]] = ()) -> float | None:
    """Support of one asserted unit in [0, 1] (None when it has no term): the share of its
    distinct terms in ``context_terms``, raised to the share held by the single best
    conversation text when that share reaches ``REPEAT_THRESHOLD``."""
    terms = _terms(unit)
    if not terms:
        return None
    return _support(terms, context_terms, conversation)[0]


def _union_terms(contexts: Iterable[ContextLike]) -> frozenset[str]:
    return _union_of(tuple(_context_text(c) for c in contexts))


@lru_cache(maxsize=1024)
def _union_of(texts: tuple[str, ...]) -> frozenset[str]:
    out: set[str] = set()
    for t in texts:
        out |= _terms(t)
    return frozenset(out)


def _unit_rows(
    answer: str, ctx: frozenset[str], conv: Sequence[frozenset[str]]
) -> Iterator[tuple[str, frozenset[str], float, int | None]]:
    """(unit, its terms, its support, the conversation text that raised it) for each asserted
    unit with a term: the one lexical support rule, read by the score and by the evidence."""
    for unit in asserted_units(strip_citations(answer)):
        terms = _terms(unit)
        if terms:
            s, by = _support(terms, ctx, conv)
            yield unit, terms, s, by


def faithfulness(
    answer: str, contexts: Iterable[ContextLike], conversation: Iterable[str] = ()
) -> float | None:
    """How much of what the answer asserts the contexts (and the conversation) support.
    Higher is better, in [0, 1].

    The mean ``unit_support`` of the answer's asserted units (``text.asserted_units``,
    citation markers stripped), weighted by each unit's number of distinct match terms.
    ``conversation``: texts of the conversation so far that count as support when a unit
    restates one of them (earlier user messages, grounded units of earlier answers); leave
    it empty for the strict per-turn figure. With no context and no conversation nothing is
    supported (0.0). A pure abstention asserts nothing unsupported: 1.0 (it costs
    correctness instead). None when the answer is None. :func:`support_units` gives the
    same per unit, with its evidence (``weighted_support`` of it is this value).
    """
    if answer is None:
        return None
    ctx = _union_terms(contexts)
    conv = [t for t in (_terms(x) for x in conversation) if t]
    num = den = 0.0
    for _, terms, s, _ in _unit_rows(answer, ctx, conv):
        w = len(terms)
        num += w * s
        den += w
    return num / den if den else 1.0


def grounded_units(answer: str | None, contexts: Iterable[ContextLike]) -> list[str]:
    """The asserted units of ``answer`` whose strict support reaches ``GROUNDED_UNIT``: what
    an earlier answer established, so that later turns may repeat it."""
    if not answer:
        return []
    ctx = _union_terms(contexts)
    out = []
    for unit in asserted_units(strip_citations(answer)):
        s = unit_support(unit, ctx)
        if s is not None and s >= GROUNDED_UNIT - 1e-9:
            out.append(unit)
    return out


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
