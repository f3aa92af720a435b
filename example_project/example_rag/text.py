"""Text helpers shared by chunking, retrieval and the reader: sentences, tokens, answer types."""

from __future__ import annotations

import re

# A small English stop-word list plus chat filler ("sorry, I meant ...", "what happens if I try").
STOPWORDS = frozenset(
    """
    a about above after again all also am an and any are as at be been before being both but by can
    could did do does doing done each few for from further get gets got had has have having he her here
    hers him his how i if in into is it its itself just me more most much my no nor not now of off on
    once one only or other our ours out over own please same she should so some such tell than thanks
    thank that the their theirs them then there these they this those through to too under until up
    us very was we were what whats when where which while who whom why will with would you your yours
    hi hello hey ok okay sorry meant mean means actually yes yeah right sure great cool oh well instead
    anything something thing things know want like need let lets im ive id dont doesnt isnt cant
    happen happens happened try still anyway afterwards really exactly maybe already ever see
    re ll ve don doesn didn isn aren wasn won wouldn couldn shouldn haven hasn
    """.split()
)

# Domain synonyms, applied to stemmed tokens.
ALIASES = {
    "camera": "cam",
    "annually": "annual",
    "yearly": "annual",
    "respond": "respons",
    "cancellat": "cancel",
    "paid": "pay",
    "setup": "set",
    "using": "use",
    "used": "use",
}

_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_TOKEN = re.compile(r"\d+(?:\.\d+)+|[a-z0-9]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_VOWEL = re.compile(r"[aeiouy]")


def split_sentences(text: str) -> list[str]:
    """Split a paragraph into sentences (the corpus avoids abbreviations with dots)."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def stem(tok: str) -> str:
    """A light suffix stemmer: plural and verb endings, then a final 'e' ("charged" = "charge")."""
    if tok[0].isdigit():
        return tok
    if len(tok) > 4 and tok.endswith(("ies", "ied")):
        tok = tok[:-3] + "y"
    elif len(tok) > 3 and tok.endswith("s") and not tok.endswith(("ss", "us", "is")):
        tok = tok[:-1]
    if len(tok) > 7 and tok.endswith("ion"):
        tok = tok[:-3]  # "evaluation" = "evaluate", "deletion" = "delete"
    for suffix in ("ing", "ed"):
        base = tok[: -len(suffix)]
        if tok.endswith(suffix) and len(base) >= 3 and _VOWEL.search(base) and not tok.endswith("eed"):
            tok = base[:-1] if len(base) > 3 and base[-1] == base[-2] and base[-1] not in "lsz" else base
            break
    if len(tok) > 3 and tok.endswith("e"):
        tok = tok[:-1]
    return tok


# Domain phrases that mean one thing.
_PHRASES = [
    (re.compile(r"\bsingle sign[- ]on\b"), " sso "),
    (re.compile(r"\btwo[- ]factor authentication\b"), " 2fa "),
]


def tokenize(text: str) -> list[str]:
    """Lowercased content tokens: stop words and single letters dropped, stemmed, synonyms merged."""
    text = _THOUSANDS.sub("", text.lower())
    for pattern, repl in _PHRASES:
        text = pattern.sub(repl, text)
    out = []
    for tok in _TOKEN.findall(text):
        if tok in STOPWORDS or (len(tok) == 1 and not tok.isdigit()):
            continue
        s = stem(tok)
        out.append(ALIASES.get(s, s))
    return out


# "how long", "compare with": words that say what kind of answer is wanted, not what it is about
_QUESTION_PHRASES = re.compile(
    r"\bhow (long|much|many|often|soon|fast|quickly|far|close)\b"
    r"|\b(compare|compared|comparison|versus|vs|difference|differ)\b",
    re.I,
)


def tokenize_query(text: str) -> list[str]:
    """Query tokens: like :func:`tokenize` without the question phrases."""
    return tokenize(_QUESTION_PHRASES.sub(" ", text))


# (pattern on the lower-cased question, answer type), first match wins
_QUESTION_TYPES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), kind)
    for pattern, kind in (
        (r"\bhow (long|soon|fast|quickly)\b|\bhow much (extra )?time\b|\bwhen will\b", "duration"),
        (r"\bwhen (was|were|did)\b|\bwhat date\b|\bwhich (day|date)\b", "date"),
        (r"\bwhen (does|do|is|are)\b|\b(what|which) time\b", "time"),
        (r"\bhow (far|close)\b", "distance"),
        (r"\bhow much (does|do|is|are|will|would|did)\b|\b(cost|costs|price|prices|priced|fee|fees|cheaper)\b", "money"),
        (r"\b(which|what) plans?\b|\bavailable (on|in|with)\b", "plan"),
        (r"\bmean\b|\bmeaning\b", "definition"),
        (r"\b(error|code)\b", "code"),
        (r"\bhow many\b|\b(limit|limits|maximum)\b", "number"),
        (r"\b(how|where) (do|can|should) (i|we)\b|\bhow to\b", "procedure"),
    )
)


def answer_type(text: str) -> str | None:
    """What kind of answer a question asks for (None when it does not say)."""
    low = text.lower()
    return next((kind for pattern, kind in _QUESTION_TYPES if pattern.search(low)), None)


_DURATION = re.compile(
    r"\b\d[\d.]*(?:-\d+)?[- ](?:business )?(?:second|minute|hour|day|week|month|year)s?\b"
    r"|\b(?:one|two|three|four|five|six|seven|ten|a few) (?:business )?(?:second|minute|hour|day|week|month|year)s?\b"
    r"|\bimmediate(?:ly)?\b",
    re.I,
)
_TYPE_PATTERNS = {
    "duration": _DURATION,
    "date": re.compile(
        r"\b\d{1,2} (January|February|March|April|May|June|July|August|September|October|November|December)\b"
        r"|\b(January|February|March|April|May|June|July|August|September|October|November|December) \d{4}\b"
    ),
    "time": re.compile(r"\b\d\d:\d\d\b"),
    "distance": re.compile(r"\b\d+ (?:metres|meters|m)\b", re.I),
    "money": re.compile(r"\$\d|\d%|\bfree\b|\bcustom pricing\b", re.I),
    "plan": re.compile(r"\b(Starter|Pro|Business|Enterprise) plans?\b"),
    "code": re.compile(r"\b[A-Z]\d{3}\b"),
    "definition": re.compile(r"^[A-Z]\d{3}:|\bmeans?\b"),
    "number": re.compile(r"\b\d[\d,.]*\b|\bunlimited\b"),
    "procedure": re.compile(
        r" > |^(To|Open|Go|Tap|Click|Choose|Hold|Turn|Start|Update|Request|Contact|Sign|Set|Invite|Fill|Link|Run"
        r"|Restart|Check|Press|Unplug|Plug|Connect|Enter|Write|Pack|Factory|Use|Place|Remove|Follow|Send|Verify)\b"
    ),
}


def has_answer_type(sentence: str, kind: str | None) -> bool:
    pattern = _TYPE_PATTERNS.get(kind or "")
    return bool(pattern and pattern.search(sentence))


def word_count(text: str) -> int:
    return len(text.split())
