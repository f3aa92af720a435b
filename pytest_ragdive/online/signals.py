"""The quality signals of one production request: one pure function, no ground truth needed.

``request_signals(messages, response, ...)`` reads the history, the answer, the
retrieved contexts (with their scores) and the stage timings of one request and
returns a :class:`RequestSignals` record. Each signal is defined here once:

================  ==========================================================================
signal            definition
================  ==========================================================================
n_contexts        number of retrieved contexts
empty_retrieval   ``n_contexts == 0``
top_score         highest ``Context.score`` among the contexts (None: no context has a score)
response_chars    ``len(answer)``
has_citation      the answer cites at least one source, by the rule the offline
                  ``citation_rate`` uses (``metrics.safety.cited_ids``: the response's
                  ``citations`` plus inline ``[id]`` markers)
hedging           the answer contains a hedging phrase (``HEDGING_PHRASES``, matched on
                  whole words after ``normalize_for_match``)
abstained         the answer declines to answer (``metrics.lexical.is_abstention``)
language          BCP 47 code of the answer's language by a cheap rule (``detect_language``);
                  ``und`` when undetermined
grounding         the offline ``faithfulness`` of the answer in its contexts
                  (``metrics.grounding.faithfulness``: term-weighted lexical and semantic
                  support of what the answer asserts; 0.0 with no context; None when the
                  answer abstains or says nothing of substance)
user_turns        number of user messages in the history (the new one included)
retrieval_s, generation_s, total_s
                  the stage timings passed in (None when not measured)
================  ==========================================================================
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from pydantic import BaseModel, ConfigDict

from ..core.records import TargetResponse, Turn
from ..metrics.grounding import faithfulness
from ..metrics.lexical import is_abstention
from ..metrics.safety import cited_ids, normalize_for_match

__all__ = ["HEDGING_PHRASES", "RequestSignals", "detect_language", "is_hedged", "request_signals"]

#: phrases that mark an answer as hedged (compared after ``normalize_for_match``, so
#: "I'm not sure" is written "i m not sure"); each must start and end at a word boundary
HEDGING_PHRASES: tuple[str, ...] = (
    "probably",
    "possibly",
    "perhaps",
    "maybe",
    "may be",
    "might",
    "likely",
    "i think",
    "i believe",
    "i guess",
    "not sure",
    "not certain",
    "it seems",
    "it appears",
    "unclear",
    "needs to be confirmed",
    "please verify",
)


class RequestSignals(BaseModel):
    """The signals of one request (see the module docstring for each definition)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n_contexts: int
    empty_retrieval: bool
    top_score: float | None
    response_chars: int
    has_citation: bool
    hedging: bool
    abstained: bool
    language: str
    grounding: float | None
    user_turns: int
    retrieval_s: float | None = None
    generation_s: float | None = None
    total_s: float | None = None


def is_hedged(answer: str) -> bool:
    """True when the answer contains one of ``HEDGING_PHRASES`` as whole words."""
    hay = f" {normalize_for_match(answer)} "
    return any(f" {p} " in hay for p in HEDGING_PHRASES)


