"""Response classes of a chatbot turn, answer extraction and answer scoring (sharded diagnosis).

Classes (Lost in Conversation, after Herlihy et al.): ``answer_attempt``,
``clarification``, ``interrogation``, ``discussion``, ``hedge``, ``refusal``,
``missing``. Only answer attempts are scored.

The offline rule (:func:`classify_response`), first match wins:

1. ``missing``: no reply, or one without a word (only whitespace, punctuation
   or citation markers).
2. ``answer_attempt``: an ``Answer:`` line with a word after the colon (the
   study's self-marked answer; ``**Answer:**`` and any letter case count).
3. ``refusal``: the reply abstains or declines (``lexical.is_abstention``: "I
   can't find that in the help centre", "I don't know"...) or opens with a
   refusal ("I can't help with", "I won't", "I'm not allowed to").
4. ``interrogation``: two or more questions back to the user (sentences that
   end with ``?``); ``clarification``: exactly one.
5. ``hedge``: a hedging cue ("it depends", "depending on", "either ... or",
   "I'm not sure", "possibly", "might be", "could be") in the reply.
6. otherwise: ``discussion`` when ``require_answer_line`` (a target that
   marks its answers but did not mark this one talks around the question),
   else ``answer_attempt`` (a target that never marks answers, such as the
   bundled extractive example, answers in plain sentences).

:func:`extract_answer` takes the last ``Answer:`` line when there is one,
else the whole reply; :func:`score_answer` gives the best token F1 and exact
match of the extracted answer over the reference answer and its aliases, with
the one SQuAD normaliser of :mod:`pytest_ragdive.metrics.lexical`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import get_args

from ..metrics.lexical import (
    answer_f1,
    exact_match,
    is_abstention,
    normalize_answer,
    split_sentences,
    strip_citations,
    tokens,
)
from .records import ResponseClass

__all__ = [
    "RESPONSE_CLASSES",
    "ResponseClass",
    "classify_response",
    "extract_answer",
    "has_answer_line",
    "score_answer",
]

RESPONSE_CLASSES: tuple[str, ...] = get_args(ResponseClass)

_ANSWER_LINE = re.compile(r"^\s*[*_#>\s-]*answer\s*[*_]*\s*:\s*[*_]*\s*(?P<text>.*?)\s*[*_]*\s*$", re.I | re.M)
_REFUSAL = re.compile(
    r"^(?:sorry,? )?(?:i|im|i am) (?:cant|cannot|can not|wont|will not|am not allowed to|not allowed to|"
    r"am not able to help|must decline|decline)\b(?: to)? (?:help|assist|provide|share|discuss|do|answer|comply)"
)
_HEDGES = re.compile(
    r"\b(?:it depends|depending on|either\b.*\bor|i am not sure|im not sure|not certain|possibly|"
    r"might be|could be|perhaps)\b"
)


def has_answer_line(reply: str | None) -> bool:
    return any(tokens(m.group("text")) for m in _ANSWER_LINE.finditer(reply or ""))


def _questions(reply: str) -> int:
    return sum(1 for s in split_sentences(strip_citations(reply)) if s.rstrip().endswith("?") and tokens(s))


def classify_response(reply: str | None, *, require_answer_line: bool = False) -> ResponseClass:
    """The offline response class of one chatbot reply (the rule in the module docstring)."""
    if reply is None or not tokens(strip_citations(reply)):
        return "missing"
    if has_answer_line(reply):
        return "answer_attempt"
    norm = normalize_answer(strip_citations(reply))
    if is_abstention(reply) or _REFUSAL.search(norm):
        return "refusal"
    asked = _questions(reply)
    if asked >= 2:
        return "interrogation"
    if asked == 1:
        return "clarification"
    if _HEDGES.search(norm):
        return "hedge"
    return "discussion" if require_answer_line else "answer_attempt"


def extract_answer(reply: str | None) -> str:
    """The last non-empty ``Answer:`` line's text, else the whole reply (citation markers stripped)."""
    text = reply or ""
    marked = [m.group("text") for m in _ANSWER_LINE.finditer(text) if tokens(m.group("text"))]
    chosen = marked[-1] if marked else text
    return " ".join(strip_citations(chosen).split())


def score_answer(extracted: str, references: Sequence[str]) -> tuple[float, float]:
    """(best token F1, best exact match) of ``extracted`` over the references (answer and aliases)."""
    refs = [r for r in references if tokens(r)]
    if not refs:
        return 0.0, 0.0
    return max(answer_f1(extracted, r) for r in refs), max(exact_match(extracted, r) for r in refs)
