"""Text rules every metric shares: the one SQuAD normaliser, tokens, sentences,
citation markers, and the one abstention / unanswerable rule of the project.

Everything here is deterministic pure Python (no model, no numpy) and cached.

Tokens
    ``normalize_answer`` is the SQuAD normalisation: lowercase, delete
    punctuation (``don't`` becomes ``dont``), drop the articles a/an/the,
    collapse whitespace. ``tokens`` splits that on whitespace;
    ``content_tokens`` drops ``STOPWORDS`` (negations such as ``not``/``no`` and
    numbers are kept: they carry the meaning of a support answer).

Match terms (what grounding and coverage compare)
    ``match_terms`` are the content tokens after four steps that make a
    restatement match its source: hyphens and slashes separate words
    ("all-star" = "all - star" = "all star"); a light suffix stripper
    (``stem``: plural, -ed, -ing and a final e, so "charges", "charged" and
    "charging" meet); number words become digits ("four" = "4"); a short list
    of general English equivalents (``EQUIVALENTS``: "purchase" = "buy",
    "approximately" = "about", ...) maps onto one word.

Abstention
    A sentence is split into clauses at "but", "however", "although" and
    semicolons. A clause *abstains* when it says the answer is not known or not
    in the sources ("I can't find ...", "I don't have (any) (specific)
    information/knowledge ...", "the documents do not specify ...", "not in
    the help centre", "cannot be answered", "no information about ...").
    ``asserted_units`` are the clauses that are neither abstentions nor
    courtesy ("feel free to ask", "let me know") nor fillers ("Sorry!").
    An answer is a *pure abstention* (``is_abstention``) when it is empty or
    when its first substantive sentence abstains and it asserts nothing
    besides (every unit is an abstention, courtesy or filler). "The documents
    do not specify X, but you can ..." is a *partial* answer: it abstains
    (``has_abstention``) and asserts the rest.

Courtesy is not content
    A reply with no substantive sentence (only courtesy and fillers: "Let me
    know if you have any other questions.") is *no answer* (``is_no_answer``):
    not attempted, and not scored for faithfulness. ``substantive_text`` is the
    answer without its courtesy and fillers: what answer_f1 and exact_match
    compare, as correctness and faithfulness compare only asserted units.

Unanswerable ground truth
    ``is_unanswerable``: the normalised ground truth starts with "not
    answerable"/"unanswerable", or the ground truth is itself a pure
    abstention ("I'm sorry, but I can't find ...", "This cannot be answered
    from the given information.", "The documents do not include information on
    ..."). "It is not answerable by phone, only by email." is answerable.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ..core.memo import memo

__all__ = [
    "EQUIVALENTS",
    "STOPWORDS",
    "asserted_units",
    "citation_markers",
    "content_tokens",
    "has_abstention",
    "is_abstention",
    "is_no_answer",
    "is_unanswerable",
    "match_terms",
    "normalize_answer",
    "split_sentences",
    "stem",
    "strip_citations",
    "substantive_text",
    "tokens",
]

STOPWORDS: frozenset[str] = frozenset(
    """
    a an the and or but if then so as of in on at to for from by with about into onto over
    under than too very just also only
    is are was were be been being am do does did doing have has had having
    i me my mine myself you your yours yourself he him his she her hers it its itself
    we us our ours they them their theirs this that these those there here
    what which who whom whose when where why how
    can could will would shall should may might must
    im ive youre youve theyre theyve weve thats theres whats hes shes
    s t d ll m re ve
    """.split()
)

_PUNCT_RE = re.compile(r"[^\w\s]|_")
_ARTICLES_RE = re.compile(r"\b(?:a|an|the)\b")
_WS_RE = re.compile(r"\s+")
_SEPARATORS_RE = re.compile(r"[-/–—]")


@memo(maxsize=4096)
def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lowercase, delete punctuation, remove a/an/the, collapse whitespace."""
    s = text.lower()
    s = _PUNCT_RE.sub("", s)
    s = _ARTICLES_RE.sub(" ", s)
    return _WS_RE.sub(" ", s).strip()


def tokens(text: str) -> list[str]:
    """The SQuAD-normalised tokens of ``text``, in order, duplicates kept."""
    return normalize_answer(text).split()


def content_tokens(text: str) -> list[str]:
    """The normalised tokens of ``text`` minus ``STOPWORDS``, in order, duplicates kept."""
    return [t for t in tokens(text) if t not in STOPWORDS]


