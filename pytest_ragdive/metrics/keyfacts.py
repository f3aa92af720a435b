"""The key facts of a reference that correctness checks one by one: its numbers with
their units, its names and its negations. Coverage of the other words alone cannot make
an answer correct: an answer that says "4 euros per hour" to the reference "The deposit
is 150 euros" shares most of its words and none of its facts.

For one fact of the reference (an asserted unit) and the answer's asserted units:

- **a number** (a term with a digit, number words already digits: ``text.match_terms``)
  is present when one answer unit holds the same number and, where the reference gives
  one, its unit: the term right after the number ("150 euros": ``euro``) or a currency or
  percent sign stuck to it ("$19": ``dollar``), anywhere in that answer unit ("costs $19
  per month" holds "$19 a month");
- **a name** (a capitalised word after the first: ``windows.exact_terms``) is present
  when the answer holds it;
- **a negation** ("not", which "never", "no" and "don't" become) is present when the
  answer unit that best matches the fact (most of its other terms) holds it too;
- **a contradiction**: the fact asserts without negation and every answer unit that
  best matches it (at least half of its terms) negates one of its terms: a "not" right
  before it, within two terms ("is refundable" against "is not refundable"; "If you
  have no backup codes, request recovery" does not negate "Request recovery"). A
  contradicted fact counts as not covered at all. The determiner "no" negates the noun
  it introduces, not the predicate: its scope is that one term ("can be cancelled at no
  cost up to 2 hours" negates "cost", not "up", and does not contradict "can be
  cancelled free of charge up to 2 hours"; "with no projector" still contradicts "with
  a projector"). The contradiction is looked for in the answer units and in the
  stretches between their commas, which ever hold most of the fact: "needs 40 minutes,
  and whitening is not part of a cleaning" does not contradict "A cleaning takes 40
  minutes".

:func:`key_share` is the share of the fact's key terms present (1.0 for a fact with
none, 0.0 when contradicted); coverage multiplies each fact's coverage by it
(:func:`pytest_ragdive.metrics.grounding.coverage_of`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.memo import memo
from .text import _SEPARATORS_RE, STOPWORDS, _term, match_terms, normalize_answer
from .windows import exact_terms

__all__ = ["STRETCH_RE", "KeyCheck", "key_check", "key_share", "stretches"]

NOT = "not"
NEGATION_SCOPE = 2  # terms after a "not" that it negates ("is not refundable", "never expires")
# terms after the determiner "no" that it negates: the noun it introduces ("no refunds", "with no
# projector"), not what follows the noun phrase ("cancelled at no cost up to 2 hours": not "up")
DETERMINER_SCOPE = 1
# a currency or percent sign stuck to a number (before or after it), and the unit it stands for
_SIGNS = {"$": "dollar", "€": "euro", "£": "pound", "¥": "yen", "%": "percent"}
_SIGN_RE = re.compile(r"([$€£¥])\s?(\d[\d,.]*)|(\d[\d,.]*)\s?([%€$£])")


@memo(maxsize=8192)
def _is_number(term: str) -> bool:
    return any(ch.isdigit() for ch in term)


@memo(maxsize=64)
def _unit_term(word: str) -> str:
    terms = match_terms(word)
    return terms[0] if terms else word


@dataclass(frozen=True)
class _Unit:
    terms: frozenset[str]
    numbers: dict[str, frozenset[str]]  # number -> the unit terms stuck to it in this text
    negated: frozenset[str]  # the terms right after a "not" (its scope: the next two terms)


def _terms_with_scope(text: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The match terms of ``text`` (``text.match_terms``) and, per term, how many terms after
    it it negates: ``NEGATION_SCOPE`` after a negation of the predicate ("not", "never",
    "don't"), ``DETERMINER_SCOPE`` after the determiner "no", 0 after any other term."""
    seq: list[str] = []
    scope: list[int] = []
    for raw in normalize_answer(_SEPARATORS_RE.sub(" ", text)).split():
        if raw in STOPWORDS:
            continue
        term = _term(raw)
        if term in STOPWORDS:
            continue
        seq.append(term)
        scope.append(0 if term != NOT else DETERMINER_SCOPE if raw == "no" else NEGATION_SCOPE)
    return tuple(seq), tuple(scope)


