"""Why a turn scored as it did: the evidence behind faithfulness and correctness.

:func:`support_units` runs the support rule of :mod:`.lexical` unit by unit and says,
for every asserted unit of the answer, how well it is supported and by what: the
retrieved context that holds most of its terms (its id, and the sentence of it that
holds most of them: the *span*), or the earlier conversation text that restates it.
:func:`weighted_support` of those units is exactly ``lexical.faithfulness`` of the same
inputs (the score is read from the same rows: the evidence never changes a score).
:func:`reference_coverage` says, per sentence of the ground truth, how much of it the
answer states (what correctness covered).

The contract for another support rule (a semantic one, say): return one
:class:`~pytest_ragdive.core.records.Support` per asserted unit with its ``score``,
``weight``, ``verdict`` and, where it knows them, ``by``/``context_id``/``span``;
faithfulness is then ``weighted_support`` of them, and the reports draw the same
highlights from it. Deterministic pure Python, like the rule itself.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any, TypeVar

from pydantic import BaseModel

from ..core.records import Coverage, Evidence, Support, SupportVerdict
from .lexical import GROUNDED_UNIT, ContextLike, _terms, _union_terms, _unit_rows
from .text import asserted_units, is_abstention, is_unanswerable, match_terms, split_sentences, strip_citations, tokens

__all__ = ["PARTIAL_SUPPORT", "reference_coverage", "support_units", "turn_evidence", "verdict_of", "weighted_support"]

#: support below which a unit counts as unsupported (between it and ``GROUNDED_UNIT``: partly supported)
PARTIAL_SUPPORT = 0.5
SPAN_CHARS = 240  # a matched span is clipped to this many characters
MISSING_WORDS = 8  # at most this many missing words per unit or fact
_SEP_RE = re.compile(r"[-/–—]")  # noqa: RUF001 (the dashes match_terms splits at)


_R = TypeVar("_R", bound=BaseModel)


def _record(cls: type[_R], **values: Any) -> _R:
    """``cls(**values)`` with an empty fields-set: a scored conversation holds several of these
    per turn until the end of the run, and the set of the given field names was a third of
    each one's size (nothing reads a record's fields-set; equality and JSON ignore it)."""
    record = cls(**values)
    object.__setattr__(record, "__pydantic_fields_set__", set())  # BaseModel's own attribute
    return record


def verdict_of(score: float) -> SupportVerdict:
    """The lexical rule's verdict on a unit's support."""
    if score >= GROUNDED_UNIT - 1e-9:
        return "supported"
    return "partial" if score >= PARTIAL_SUPPORT - 1e-9 else "unsupported"


@lru_cache(maxsize=8192)
def _clip(text: str, n: int = SPAN_CHARS) -> str:
    """(Cached: a span is a sentence of a retrieved context, and contexts repeat across
    conversations, so their spans are one string each, not one per turn held.)"""
    t = " ".join(text.split())
    return t if len(t) <= n else t[: n - 1] + "…"


def _words(text: str, terms: frozenset[str]) -> list[str]:
    """The words of ``text`` whose match term is in ``terms``, in order, each once."""
    out: list[str] = []
    seen: set[str] = set()
    for word in tokens(_SEP_RE.sub(" ", text)):
        t = match_terms(word)
        if t and t[0] in terms and t[0] not in seen:
            seen.add(t[0])
            out.append(sys.intern(word))
            if len(out) == MISSING_WORDS:
                break
    return out


def _locate(answer: str, unit: str, start: int) -> tuple[int, int] | None:
    """Where ``unit`` stands in ``answer`` at or after ``start`` (citation markers and spacing may differ)."""
    at = answer.find(unit, start)
    if at >= 0:
        return at, at + len(unit)
    words = unit.split()
    if not words:
        return None
    pattern = re.compile(r"(?:\s|\[[^\]\n]{0,80}\])+".join(re.escape(w) for w in words))
    m = pattern.search(answer, start) or pattern.search(answer)
    return (m.start(), m.end()) if m else None


def _best_context(terms: frozenset[str], contexts: Sequence[ContextLike]) -> tuple[str | None, str, int]:
    """(id, span, shared terms) of the context holding most of ``terms`` (the first on ties),
    the span being its sentence that holds most of them."""
    best: tuple[int, int] = (0, -1)
    for i, c in enumerate(contexts):
        shared = len(terms & _terms(c if isinstance(c, str) else c.text))
        if shared > best[0]:
            best = (shared, i)
    if best[1] < 0:
        return None, "", 0
    c = contexts[best[1]]
    text = c if isinstance(c, str) else c.text
    cid = getattr(c, "id", None) or f"context {best[1] + 1}"
    sentences = split_sentences(text) or [text]
    span = max(sentences, key=lambda s: len(terms & _terms(s)))  # max keeps the first on ties
    return cid, _clip(span), best[0]


def support_units(
    answer: str | None, contexts: Iterable[ContextLike], conversation: Iterable[str] = ()
) -> list[Support]:
    """One :class:`Support` per asserted unit of ``answer`` with a match term (the units
    ``lexical.faithfulness`` weighs), in answer order, by the lexical support rule."""
    if not answer:
        return []
    ctxs = list(contexts)
    texts = [x for x in conversation if _terms(x)]
    conv = [_terms(x) for x in texts]
    ctx = _union_terms(ctxs)
    out: list[Support] = []
    cursor = 0
    for unit, terms, score, by in _unit_rows(answer, ctx, conv):
        where = _locate(answer, unit, cursor)
        if where is not None:
            cursor = where[1]
        if by is not None:
            source, cid, span, held = "conversation", None, _clip(texts[by]), terms & conv[by]
        else:
            cid, span, shared = _best_context(terms, ctxs)
            source = "context" if shared else "none"
            held = terms & ctx
        out.append(_record(
            Support, text=unit, start=None if where is None else where[0], end=None if where is None else where[1],
            score=score, weight=float(len(terms)), verdict=verdict_of(score), by=source,
            context_id=cid, span=span, missing=_words(unit, terms - held), rule="lexical",
        ))
    return out


def weighted_support(units: Iterable[Support]) -> float:
    """The answer's faithfulness from its units: ``sum(weight * score) / sum(weight)``
    (1.0 when no unit asserts anything: a pure abstention)."""
    num = den = 0.0
    for u in units:
        num += u.weight * u.score
        den += u.weight
    return num / den if den else 1.0


def reference_coverage(answer: str | None, ground_truth: str) -> list[Coverage]:
    """Per sentence of the ground truth with a match term: the share of its terms the
    answer's asserted units state, and the words it misses. Empty for an unanswerable
    ground truth (correctness then asks for an abstention)."""
    if not ground_truth or is_unanswerable(ground_truth):
        return []
    have: set[str] = set()
    if answer and not is_abstention(answer):
        for unit in asserted_units(strip_citations(answer)):
            have |= _terms(unit)
    out = []
    for sentence in split_sentences(ground_truth):
        terms = _terms(sentence)
        if terms:
            out.append(_record(Coverage, text=sentence, covered=len(terms & have) / len(terms),
                               missing=_words(sentence, terms - have)))
    return out


def turn_evidence(
    answer: str | None, contexts: Iterable[ContextLike], conversation: Iterable[str], ground_truth: str
) -> Evidence:
    """The evidence of one turn: its units' support (against the contexts and the
    conversation so far, as the gated faithfulness) and the reference's coverage."""
    return _record(Evidence, support=support_units(answer, contexts, conversation),
                   reference=reference_coverage(answer, ground_truth))