# --------------------------------------------------------------------------- match terms

_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
}
_NUMBER_WORDS.update({"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "ninety": "90", "hundred": "100"})

#: general English equivalents, mapped onto the first word of each group (after ``stem``)
EQUIVALENTS_GROUPS: tuple[tuple[str, ...], ...] = (
    ("buy", "purchase", "bought"),
    ("get", "receive", "obtain", "got"),
    ("about", "approximately", "around", "roughly"),
    ("allow", "permit", "let"),
    ("start", "begin", "began", "commence"),
    ("end", "finish", "ended"),
    ("need", "require"),
    ("help", "assist", "assistance"),
    ("use", "utilize", "utilise"),
    ("show", "display", "shown"),
    ("mean", "indicate", "signify"),
    ("choose", "select", "pick", "chose", "chosen"),
    ("big", "large"),
    ("small", "little"),
    ("fast", "quick", "quickly", "rapid"),
    ("cost", "price", "priced"),
    ("include", "contain", "comprise"),
    ("keep", "retain", "kept", "store", "stored"),
    ("take", "took", "taken"),
    ("give", "gave", "given", "provide"),
    ("make", "made"),
    ("send", "sent"),
    ("pay", "paid"),
    ("find", "found"),
    ("say", "said", "state"),
    ("go", "went", "gone"),
    ("month", "monthly"),
    ("year", "yearly", "annual", "annually"),
    ("day", "daily"),
    ("week", "weekly"),
    ("hour", "hourly"),
    ("maximum", "max", "most"),
    ("minimum", "min", "least"),
    ("cannot", "cant"),
    ("not", "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "wont", "never", "no"),
)


def stem(token: str) -> str:
    """A light suffix stripper: -ies -> -y, -sses -> -ss, plural -s, -ing, -ed (a doubled final
    consonant undone), then a final -e; short words are left alone."""
    t = token
    if len(t) > 4 and t.endswith("ies"):
        t = t[:-3] + "y"
    elif t.endswith("sses"):
        t = t[:-2]
    elif len(t) > 5 and t.endswith("ing"):
        t = t[:-3]
    elif len(t) > 4 and t.endswith("ed"):
        t = t[:-2]
    elif len(t) > 3 and t.endswith("s") and not t.endswith(("ss", "us", "is")):
        t = t[:-1]
    if t != token and len(t) > 3 and t[-1] == t[-2] and t[-1] not in "aeiouls":
        t = t[:-1]  # stopped -> stopp -> stop
    if len(t) > 4 and t.endswith("e"):
        t = t[:-1]
    return t


EQUIVALENTS: dict[str, str] = {
    stem(w): stem(group[0]) for group in EQUIVALENTS_GROUPS for w in group if stem(w) != stem(group[0])
}


@memo(maxsize=65536)
def _term(token: str) -> str:
    t = _NUMBER_WORDS.get(token, token)
    if t.isdigit():
        return t
    s = stem(t)
    return EQUIVALENTS.get(s, s)


@memo(maxsize=8192)
def match_terms(text: str) -> tuple[str, ...]:
    """The content tokens of ``text`` as match terms (hyphens split, stemmed, number words as
    digits, ``EQUIVALENTS`` applied), in order, duplicates kept. Negated contractions
    ("doesn't" -> "not") are kept as ``not``."""
    out = []
    for t in normalize_answer(_SEPARATORS_RE.sub(" ", text)).split():
        if t in STOPWORDS:
            continue
        term = _term(t)
        if term not in STOPWORDS:  # "approximately" -> "about"
            out.append(term)
    return tuple(out)


# --------------------------------------------------------------------------- citations and sentences

_CITE_ID = r"[A-Za-z0-9][A-Za-z0-9_.:/#-]{0,80}"
_CITATION_RE = re.compile(rf"\[\s*({_CITE_ID}(?:\s*[,;]\s*{_CITE_ID})*)\s*\](?!\()")


def citation_markers(text: str) -> list[str]:
    """The ids cited inline as ``[id]`` or ``[id1, id2]`` (markdown links excluded), in order."""
    out: list[str] = []
    for m in _CITATION_RE.finditer(text or ""):
        out.extend(p.strip() for p in re.split(r"[,;]", m.group(1)) if p.strip())
    return out


def strip_citations(text: str) -> str:
    """``text`` without its inline citation markers."""
    return _CITATION_RE.sub(" ", text or "")


_SENT_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[\"'“‘(\[*•-]?[A-Z0-9])")
_ABBREVIATIONS = frozenset(
    "e.g. i.e. etc. vs. approx. mr. mrs. ms. dr. st. no. inc. ltd. co. fig. cf. min. max.".split()
)


@memo(maxsize=4096)
def _split_sentences(text: str) -> tuple[str, ...]:
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        pieces = _SENT_SPLIT_RE.split(line)
        merged: list[str] = []
        for piece in pieces:
            if merged and merged[-1].rsplit(None, 1)[-1].lower() in _ABBREVIATIONS:
                merged[-1] = f"{merged[-1]} {piece}"
            else:
                merged.append(piece)
        out.extend(p.strip() for p in merged if p.strip())
    return tuple(out)


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences: at line breaks, and after ``.``/``!``/``?`` followed by
    whitespace and a capital letter or digit (not after common abbreviations such as "e.g.").
    Empty pieces are dropped."""
    return list(_split_sentences(text or ""))


# --------------------------------------------------------------------------- abstention and unanswerable

_NEG_ABLE = (
    r"(?:cant|cannot|can not|couldnt|could not|am unable to|was unable to|unable to|am not able to|"
    r"not able to|wasnt able to|was not able to|didnt|did not)"
)
_SOURCE = (
    r"(?:help cent(?:re|er)|help articles?|documents?|documentation|docs|context|contexts|knowledge base|"
    r"sources?|provided information|information (?:provided|given|available|i have)|articles?|materials?|"
    r"faqs?|text|passages?|excerpts?)"
)
_ABSTENTION_RES = tuple(
    re.compile(p)
    for p in (
        # "I can't find that", "I couldn't locate ...", "I'm unable to answer", "I did not find ..."
        rf"\b(?:i|im) {_NEG_ABLE} (?:find|locate|answer|determine|tell|identify|help with|provide)\b",
        # "I don't know", "I don't have (any) (specific) information / knowledge about ..."
        r"\bi (?:dont|do not) (?:know|have (?:\w+ ){0,2}(?:information|info|details|data|answer|knowledge))\b",
        r"\bi have no (?:\w+ ){0,2}(?:information|info|details|data|knowledge|answer)\b",
        r"\bi (?:dont|do not) have (?:any )?specific\b",
        # "not in the help centre", "not covered in the provided documents"
        rf"\b(?:not|isnt|arent|wasnt|werent) (?:in|covered (?:in|by)|mentioned (?:in|by)|found in|available in|"
        rf"included in|part of|present in|addressed in|specified in|stated in|given in|provided in) "
        rf"(?:(?:my|our|this|that|these|provided|given|available|current|your) )*{_SOURCE}\b",
        # "the documents don't mention ...", "the provided documents do not specify ..."
        rf"\b{_SOURCE} (?:provided |given |available )?(?:does not|doesnt|do not|dont|did not|didnt) "
        rf"(?:\w+ )?(?:contain|mention|cover|say|specify|include|address|provide|have|state|give|discuss)\b",
        # "cannot answer", "unable to answer"
        r"\b(?:cant|cannot|can not|unable to|not able to) answer\b",
        r"\bno (?:relevant |specific )?(?:information|info|details|answer|mention) (?:about|on|regarding|for|of|in)\b",
        # "Not answerable.", "the question is not answerable from ...", "cannot be answered"
        r"^(?:(?:this|that|question|this question) (?:is )?)?(?:not answerable|unanswerable)\b",
        rf"\bnot answerable (?:from|with|based|given|using|in|by (?:the|this|these) {_SOURCE})\b",
        r"\b(?:no answer available|(?:cannot|cant|can not|could not|couldnt) be answered)\b",
    )
)
# a sentence made only of these words ("Sorry!", "Great question.") says nothing
_FILLER = frozenset(
    "sorry im i am so very really unfortunately apologies my hmm hmmm oh ah well hi hello there thanks thank "
    "you for asking good great question we are afraid but however".split()
)
_COURTESY_RE = re.compile(
    r"\b(?:feel free to|let me know|happy to help|glad to help|hope (?:this|that) helps|anything else"
    r"|if you have (?:any )?(?:other|more|further|additional) questions|youre welcome)\b"
)
_CLAUSE_SPLIT_RE = re.compile(r"\s*(?:;|,?\s+\bbut\b|,?\s*\bhowever\b,?|,?\s+\balthough\b|,?\s+\bthough\b,)\s*", re.I)


def _abstains(text: str) -> bool:
    norm = normalize_answer(text)
    return any(r.search(norm) for r in _ABSTENTION_RES)


def _is_filler(text: str) -> bool:
    return set(tokens(text)) <= _FILLER


class _Analysis(NamedTuple):
    first_abstains: bool  # the first substantive sentence abstains
    some_abstains: bool  # some clause abstains
    units: tuple[str, ...]  # the asserted units
    substantive: str  # the answer without its courtesy and fillers (abstentions kept)


class _Sentence(NamedTuple):
    abstains: bool  # the whole sentence abstains
    some_abstains: bool  # it, or one of its clauses, abstains
    units: tuple[str, ...]  # its asserted units
    kept: str | None  # what of it the substantive text keeps (None: a courtesy sentence, left out)


@memo(maxsize=8192)
def _sentence(sentence: str) -> _Sentence | None:
    """One sentence's part of :func:`_analyse` (None: no token, or a filler), once per sentence:
    answers repeat their sources' sentences across turns and conversations."""
    if not tokens(sentence) or _is_filler(sentence):
        return None
    whole = _abstains(sentence)
    if not whole and _COURTESY_RE.search(normalize_answer(sentence)):
        return _Sentence(whole, False, (), None)
    clauses = [c for c in _CLAUSE_SPLIT_RE.split(sentence) if c and tokens(c) and not _is_filler(c)]
    some = False
    units: list[str] = []
    own: list[str] = []
    for clause in clauses:
        if _abstains(clause):
            some = True
            own.append(clause)
        elif not _COURTESY_RE.search(normalize_answer(clause)):
            units.append(clause)
            own.append(clause)
    return _Sentence(whole, some or whole, tuple(units), sentence if len(own) == len(clauses) else " ".join(own))


@memo(maxsize=4096)
def _analyse(answer: str) -> _Analysis:
    first: bool | None = None
    some = False
    units: list[str] = []
    kept: list[str] = []
    for sentence in _split_sentences(strip_citations(answer)):
        part = _sentence(sentence)
        if part is None:
            continue
        if first is None:
            first = part.abstains
        if part.kept is None:
            continue
        some = some or part.some_abstains
        units += part.units
        kept.append(part.kept)
    return _Analysis(bool(first), some, tuple(units), " ".join(k for k in kept if k))


def asserted_units(answer: str | None) -> list[str]:
    """The clauses of the answer that assert something: every clause of every sentence
    (citation markers stripped) that is not an abstention, a courtesy or a filler."""
    return list(_analyse(answer or "").units)


def substantive_text(answer: str | None) -> str:
    """The answer without its courtesy ("Happy to help!", "Let me know if ...") and fillers
    ("Sorry!"), citation markers stripped: what the answer-level metrics compare. A sentence
    none of whose clauses is left out is kept as written; abstaining clauses are kept."""
    return _analyse(answer or "").substantive


def is_no_answer(answer: str | None) -> bool:
    """True when the reply has no substantive sentence: empty, or only courtesy and fillers
    ("Let me know if you have any other questions."). It is not attempted and not scored for
    faithfulness; a reply that says it cannot answer is an abstention, not "no answer"."""
    a = _analyse(answer or "")
    return not a.units and not a.some_abstains


def is_abstention(answer: str | None) -> bool:
    """True when the answer is a pure abstention: empty (or None, or only punctuation and
    citation markers), or its first substantive sentence abstains and it asserts nothing
    else (see the module docstring). "Returns take 30 days. I can't find anything on
    exchanges." is an attempt; "The documents do not specify X, but you can ..." is a
    partial answer (an attempt that also abstains, ``has_abstention``). A reply with no
    substantive sentence (``is_no_answer``) counts too: it attempts nothing."""
    return not _analyse(answer or "").units


def has_abstention(answer: str | None) -> bool:
    """True when some clause of the answer abstains (a pure abstention, or a partial answer)."""
    a = _analyse(answer or "")
    return a.some_abstains or not a.units


def is_unanswerable(ground_truth: str | None) -> bool:
    """True when the ground truth marks the question unanswerable: its normalised text starts
    with "not answerable"/"unanswerable", or it is itself a pure abstention (an apology such as
    "I'm sorry, but I can't find ...")."""
    norm = normalize_answer(ground_truth or "")
    if not norm:
        return False
    if norm.startswith(("not answerable", "unanswerable")):
        return True
    a = _analyse(ground_truth or "")
    return a.first_abstains and not a.units
