"""Why a turn scored as it did: the evidence behind faithfulness and correctness, as records.

:func:`support_units` reads the one support rule of :mod:`.grounding` (lexical and
semantic evidence, or lexical alone) unit by unit and says, for every asserted unit of
the answer, how well it is supported and by what: the retrieved context and the span of
it (one sentence, or two adjacent ones) that supported it, or the earlier conversation
text that restates it. :func:`weighted_support` of those units is exactly the rule's
``faithfulness_of`` (the score is read from the same rows: the evidence never changes a
score). :func:`reference_coverage` says, per fact of the ground truth, how much of it the
answer states (what correctness covered), by the coverage rule.

The contract for another support rule: return one
:class:`~pytest_ragdive.core.records.Support` per asserted unit with its ``score``,
``weight``, ``verdict`` and, where it knows them, ``by``/``context_id``/``span``;
faithfulness is then ``weighted_support`` of them, and the reports draw the same
highlights from it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel

from ..core.memo import memo
from ..core.records import Coverage, Evidence, Support, SupportVerdict
from .grounding import COVERAGE_RULE, GROUNDED_UNIT, SUPPORT_RULE, Rule, fact_evidence, unit_supports
from .lexical import ContextLike, _context_text, _terms
from .text import asserted_units, is_abstention, is_unanswerable, match_terms, strip_citations, tokens

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


@memo(maxsize=8192)
def _clip(text: str, n: int = SPAN_CHARS) -> str:
    """(Cached: a span is a sentence of a retrieved context, and contexts repeat across
    conversations, so their spans are one string each, not one per turn held.)"""
    t = " ".join(text.split())
    return t if len(t) <= n else t[: n - 1] + "…"


@memo(maxsize=8192)
def _word_terms(text: str) -> tuple[tuple[str, str], ...]:
    """Each word of ``text`` that has a match term, with its first (once per text: units and
    facts repeat their sources' sentences across turns)."""
    out = []
    for word in tokens(_SEP_RE.sub(" ", text)):
        t = match_terms(word)
        if t:
            out.append((sys.intern(word), t[0]))
    return tuple(out)


def _words(text: str, terms: frozenset[str]) -> list[str]:
    """The words of ``text`` whose match term is in ``terms``, in order, each once."""
    out: list[str] = []
    if not terms:
        return out
    seen: set[str] = set()
    for word, t in _word_terms(text):
        if t in terms and t not in seen:
            seen.add(t)
            out.append(word)
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


def support_units(
    answer: str | None, contexts: Iterable[ContextLike], conversation: Iterable[str] = (), rule: Rule = SUPPORT_RULE
) -> list[Support]:
    """One :class:`Support` per asserted unit of ``answer`` with a match term (the units
    faithfulness weighs), in answer order, by the support rule ``rule``."""
    if not answer:
        return []
    ctxs = list(contexts)
    texts = [x for x in conversation if _terms(x)]  # the rule indexes the conversation texts with a term
    union: set[str] = set()
    for c in ctxs:
        union |= _terms(_context_text(c))
    out: list[Support] = []
    cursor = 0
    for s in unit_supports(answer, ctxs, texts, rule):
        terms = _terms(s.unit)
        where = _locate(answer, s.unit, cursor)
        if where is not None:
            cursor = where[1]
        cid: str | None = None
        span = ""
        if s.source == "conversation" and s.conversation is not None:
            by, span, held = "conversation", _clip(texts[s.conversation]), terms & _terms(texts[s.conversation])
        elif s.source == "contexts" and s.context is not None:
            c = ctxs[s.context]
            text = _context_text(c)
            cid = getattr(c, "id", None) or f"context {s.context + 1}"
            span = _clip(text[s.span[0]:s.span[1]] if s.span is not None else text)
            by, held = "context", terms & union
        else:
            by, held = "none", terms & union
        out.append(_record(
            Support, text=s.unit, start=None if where is None else where[0], end=None if where is None else where[1],
            score=s.score, weight=float(s.weight), verdict=verdict_of(s.score), by=by,
            context_id=cid, span=span, missing=_words(s.unit, terms - held), rule=rule.label(),
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


def reference_coverage(answer: str | None, ground_truth: str, rule: Rule = COVERAGE_RULE) -> list[Coverage]:
    """Per fact of the ground truth with a match term (its asserted units): how much of it
    the answer states by the coverage rule (times the share of its key facts held:
    :mod:`.keyfacts`), and the words of it the answer's units do not hold. Empty for an unanswerable ground truth (correctness then asks for an abstention).
    New records each call, from rows cached per (answer, ground truth, rule)."""
    return [_record(Coverage, text=text, covered=covered, missing=list(missing))
            for text, covered, missing in _coverage_rows(answer, ground_truth, rule)]


@memo(maxsize=4096)
def _coverage_rows(answer: str | None, ground_truth: str, rule: Rule) -> tuple[tuple[str, float, tuple[str, ...]], ...]:
    if not ground_truth or is_unanswerable(ground_truth):
        return ()
    facts = asserted_units(ground_truth)
    units: list[str] = [] if not answer or is_abstention(answer) else asserted_units(strip_citations(answer))
    have: set[str] = set()
    for u in units:
        have |= _terms(u)
    out = []
    for f in fact_evidence(facts, units, semantic=rule.semantic, only_unsure=not rule.needs_cosine_when_lexical_full):
        covered = rule.score(f.lexical, f.cosine) * f.key if units else 0.0  # key facts: keyfacts.py
        out.append((f.fact, covered, tuple(_words(f.fact, _terms(f.fact) - have))))
    return tuple(out)


def turn_evidence(
    answer: str | None,
    contexts: Iterable[ContextLike],
    conversation: Iterable[str],
    ground_truth: str,
    support: Rule = SUPPORT_RULE,
    coverage: Rule = COVERAGE_RULE,
) -> Evidence:
    """The evidence of one turn: its units' support (against the contexts and the
    conversation so far, as the gated faithfulness) and the reference's coverage."""
    return _record(Evidence, support=support_units(answer, contexts, conversation, support),
                   reference=reference_coverage(answer, ground_truth, coverage))