# (language, first code point, last code point) of scripts that name one language
_SCRIPTS: tuple[tuple[str, int, int], ...] = (
    ("ko", 0xAC00, 0xD7A3),  # Hangul syllables
    ("ko", 0x1100, 0x11FF),  # Hangul jamo
    ("ja", 0x3040, 0x30FF),  # Hiragana, Katakana
    ("zh", 0x4E00, 0x9FFF),  # CJK unified ideographs (ja when kana are present too)
    ("ru", 0x0400, 0x04FF),  # Cyrillic
    ("el", 0x0370, 0x03FF),  # Greek
    ("he", 0x0590, 0x05FF),  # Hebrew
    ("ar", 0x0600, 0x06FF),  # Arabic
    ("hi", 0x0900, 0x097F),  # Devanagari
    ("th", 0x0E00, 0x0E7F),  # Thai
)
# a few very frequent function words per Latin-script language
_STOPWORDS: dict[str, frozenset[str]] = {
    "en": frozenset("the and is are to of in a an you your our we it that for with can not this be on or".split()),
    "de": frozenset("der die das und ist nicht sie ich mit auf für ein eine zu den von".split()),
    "fr": frozenset("le la les et est des une pas vous pour que dans avec sur au du".split()),
    "es": frozenset("el la los las y es que una por para con del se su como está".split()),
    "nl": frozenset("de het een en is van niet je ik dat op te voor met zijn".split()),
    "it": frozenset("il lo gli le e di che una per con non sono della nel".split()),
    "pt": frozenset("o os as e é que uma por para com não do da em você".split()),
}
_WORD_RE = re.compile(r"\b[^\W\d_]+\b")
_LETTER_RE = re.compile(r"[^\W\d_]")
_SCRIPT_RES = tuple((lang, re.compile(f"[{chr(lo)}-{chr(hi)}]")) for lang, lo, hi in _SCRIPTS)


def _word_langs() -> Mapping[str, tuple[str, ...]]:
    """Each function word and the languages it belongs to (a constant table)."""
    out: dict[str, tuple[str, ...]] = {}
    for lang, words in _STOPWORDS.items():
        for w in words:
            out[w] = (*out.get(w, ()), lang)
    return MappingProxyType(out)


_WORD_LANGS = _word_langs()


def detect_language(text: str) -> str:
    """BCP 47 code of the text's language, by a rule cheap enough for every request.

    When most letters belong to a script that names one language (Hangul ``ko``,
    kana ``ja``, CJK ideographs ``zh`` - ``ja`` if any kana -, Cyrillic ``ru``,
    Greek, Hebrew, Arabic, Devanagari ``hi``, Thai), that language. Otherwise the
    Latin-script language whose frequent function words occur most often among the
    words (en, de, fr, es, nl, it, pt; ties go to the first in that order). ``und``
    (undetermined) when the text has no letter or no function word of these.
    """
    words = _WORD_RE.findall(text.lower())
    if not text.isascii():
        letters = len(_LETTER_RE.findall(text))
        counts: dict[str, int] = {}
        for lang, rx in _SCRIPT_RES:
            n = len(rx.findall(text))
            if n:
                counts[lang] = counts.get(lang, 0) + n
        if sum(counts.values()) * 2 > letters:
            if counts.get("ja"):
                return "ja"
            return max(counts, key=lambda k: counts[k])
    hits: dict[str, int] = dict.fromkeys(_STOPWORDS, 0)
    for w in words:
        for lang in _WORD_LANGS.get(w, ()):
            hits[lang] += 1
    best = max(hits, key=lambda k: hits[k])  # first of the maximal ones, in _STOPWORDS order
    return best if hits[best] else "und"


def request_signals(
    messages: Sequence[Mapping[str, str]],
    response: TargetResponse,
    *,
    retrieval_s: float | None = None,
    generation_s: float | None = None,
    total_s: float | None = None,
) -> RequestSignals:
    """The signals of one request: ``messages`` is the history the target got (the last
    item the new user message), ``response`` what it returned; the timings are the
    measured stage durations in seconds. Pure: nothing is changed, nothing recorded."""
    answer = response.answer
    contexts = response.contexts
    scores = [c.score for c in contexts if c.score is not None]
    user_turns = [m for m in messages if m.get("role") == "user"]
    turn = Turn(rag_input=user_turns[-1].get("content", "") if user_turns else "", answer=answer, citations=response.citations)
    return RequestSignals(
        n_contexts=len(contexts),
        empty_retrieval=not contexts,
        top_score=max(scores) if scores else None,
        response_chars=len(answer),
        has_citation=bool(cited_ids(turn)),
        hedging=is_hedged(answer),
        abstained=is_abstention(answer),
        language=detect_language(answer),
        grounding=None if is_abstention(answer) else faithfulness(answer, contexts),
        user_turns=len(user_turns),
        retrieval_s=retrieval_s,
        generation_s=generation_s,
        total_s=total_s,
    )
