"""Lexical (token-overlap) metrics: answer_f1, exact_match, correctness,
faithfulness and context_recall, plus the text helpers they share.

Everything here is deterministic pure Python: no model, no network, no numpy.

Tokens
    ``normalize_answer`` is the SQuAD normalisation: lowercase, delete
    punctuation (``don't`` becomes ``dont``), drop the articles a/an/the,
    collapse whitespace. ``tokens`` splits that on whitespace.
    ``content_tokens`` drops a small English stopword list from ``tokens``
    (negations such as ``not``/``no``/``never`` and numbers are kept, since
    they carry the meaning of a support answer).

Citation markers such as ``[doc-1]`` or ``[doc-1, doc-2]`` in an answer are
not answer content: every metric here strips them before scoring.

Coverage thresholds are inclusive (3 of 5 tokens is 60%, which passes a 60%
threshold) and are computed on *distinct* tokens.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from typing import Protocol

__all__ = [
    "CORRECTNESS_THRESHOLD",
    "GROUNDING_THRESHOLD",
    "STOPWORDS",
    "answer_f1",
    "citation_markers",
    "content_tokens",
    "context_recall",
    "correctness",
    "exact_match",
    "faithfulness",
    "is_abstention",
    "is_unanswerable",
    "normalize_answer",
    "split_sentences",
    "strip_citations",
    "tokens",
]

#: share of the ground truth's content tokens an answer must cover to be correct
CORRECTNESS_THRESHOLD = 0.6
#: share of a sentence's content tokens one context must hold for the sentence to be grounded
GROUNDING_THRESHOLD = 0.6

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


class _HasText(Protocol):
    @property
    def text(self) -> str: ...


ContextLike = str | _HasText

_PUNCT_RE = re.compile(r"[^\w\s]|_")
_ARTICLES_RE = re.compile(r"\b(?:a|an|the)\b")
_WS_RE = re.compile(r"\s+")


def _epsilon_at_least(covered: int, total: int, ratio: float) -> bool:
    return covered >= ratio * total - 1e-9


# --------------------------------------------------------------------------- tokens


@lru_cache(maxsize=512)
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


@lru_cache(maxsize=512)
def _content_set(text: str) -> frozenset[str]:
    return frozenset(content_tokens(text))


@lru_cache(maxsize=512)
def _token_set(text: str) -> frozenset[str]:
    return frozenset(tokens(text))


def _covered(needles: frozenset[str], haystack: frozenset[str], ratio: float) -> bool:
    return bool(needles) and _epsilon_at_least(len(needles & haystack), len(needles), ratio)


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


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences: at line breaks, and after ``.``/``!``/``?`` followed by
    whitespace and a capital letter or digit (not after common abbreviations such as "e.g.").
    Empty pieces are dropped."""
    out: list[str] = []
    for line in (text or "").splitlines():
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
    return out


# --------------------------------------------------------------------------- abstention and unanswerable

_NEG_ABLE = (
    r"(?:cant|cannot|can not|couldnt|could not|am unable to|was unable to|unable to|am not able to|"
    r"not able to|wasnt able to|was not able to|didnt|did not)"
)
_SOURCE = (
    r"(?:help cent(?:re|er)|help articles?|documents?|documentation|docs|context|contexts|knowledge base|"
    r"sources?|provided information|information (?:provided|available|i have)|articles?|materials?|faqs?|"
    r"text|passages?)"
)
_ABSTENTION_RES = tuple(
    re.compile(p)
    for p in (
        # "I can't find that", "I couldn't locate ...", "I'm unable to answer", "I did not find ..."
        rf"\b(?:i|im) {_NEG_ABLE} (?:find|locate|answer|determine|tell|identify|help with)\b",
        # "I don't know", "I don't have (any|that|enough) information"
        r"\bi (?:dont|do not) (?:know|have (?:\w+ )?(?:information|info|details|data|answer))\b",
        r"\bi have no (?:\w+ )?(?:information|info|details|data|knowledge|answer)\b",
        # "not in the help centre", "not covered in the provided documents"
        rf"\b(?:not|isnt|arent|wasnt|werent) (?:in|covered (?:in|by)|mentioned (?:in|by)|found in|available in|included in|part of|present in|"
        rf"addressed in|specified in|stated in|provided in) "
        rf"(?:(?:my|our|this|that|these|provided|given|available|current|your) )*{_SOURCE}\b",
        # "the documents don't mention ..."
        rf"\b{_SOURCE} (?:provided )?(?:does not|doesnt|do not|dont) (?:contain|mention|cover|say|specify|include|"
        rf"address|provide|have)\b",
        # "cannot answer", "unable to answer"
        r"\b(?:cant|cannot|can not|unable to|not able to) answer\b",
        r"\bno (?:relevant |specific )?(?:information|info|details|answer|mention) (?:about|on|regarding|for|of|in)\b",
        r"\b(?:not answerable|unanswerable|no answer available|(?:cannot|cant|can not|could not|couldnt) be answered)\b",
    )
)
# a leading sentence made only of these words ("Sorry!", "Great question.") is skipped
_FILLER = frozenset(
    "sorry im i am so very really unfortunately apologies my hmm hmmm oh ah well hi hello there thanks thank "
    "you for asking good great question we are afraid".split()
)


