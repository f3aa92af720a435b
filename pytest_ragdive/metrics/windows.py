"""Where in a set of texts a sentence finds its evidence: the texts' sentences and
adjacent pairs of sentences (*windows*) with their match terms and character spans, the
exact terms an embedding cannot be trusted with (numbers, negation, names), and the best
cosine over the windows that hold a sentence's exact terms (the embedded model,
:mod:`.semantic`, imported on first use). The rule that turns this into support is
:mod:`.grounding`'s."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.memo import memo
from .lexical import _terms
from .text import match_terms, split_sentences

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Prepared", "Window", "exact_terms", "guarded_best", "guarded_cosines", "prepare", "terms_of", "window_matrix", "windows_of"]


@dataclass(frozen=True)
class Window:
    """One or two adjacent sentences of a context (or of an answer, for coverage)."""

    source: int  # index of the context (coverage: of the answer's first unit in the window)
    start: int  # character span in that context's text
    end: int
    text: str
    terms: frozenset[str]



_WORD_RE = re.compile(r"[A-Za-z0-9][\w'’-]*")


@memo(maxsize=8192)
def exact_terms(text: str) -> frozenset[str]:
    """The terms of ``text`` an embedding cannot be trusted with: numbers, negation
    (``not``, which "never", "no" and "don't" become) and names (capitalised words after
    the first)."""
    terms = _terms(text)
    out = {t for t in terms if t == "not" or any(ch.isdigit() for ch in t)}
    for i, m in enumerate(_WORD_RE.finditer(text)):
        if i and m.group(0)[0].isupper():
            out.update(t for t in match_terms(m.group(0)) if t in terms)
    return frozenset(out)


@dataclass(frozen=True)
class Prepared:
    union: frozenset[str]
    windows: tuple[Window, ...]  # sentences, then adjacent pairs
    sentences: tuple[Window, ...]


def windows_of(pieces: Sequence[tuple[int, int, int, str]]) -> list[Window]:
    """Each piece (source, start, end, text) and each pair of adjacent pieces of one source.
    A pair's terms are its two pieces' (the terms are a set of single words, each normalised
    alone, and the pair's text is the two joined by a space: the same set, not read again)."""
    singles = [Window(s, a, b, t, _terms(t)) for s, a, b, t in pieces]
    pairs = [
        Window(w1.source, w1.start, w2.end, f"{w1.text} {w2.text}", w1.terms | w2.terms)
        for w1, w2 in zip(singles, singles[1:], strict=False)
        if w1.source == w2.source
    ]
    return singles + pairs


@memo(maxsize=4096)
def _text_windows(source: int, text: str) -> tuple[tuple[Window, ...], tuple[Window, ...]]:
    """The sentence windows of one text (those with a term), then its adjacent pairs, as
    context ``source``: once per document and rank, however the turns combine the documents
    (keyed by the text itself: a changed document is a new key, never a stale entry)."""
    pieces: list[tuple[int, int, int, str]] = []
    pos = 0
    for sentence in split_sentences(text):
        start = text.find(sentence, pos)
        start = pos if start < 0 else start
        pos = start + len(sentence)
        if _terms(sentence):
            pieces.append((source, start, pos, sentence))
    windows = windows_of(pieces)
    return tuple(windows[: len(pieces)]), tuple(windows[len(pieces) :])


@memo(maxsize=512)
def prepare(texts: tuple[str, ...]) -> Prepared:
    sentences: list[Window] = []
    pairs: list[Window] = []
    for i, text in enumerate(texts):
        own, adjacent = _text_windows(i, text)
        sentences += own
        pairs += adjacent
    return Prepared(terms_of(texts), (*sentences, *pairs), tuple(sentences))


@memo(maxsize=512)
def terms_of(texts: tuple[str, ...]) -> frozenset[str]:
    """The union of the texts' match terms (a turn whose units the contexts hold in full
    needs no more of them than this: no windows)."""
    union: set[str] = set()
    for text in texts:
        union |= _terms(text)
    return frozenset(union)


@memo(maxsize=512)
def window_matrix(texts: tuple[str, ...]) -> np.ndarray:
    """The embeddings of a set of windows' texts, once per set (contexts repeat across turns)."""
    from .semantic import embedder

    return embedder().embed(list(texts))


def guarded_best(
    texts: Sequence[str], exact: Sequence[frozenset[str]], windows: Sequence[Window]
) -> list[tuple[float | None, Window | None]]:
    """Per text, the best cosine over the windows that hold its exact terms. A window no
    text's guard lets through is not embedded (its row of the matrix is the empty text's,
    zero, and never read): the same matrix shape, so the same cosines to the last bit."""
    if not texts or not windows:
        return [(None, None)] * len(texts)
    import numpy as np

    from .semantic import embedder

    n = len(windows)
    oks: list[np.ndarray | None] = [
        np.fromiter((need <= w.terms for w in windows), dtype=bool, count=n) if need else None for need in exact
    ]
    if all(ok is not None for ok in oks):
        used = np.logical_or.reduce([ok for ok in oks if ok is not None])
        keyed = tuple(w.text if u else "" for w, u in zip(windows, used.tolist(), strict=True))
    else:
        keyed = tuple(w.text for w in windows)
    sims = embedder().embed(list(texts)) @ window_matrix(keyed).T
    out: list[tuple[float | None, Window | None]] = []
    for i, ok in enumerate(oks):
        row = sims[i]
        if ok is not None:
            if not ok.any():
                out.append((None, None))
                continue
            row = np.where(ok, row, -np.inf)
        j = int(np.argmax(row))
        out.append((float(row[j]), windows[j]))
    return out


def guarded_cosines(texts: Sequence[str], exact: Sequence[frozenset[str]], others: Sequence[str]) -> np.ndarray | None:
    """Guarded cosines of every text with every one of ``others`` (-inf where the guard fails)."""
    if not texts or not others:
        return None
    import numpy as np

    from .semantic import embedder

    sims = embedder().similarity(list(texts), list(others))
    other_terms = [_terms(o) for o in others]
    for i, need in enumerate(exact):
        if need:
            for j, ot in enumerate(other_terms):
                if not need <= ot:
                    sims[i, j] = -np.inf
    return sims