@memo(maxsize=4096)
def _read(text: str) -> _Unit:
    seq, scope = _terms_with_scope(text)
    numbers: dict[str, set[str]] = {}
    for i, term in enumerate(seq):
        if _is_number(term):
            units = numbers.setdefault(term, set())
            if i + 1 < len(seq) and not _is_number(seq[i + 1]):
                units.add(seq[i + 1])
    for m in _SIGN_RE.finditer(text):
        sign, num = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        for term in match_terms(num):
            numbers.setdefault(term, set()).add(_unit_term(_SIGNS[sign]))
    negated = {t for i, n in enumerate(scope) if n for t in seq[i + 1:i + 1 + n]}
    return _Unit(frozenset(seq), {n: frozenset(u) for n, u in numbers.items()}, frozenset(negated) - {NOT})


@dataclass(frozen=True)
class KeyCheck:
    """What the answer holds of one fact's key terms."""

    keys: tuple[str, ...]  # the fact's numbers (with their unit: "150 euro"), names and negation
    missing: tuple[str, ...]
    contradicted: bool

    @property
    def share(self) -> float:
        if self.contradicted:
            return 0.0
        if not self.keys:
            return 1.0
        return 1.0 - len(self.missing) / len(self.keys)


def _best_units(fact: _Unit, answer: Sequence[_Unit]) -> list[_Unit]:
    """The answer units holding the most of the fact's terms other than "not" (at least half)."""
    core = fact.terms - {NOT}
    if not core:
        return []
    scored = [(len(core & u.terms), u) for u in answer]
    top = max((n for n, _ in scored), default=0)
    if top * 2 < len(core):
        return []
    return [u for n, u in scored if n == top]


@memo(maxsize=4096)
def key_check(fact: str, answer_units: tuple[str, ...]) -> KeyCheck:
    """The key terms of ``fact`` and which of them the answer's units lack (module docstring)."""
    f = _read(fact)
    units = [_read(u) for u in answer_units]
    exact = exact_terms(fact)
    keys: list[str] = []
    missing: list[str] = []
    for number, unit_terms in sorted(f.numbers.items()):
        label = " ".join([number, *sorted(unit_terms)])
        keys.append(label)
        ok = any(number in u.numbers and (not unit_terms or unit_terms & (u.terms | _stuck(u))) for u in units)
        if not ok:
            missing.append(label)
    names = sorted(t for t in exact if t != NOT and not _is_number(t))
    have = frozenset().union(*(u.terms for u in units)) if units else frozenset()
    for name in names:
        keys.append(name)
        if name not in have:
            missing.append(name)
    if NOT in f.terms:
        best = _best_units(f, units)
        keys.append(NOT)
        if not any(NOT in u.terms for u in best):
            missing.append(NOT)
        contradicted = False
    else:
        # the stretches between a unit's commas count too: "needs 40 minutes, and whitening is
        # not part of a cleaning" does not negate "A cleaning takes 40 minutes" (the first
        # stretch holds as many of its terms as the whole unit, and negates none)
        candidates = [*units, *(_read(p) for u in answer_units if len(stretches(u)) > 1 for p in stretches(u))]
        # only a unit that negates something can contradict: without one, no best units to find
        best = _best_units(f, candidates) if any(u.negated for u in candidates) else []
        contradicted = bool(best) and all(u.negated & f.terms for u in best)
    return KeyCheck(tuple(keys), tuple(missing), contradicted)


#: where a hedge, an opener or an aside ends inside a sentence: a comma, semicolon, colon or dash
STRETCH_RE = re.compile(r"(\s*(?:,|;|:|\s[-\u2013\u2014])\s+)")


@memo(maxsize=4096)
def stretches(unit: str) -> tuple[str, ...]:
    """The pieces of ``unit`` between its commas (semicolons, colons, dashes), stripped."""
    return tuple(p.strip() for p in STRETCH_RE.split(unit)[::2] if p.strip())


def _stuck(u: _Unit) -> frozenset[str]:
    return frozenset().union(*u.numbers.values()) if u.numbers else frozenset()


def key_share(fact: str, answer_units: Sequence[str]) -> float:
    """The share of the fact's key terms the answer holds, 0.0 when it contradicts the fact."""
    return key_check(fact, tuple(answer_units)).share
