"""Grounding and coverage: the one rule that decides how far the contexts (and the
conversation so far) support each asserted unit of an answer, and how far an answer
covers each fact of a reference.

Evidence of one unit (``unit_evidence``)
    *lexical*: the share of the unit's distinct match terms (``text.match_terms``)
    found in the union of the contexts' terms. *semantic*: the cosine between the unit
    and the best *window* of a context (one sentence, or two adjacent sentences) by the
    embedded model (:mod:`.semantic`). *The exact-term guard*: a window counts for the
    semantic evidence only when it holds every exact term of the unit, its numbers,
    its negation and its names (capitalised words after the first), because an
    embedding cannot tell $9 from $19, or "expires" from "never expires".

Support of one unit (``support``, by a :class:`Rule`)
    The cosine is mapped linearly onto [0, 1] between ``Rule.floor`` (0) and
    ``Rule.full`` (1), and combined with the lexical share (``Rule.combine``: their
    ``max``, their ``mean``, the ``semantic`` part alone, or ``lexical`` alone, no
    model). With a conversation, one conversation text (an earlier user statement, or
    a grounded unit of an earlier answer) supports the unit when the same rule,
    against that text alone, reaches ``REPEAT_THRESHOLD``. :class:`Support` says which
    context (and which span of it) or which conversation text supported the unit.

Faithfulness
    The mean support of the answer's asserted units, weighted by each unit's number of
    distinct terms. A pure abstention asserts nothing unsupported: 1.0. A reply with no
    substantive sentence (``text.is_no_answer``: only courtesy) is no answer: None.

Coverage (correctness)
    Each fact of the reference (its asserted units) is covered by the answer with the
    same rule turned round: lexical, the share of the fact's terms among the terms the
    answer asserts; semantic, the cosine of the fact with the best window of the
    answer's units (one unit, or two adjacent), guarded by the fact's exact terms.
    Each fact's coverage is multiplied by the share of its *key terms* the answer
    holds (:mod:`.keyfacts`: numbers with their units, names, negation; 0 when the
    answer negates the fact), so coverage of the other words alone cannot make an
    answer with the wrong number correct. Coverage is the term-weighted sum of the
    facts' coverage over the reference's terms, or over ``Rule.cap`` terms when the
    reference is longer (a reference is written to be complete, in more words than an
    answer needs). It is not multiplied
    by faithfulness: an answer that covers the reference and also invents is caught by
    faithfulness, and the gate gates both.

The rules shipped (``SUPPORT_RULE``, ``COVERAGE_RULE``) are the variants that 5-fold
cross-validation over the MTRAG human ratings chose inside its training folds
(``benchmarks/bench_human_agreement.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

from ..core.memo import memo
from .keyfacts import STRETCH_RE, key_share
from .lexical import ContextLike, _context_text, _terms, _token_set
from .text import asserted_units, has_abstention, is_abstention, is_no_answer, is_unanswerable, strip_citations
from .windows import Window, _text_windows, exact_terms, guarded_best, guarded_cosines, prepare, terms_of, windows_of

__all__ = [
    "CORRECTNESS_THRESHOLD",
    "COVERAGE_CAP",
    "COVERAGE_RULE",
    "GROUNDED_UNIT",
    "LEXICAL_COVERAGE",
    "LEXICAL_SUPPORT",
    "REPEAT_THRESHOLD",
    "SUPPORT_RULE",
    "FactEvidence",
    "Rule",
    "Support",
    "UnitEvidence",
    "Window",
    "correctness",
    "coverage",
    "coverage_of",
    "exact_terms",
    "fact_evidence",
    "faithfulness",
    "faithfulness_of",
    "grounded_units",
    "support",
    "unit_evidence",
    "unit_supports",
]

#: coverage of the ground truth at which an answer counts as correct (forgetfulness probe)
CORRECTNESS_THRESHOLD = 0.6
#: ground-truth terms an answer must state for full coverage of a long reference (lexical rule)
COVERAGE_CAP = 12
#: support from the turn's own contexts at which an earlier answer's unit is grounded (and then supports later turns)
GROUNDED_UNIT = 0.8
#: support one conversation text alone must give a unit for the unit to count as a restatement of it
REPEAT_THRESHOLD = 0.8

Combine = Literal["max", "mean", "semantic", "lexical"]


@dataclass(frozen=True)
class Rule:
    """How the lexical share and the semantic cosine combine into one support in [0, 1]."""

    combine: Combine = "max"
    floor: float = 0.5  # cosine at or below which the semantic evidence is 0
    full: float = 0.9  # cosine at or above which it is 1
    cap: int | None = None  # coverage: reference terms that cover a long reference in full (None: all)

    @property
    def semantic(self) -> bool:
        """Whether the rule needs the embedded model."""
        return self.combine != "lexical"

    def semantic_part(self, cosine: float | None) -> float:
        """The cosine mapped onto [0, 1] (no guarded window: 0)."""
        if cosine is None:
            return 0.0
        return min(1.0, max(0.0, (cosine - self.floor) / (self.full - self.floor)))

    def score(self, lexical: float, cosine: float | None) -> float:
        if self.combine == "lexical":
            return lexical
        sem = self.semantic_part(cosine)
        if self.combine == "max":
            return max(lexical, sem)
        if self.combine == "mean":
            return (lexical + sem) / 2
        return sem

    @property
    def needs_cosine_when_lexical_full(self) -> bool:
        """Whether a unit (or fact) whose terms the sources hold in full still needs its
        cosine: not under ``max`` (its support is 1 either way), so the model is not asked."""
        return self.combine != "max"

    def label(self) -> str:
        """A short name for tables: ``max 0.50-0.80``, ``lexical``; ``cap 12`` when capped."""
        core = "lexical" if not self.semantic else f"{self.combine} {self.floor:.2f}-{self.full:.2f}"
        return core + (f", cap {self.cap}" if self.cap else "")


# the variants 5-fold cross-validation chose on the MTRAG development half (refit on the
# whole half; the folds' own choices were neighbours: bench_human_agreement.py)
SUPPORT_RULE = Rule("max", 0.5, 0.9)
COVERAGE_RULE = Rule("max", 0.4, 0.9, cap=24)
#: the lexical rules (no model): the evidence of earlier releases, kept as ``faithfulness_backend = "lexical"``
LEXICAL_SUPPORT = Rule("lexical")
LEXICAL_COVERAGE = Rule("lexical", cap=COVERAGE_CAP)


# --------------------------------------------------------------------------- evidence records


@dataclass(frozen=True)
class UnitEvidence:
    """What the contexts and the conversation hold for one asserted unit (rule-independent)."""

    unit: str
    terms: frozenset[str]
    lexical: float  # share of the unit's terms in the union of the contexts
    lexical_window: Window | None  # the window holding most of them
    cosine: float | None  # best guarded window (None: no model, or no window passes the guard)
    window: Window | None  # that window
    conversation: tuple[tuple[float, float | None], ...]  # per conversation text: (lexical share, guarded cosine)


@dataclass(frozen=True)
class Support:
    """The support of one asserted unit, and where it came from."""

    unit: str
    weight: int  # distinct match terms
    score: float
    lexical: float
    semantic: float | None  # the cosine mapped onto [0, 1] (None: lexical rule)
    source: Literal["contexts", "conversation", "none"]
    context: int | None  # index of the supporting context
    span: tuple[int, int] | None  # character span of the supporting window in that context
    conversation: int | None  # index of the supporting conversation text


@dataclass(frozen=True)
class FactEvidence:
    """How far the answer holds one fact of the reference (rule-independent)."""

    fact: str
    weight: int
    lexical: float
    cosine: float | None
    key: float = 1.0  # share of the fact's key terms (numbers with units, names, negation) held; 0 if contradicted


# --------------------------------------------------------------------------- support


def unit_evidence(
    units: Sequence[str], contexts: Iterable[ContextLike], conversation: Sequence[str] = (), *, semantic: bool = True,
    only_unsure: bool = False,
) -> list[UnitEvidence | None]:
    """The evidence of each unit (None for a unit without a term); ``semantic=False``
    leaves the model out (every cosine None). ``only_unsure``: ask the model only for the
    units the contexts do not hold in full (lexical share below 1), the others keep
    cosine None: under a ``max`` rule their support is 1 whatever the cosine
    (:meth:`Rule.needs_cosine_when_lexical_full`). Cached: a turn's faithfulness, strict
    faithfulness and grounded units ask for the same evidence."""
    texts = tuple(_context_text(c) for c in contexts)
    return list(_unit_evidence(tuple(units), texts, tuple(conversation), semantic, only_unsure))


class _AgainstContexts(NamedTuple):
    """What the contexts alone hold for a turn's units: the same for its faithfulness, its
    strict faithfulness and its grounded units, whatever the conversation so far."""

    keep: tuple[str, ...]  # the units with a term
    lexicals: tuple[float, ...]
    ask: tuple[int, ...]  # the units the model is asked about
    best: tuple[tuple[float | None, Window | None], ...]
    lex_windows: tuple[Window | None, ...]


@memo(maxsize=1024)
def _against_contexts(units: tuple[str, ...], texts: tuple[str, ...], semantic: bool, only_unsure: bool) -> _AgainstContexts:
    union = terms_of(texts)
    keep = [u for u in units if _terms(u)]
    lexicals = [len(_terms(u) & union) / len(_terms(u)) for u in keep]
    ask = [i for i in range(len(keep)) if semantic and not (only_unsure and lexicals[i] >= 1.0)]
    asked, exact = [keep[i] for i in ask], [exact_terms(keep[i]) for i in ask]
    best: list[tuple[float | None, Window | None]] = [(None, None)] * len(keep)
    if ask:  # the windows only when the model is asked
        for i, b in zip(ask, guarded_best(asked, exact, prepare(texts).windows), strict=True):
            best[i] = b
    lex_windows: list[Window | None] = []
    for i, unit in enumerate(keep):
        # the sentence holding most of the unit's terms, the most specific of those (fewest other
        # terms; for Support.span; none without any): the first best of the first context whose
        # own best is best, as ``max`` over all the contexts' sentences in order would pick it
        found: tuple[tuple[int, int], int, int] | None = None  # (rank, context, sentence)
        if lexicals[i]:
            for j, text in enumerate(texts):
                own = _lexical_sentence(unit, text)
                if own is not None and (found is None or own[0] > found[0]):
                    found = (own[0], j, own[1])
        lex_windows.append(None if found is None else _text_windows(found[1], texts[found[1]])[0][found[2]])
    return _AgainstContexts(tuple(keep), tuple(lexicals), tuple(ask), tuple(best), tuple(lex_windows))


@memo(maxsize=16384)
def _lexical_sentence(unit: str, text: str) -> tuple[tuple[int, int], int] | None:
    """The sentence of one context holding most of ``unit``'s terms, the first of the most
    specific of those (its index among the context's sentence windows), and its rank; keyed
    by the texts, whatever the context's rank (answers and contexts repeat across turns)."""
    terms = _terms(unit)
    best: tuple[tuple[int, int], int] | None = None
    for k, w in enumerate(_text_windows(0, text)[0]):
        key = (len(terms & w.terms), -len(w.terms))
        if best is None or key > best[0]:
            best = (key, k)
    return best


@memo(maxsize=1024)
def _unit_evidence(
    units: tuple[str, ...], texts: tuple[str, ...], conversation: tuple[str, ...], semantic: bool, only_unsure: bool
) -> tuple[UnitEvidence | None, ...]:
    keep, lexicals, ask, best, lex_windows = _against_contexts(units, texts, semantic, only_unsure)
    conv = [c for c in conversation if _terms(c)]
    asked = [keep[i] for i in ask]
    sims = guarded_cosines(asked, [exact_terms(u) for u in asked], conv) if asked else None
    row = {i: r for r, i in enumerate(ask)}
    by_unit: dict[str, UnitEvidence] = {}
    for i, unit in enumerate(keep):
        terms = _terms(unit)
        per_conv = []
        r = row.get(i)
        for j, c in enumerate(conv):
            cos = None if sims is None or r is None or sims[r, j] == float("-inf") else float(sims[r, j])
            per_conv.append((len(terms & _terms(c)) / len(terms), cos))
        cos, window = best[i]
        by_unit[unit] = UnitEvidence(
            unit, terms, lexicals[i], lex_windows[i], cos, window, tuple(per_conv)
        )
    return tuple(by_unit.get(u) for u in units)


def support(ev: UnitEvidence, rule: Rule) -> Support:
    """The support of one unit by ``rule``, and the context (span) or conversation text behind it."""
    s = rule.score(ev.lexical, ev.cosine)
    sem = rule.semantic_part(ev.cosine) if rule.semantic else None
    conv_index = None
    for j, (lex, cos) in enumerate(ev.conversation):
        r = rule.score(lex, cos)
        if r >= REPEAT_THRESHOLD - 1e-9 and r > s:
            s, conv_index = r, j
    if conv_index is not None:
        return Support(ev.unit, len(ev.terms), s, ev.lexical, sem, "conversation", None, None, conv_index)
    if s <= 0:
        return Support(ev.unit, len(ev.terms), s, ev.lexical, sem, "none", None, None, None)
    w = ev.window if sem is not None and sem >= ev.lexical and ev.window is not None else ev.lexical_window
    ctx = None if w is None else w.source
    span = None if w is None else (w.start, w.end)
    return Support(ev.unit, len(ev.terms), s, ev.lexical, sem, "contexts", ctx, span, None)


def unit_supports(
    answer: str, contexts: Iterable[ContextLike], conversation: Sequence[str] = (), rule: Rule = SUPPORT_RULE
) -> list[Support]:
    """The support of each asserted unit of ``answer`` (citation markers stripped) that has a term.
    Cached: a turn's faithfulness and its evidence ask for the same supports, its strict
    faithfulness and its grounded units too (the conversation texts without a term, which
    no unit can restate, are left out of the key)."""
    texts = tuple(_context_text(c) for c in contexts)
    return list(_unit_supports(answer, texts, tuple(c for c in conversation if _terms(c)), rule))


@memo(maxsize=2048)
def _unit_supports(answer: str, texts: tuple[str, ...], conversation: tuple[str, ...], rule: Rule) -> tuple[Support, ...]:
    units = asserted_units(strip_citations(answer))
    evidence = _unit_evidence(tuple(units), texts, conversation, rule.semantic, not rule.needs_cosine_when_lexical_full)
    return tuple(support(ev, rule) for ev in evidence if ev)


def faithfulness_of(supports: Sequence[Support]) -> float:
    """The term-weighted mean support (1.0 when nothing is asserted)."""
    den = sum(s.weight for s in supports)
    return sum(s.weight * s.score for s in supports) / den if den else 1.0


def faithfulness(
    answer: str | None, contexts: Iterable[ContextLike], conversation: Sequence[str] = (), rule: Rule = SUPPORT_RULE
) -> float | None:
    """How much of what the answer asserts the contexts (and the conversation) support.
    Higher is better, in [0, 1].

    The term-weighted mean ``support`` of the answer's asserted units (module docstring).
    ``conversation``: texts of the conversation so far that count as support when a unit
    restates one of them (earlier user statements, grounded units of earlier answers);
    leave it empty for the strict per-turn figure. With no context and no conversation
    nothing is supported (0.0). A pure abstention: 1.0 (it costs correctness instead).
    None when the answer is None or says nothing of substance (only courtesy: no answer).
    """
    if answer is None or is_no_answer(answer):
        return None
    return faithfulness_of(unit_supports(answer, contexts, conversation, rule))


def grounded_units(answer: str | None, contexts: Iterable[ContextLike], rule: Rule = SUPPORT_RULE) -> list[str]:
    """The asserted units of ``answer`` whose support from ``contexts`` alone reaches
    ``GROUNDED_UNIT``: what an earlier answer established, so that later turns may repeat it."""
    if not answer:
        return []
    return [s.unit for s in unit_supports(answer, contexts, (), rule) if s.score >= GROUNDED_UNIT - 1e-9]


# --------------------------------------------------------------------------- coverage


def fact_evidence(
    facts: Sequence[str], answer_units: Sequence[str], *, semantic: bool = True, only_unsure: bool = False
) -> list[FactEvidence]:
    """How far the answer's units hold each fact (facts without a term are left out; cached:
    the forgetfulness probe asks again). ``only_unsure``: as for :func:`unit_evidence`."""
    return list(_fact_evidence(tuple(facts), tuple(answer_units), semantic, only_unsure))


@memo(maxsize=1024)
def _fact_evidence(
    facts: tuple[str, ...], answer_units: tuple[str, ...], semantic: bool, only_unsure: bool
) -> tuple[FactEvidence, ...]:
    keep = [f for f in facts if _terms(f)]
    have: set[str] = set()
    for u in answer_units:
        have |= _terms(u)
    lexicals = [len(_terms(f) & have) / len(_terms(f)) for f in keep]
    ask = [i for i in range(len(keep)) if semantic and not (only_unsure and lexicals[i] >= 1.0)]
    # one source for all the answer's units (adjacent ones pair up), and the comma-separated
    # stretches inside a unit (:func:`clause_windows`); the span counts units
    windows = coverage_windows(answer_units) if ask else []
    cosines: list[float | None] = [None] * len(keep)
    asked = [keep[i] for i in ask]
    for i, (cos, _) in zip(ask, guarded_best(asked, [exact_terms(f) for f in asked], windows), strict=True):
        cosines[i] = cos
    units = tuple(answer_units)
    return tuple(FactEvidence(f, len(_terms(f)), lexicals[i], cosines[i], key_share(f, units)) for i, f in enumerate(keep))


#: pieces of one unit whose every contiguous stretch is a window (more: single pieces and pairs)
CLAUSE_RUNS = 4


def clause_windows(unit: str, index: int) -> list[Window]:
    """The stretches of one answer unit between its commas (semicolons, colons, dashes):
    each piece, and each run of adjacent pieces shorter than the unit (more than
    ``CLAUSE_RUNS`` pieces: each piece and each pair), as windows of unit ``index``. A fact
    stated inside a longer sentence ("As far as I can tell, a day pass costs 14 euros") is
    compared with the stretch that states it, not with the hedge around it too: the
    embedding of a whole sentence is the mean of all its words, so a reworded fact inside a
    hedge would lose to the hedge's words where the same fact alone would not."""
    parts = STRETCH_RE.split(unit)  # piece, separator, piece, ...
    n = (len(parts) + 1) // 2
    if n < 2:
        return []
    longest = n - 1 if n <= CLAUSE_RUNS else 2
    out = []
    for size in range(1, longest + 1):
        for a in range(n - size + 1):
            text = "".join(parts[2 * a:2 * (a + size) - 1]).strip()
            terms = _terms(text)
            if terms:
                out.append(Window(0, index, index + 1, text, terms))
    return out


def coverage_windows(answer_units: Sequence[str]) -> list[Window]:
    """The windows an answer offers a reference fact: each unit, each pair of adjacent
    units, and the comma-separated stretches inside each unit (:func:`clause_windows`)."""
    units = [(i, u) for i, u in enumerate(answer_units) if _terms(u)]
    out = windows_of([(0, i, i + 1, u) for i, u in units])
    for i, u in units:
        out += clause_windows(u, i)
    return out


def coverage_of(facts: Sequence[FactEvidence], rule: Rule) -> float:
    """The term-weighted coverage of the facts, over ``rule.cap`` terms at most; each fact's
    coverage is multiplied by the share of its key terms the answer holds (:mod:`.keyfacts`)."""
    total = sum(f.weight for f in facts)
    if not total:
        return 0.0
    den = min(total, rule.cap) if rule.cap else total
    return min(1.0, sum(f.weight * rule.score(f.lexical, f.cosine) * f.key for f in facts) / den)


def coverage(answer: str | None, ground_truth: str, rule: Rule = COVERAGE_RULE) -> float | None:
    """Graded coverage of the ground truth's facts by the answer, in [0, 1] (module docstring).

    A pure abstention (or no answer) covers nothing (0.0). A ground truth made only of
    stopwords: the share of its normalised tokens the answer's units contain. None when
    the ground truth has no token at all. Unanswerable ground truths are ``correctness``'s
    concern."""
    facts = asserted_units(ground_truth)
    if not any(_terms(f) for f in facts):
        gold = _token_set(ground_truth)
        if not gold:
            return None
        if is_abstention(answer):
            return 0.0
        have: set[str] = set()
        for u in asserted_units(strip_citations(answer or "")):
            have |= _token_set(u)
        return len(gold & have) / len(gold)
    if is_abstention(answer):
        return 0.0
    units = asserted_units(strip_citations(answer or ""))
    evidence = fact_evidence(facts, units, semantic=rule.semantic, only_unsure=not rule.needs_cosine_when_lexical_full)
    return coverage_of(evidence, rule)


def correctness(answer: str | None, ground_truth: str, rule: Rule = COVERAGE_RULE) -> float | None:
    """How completely the answer states the ground truth. Higher is better, in [0, 1].

    - Unanswerable ground truth (``is_unanswerable``): 1.0 when the answer says it cannot
      answer (a pure abstention, or a partial answer with an abstaining clause), else 0.0.
    - Answerable: ``coverage`` (a pure abstention covers nothing, so not answering an
      answerable question costs correctness). It is not multiplied by faithfulness: what
      the answer adds with nothing to support it is faithfulness's concern, gated beside it.
    - None when there is no ground truth (no token at all).

    Cached per (answer, ground truth, rule): a turn's correctness, its forgetfulness probe
    and the turns of other conversations that give the same answer to the same question ask again.
    """
    return _correctness(answer, ground_truth, rule)


@memo(maxsize=4096)
def _correctness(answer: str | None, ground_truth: str, rule: Rule) -> float | None:
    if is_unanswerable(ground_truth):
        return float(has_abstention(answer))
    return coverage(answer, ground_truth, rule)