def _abstains(sentence: str) -> bool:
    norm = normalize_answer(sentence)
    return any(r.search(norm) for r in _ABSTENTION_RES)


def is_abstention(answer: str | None) -> bool:
    """True when the answer declines to answer.

    An answer abstains when it is empty (or None, or only punctuation and citation markers),
    or when its first substantive sentence - leading sentences made only of fillers such as
    "Sorry!" are skipped - contains an abstention phrase: "I can't find that ...",
    "I don't know", "I don't have information ...", "not in the help centre / documents",
    "the documents don't mention ...", "cannot answer", "no information about ...",
    "not answerable". A substantive answer that later says it cannot find some detail
    ("Returns take 30 days. I can't find anything on exchanges.") is an attempt, not an
    abstention.
    """
    if answer is None:
        return True
    sentences = [s for s in split_sentences(strip_citations(answer)) if tokens(s)]
    for sentence in sentences:
        if set(tokens(sentence)) <= _FILLER:
            continue
        return _abstains(sentence)
    return True


def is_unanswerable(ground_truth: str | None) -> bool:
    """True when the ground truth marks the question unanswerable: its SQuAD-normalised text
    starts with "not answerable" (or "unanswerable")."""
    norm = normalize_answer(ground_truth or "")
    return norm.startswith("not answerable") or norm.startswith("unanswerable")


# --------------------------------------------------------------------------- answer metrics


def answer_f1(answer: str, ground_truth: str) -> float:
    """SQuAD token F1 of the answer against the ground truth. Higher is better, in [0, 1].

    F1 = 2PR/(P+R) over the multiset of normalised tokens (citation markers stripped).
    When either side has no token, 1.0 if both are empty else 0.0 (SQuAD v2). When the
    ground truth marks the question unanswerable, 1.0 iff the answer abstains (SQuAD v2's
    no-answer rule).
    """
    if is_unanswerable(ground_truth):
        return float(is_abstention(answer))
    pred = tokens(strip_citations(answer))
    gold = tokens(ground_truth)
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
        return float(is_abstention(answer))
    return float(normalize_answer(strip_citations(answer)) == normalize_answer(ground_truth))


def correctness(answer: str, ground_truth: str) -> float | None:
    """Threshold rule on the answer against the ground truth. Higher is better, 0.0 or 1.0.

    - Unanswerable ground truth (``is_unanswerable``): 1.0 iff the answer abstains.
    - Answerable: an abstaining answer scores 0.0; otherwise 1.0 when the answer's content
      tokens cover >= 60% (``CORRECTNESS_THRESHOLD``) of the ground truth's distinct content
      tokens (recall of the ground truth), else 0.0. A ground truth made only of stopwords
      uses all its normalised tokens instead.
    - None when there is no ground truth (no token at all).
    """
    if is_unanswerable(ground_truth):
        return float(is_abstention(answer))
    gold = _content_set(ground_truth) or _token_set(ground_truth)
    if not gold:
        return None
    if is_abstention(answer):
        return 0.0
    have = _token_set(strip_citations(answer))
    return 1.0 if _covered(gold, have, CORRECTNESS_THRESHOLD) else 0.0


def _context_text(c: ContextLike) -> str:
    return c if isinstance(c, str) else c.text


def faithfulness(answer: str, contexts: Iterable[ContextLike]) -> float | None:
    """Share of the answer's sentences grounded in the retrieved contexts. Higher is better.

    The answer (citation markers stripped) is split into sentences (``split_sentences``);
    sentences without content tokens are ignored. A sentence is grounded when >= 60%
    (``GROUNDING_THRESHOLD``) of its distinct content tokens appear in at least one single
    retrieved context. Score = grounded sentences / sentences with content tokens; with no
    context at all nothing is grounded (0.0). None when the answer abstains or has no
    content tokens.
    """
    if is_abstention(answer):
        return None
    sentences = [s for s in (_content_set(x) for x in split_sentences(strip_citations(answer))) if s]
    if not sentences:
        return None
    ctx_sets = [_token_set(_context_text(c)) for c in contexts]
    grounded = sum(1 for s in sentences if any(_covered(s, c, GROUNDING_THRESHOLD) for c in ctx_sets))
    return grounded / len(sentences)


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
