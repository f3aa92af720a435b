"""The caches of offline scoring's shared machinery (issue 34): bounded, keyed by the text
itself (a changed document is a new key, never a stale entry), and giving what the uncached
computation gives."""

from __future__ import annotations

import json
import random
from pathlib import Path

from pytest_ragdive.metrics import text, windows
from pytest_ragdive.metrics.lexical import _terms
from pytest_ragdive.metrics.text import split_sentences
from pytest_ragdive.metrics.windows import Window, prepare, windows_of

CORPUS = Path(__file__).resolve().parents[2] / "example_project" / "corpus" / "helpcentre.jsonl"


def _documents() -> list[str]:
    return [json.loads(line)["text"] for line in CORPUS.read_text().splitlines() if line.strip()]


def _prepare_uncached(texts: tuple[str, ...]) -> tuple[frozenset[str], tuple[Window, ...], tuple[Window, ...]]:
    """prepare() as it was before the per-document windows: every piece of every text, then windows_of."""
    union: set[str] = set()
    pieces: list[tuple[int, int, int, str]] = []
    for i, t in enumerate(texts):
        union |= _terms(t)
        pos = 0
        for sentence in split_sentences(t):
            start = t.find(sentence, pos)
            start = pos if start < 0 else start
            pos = start + len(sentence)
            if _terms(sentence):
                pieces.append((i, start, pos, sentence))
    out = tuple(windows_of(pieces))
    return frozenset(union), out, out[: len(pieces)]


def test_windows_built_per_document_are_the_windows_of_the_whole_set() -> None:
    docs = _documents()
    rng = random.Random(5)
    for _ in range(60):
        texts = tuple(rng.sample(docs, rng.randint(1, 5)))
        p = prepare(texts)
        assert (p.union, p.windows, p.sentences) == _prepare_uncached(texts)


def test_window_caches_are_bounded_and_a_changed_document_is_not_stale() -> None:
    assert windows._text_windows.cache_info().maxsize == 4096
    assert windows.prepare.cache_info().maxsize == 512
    doc = "Refunds take 5 days. Exchanges are free."
    before = prepare((doc,))
    changed = prepare((doc.replace("5", "7"),))
    assert [w.text for w in before.sentences] == ["Refunds take 5 days.", "Exchanges are free."]
    assert [w.text for w in changed.sentences] == ["Refunds take 7 days.", "Exchanges are free."]
    assert "7" in changed.union and "7" not in before.union
    # the same document at another rank: its windows name that rank
    assert {w.source for w in prepare(("Other text here.", doc)).windows if "Refunds" in w.text} == {1}


def test_the_per_sentence_analysis_gives_the_answer_analysis() -> None:
    """_analyse reads each sentence through a cache (_sentence): the same units, substantive
    text and abstention flags as analysing the answer as a whole."""
    assert text._sentence.cache_info().maxsize == 8192
    answer = (
        "I can't find that in the help centre. Returns take 30 days; exchanges are free, but "
        "the documents do not specify gift cards. Sorry! Let me know if you have other questions."
    )
    a = text._analyse(answer)
    assert a.first_abstains and a.some_abstains
    assert a.units == ("Returns take 30 days", "exchanges are free")
    assert "Let me know" not in a.substantive and "Sorry" not in a.substantive
    assert text.is_no_answer("Let me know if you have any other questions.")
    assert not text.is_abstention("Returns take 30 days. I can't find anything on exchanges.")
    text._sentence.cache_clear()  # a cold cache gives the same analysis
    text._analyse.cache_clear()
    assert text._analyse(answer) == a


def _analyse_whole(answer: str) -> text._Analysis:
    """_analyse as it was before the per-sentence cache (the reference)."""
    first: bool | None = None
    some = False
    units: list[str] = []
    kept: list[str] = []
    for sentence in text._split_sentences(text.strip_citations(answer)):
        if not text.tokens(sentence) or text._is_filler(sentence):
            continue
        whole = text._abstains(sentence)
        if first is None:
            first = whole
        if not whole and text._COURTESY_RE.search(text.normalize_answer(sentence)):
            continue
        clauses = [c for c in text._CLAUSE_SPLIT_RE.split(sentence) if c and text.tokens(c) and not text._is_filler(c)]
        own: list[str] = []
        for clause in clauses:
            if text._abstains(clause):
                some = True
                own.append(clause)
            elif not text._COURTESY_RE.search(text.normalize_answer(clause)):
                units.append(clause)
                own.append(clause)
        some = some or whole
        kept.append(sentence if len(own) == len(clauses) else " ".join(own))
    return text._Analysis(bool(first), some, tuple(units), " ".join(k for k in kept if k))


def test_answers_built_from_sources_courtesy_and_abstentions_analyse_as_before() -> None:
    sentences = [s for d in _documents() for s in split_sentences(d)] + [
        "I can't find that in the help centre.", "Sorry!", "Let me know if you have any other questions.",
        "The documents do not specify the fee, but you can ask support.", "Happy to help.", "Hi there.",
        "Returns take 30 days; however, I don't have information on exchanges.", "Yes.", "[doc-1]",
    ]
    rng = random.Random(11)
    for _ in range(400):
        answer = " ".join(rng.choice(sentences) for _ in range(rng.randint(1, 5)))
        assert text._analyse(answer) == _analyse_whole(answer), answer


def test_missing_words_read_through_the_per_text_cache_are_those_of_the_text() -> None:
    from pytest_ragdive.metrics import evidence

    assert evidence._word_terms.cache_info().maxsize == 8192
    unit = "Refunds for annual plans take four business-days, never more"
    assert evidence._words(unit, frozenset({"4", "day", "not"})) == ["four", "days", "never"]
    assert evidence._words(unit, frozenset()) == []
    assert evidence._words(unit.replace("four", "five"), frozenset({"5"})) == ["five"]  # another text, not a stale entry


def test_the_contexts_part_of_unit_evidence_is_shared_by_every_conversation_so_far() -> None:
    """A turn's faithfulness (with the conversation so far) and strict faithfulness (without)
    read one cached evidence against the contexts; the conversation only adds its own column."""
    from pytest_ragdive.metrics import grounding

    grounding._against_contexts.cache_clear()
    ctx = ["Refunds are issued within 14 days. Exchanges are free in store."]
    units = ["Refunds are issued within 14 days.", "Gift cards never expire."]
    strict = grounding.unit_evidence(units, ctx)
    with_conv = grounding.unit_evidence(units, ctx, ["Gift cards never expire."])
    assert grounding._against_contexts.cache_info().hits >= 1
    assert [(e.lexical, e.cosine, e.window, e.lexical_window) for e in strict if e] == [
        (e.lexical, e.cosine, e.window, e.lexical_window) for e in with_conv if e]
    assert all(e.conversation == () for e in strict if e)
    assert [len(e.conversation) for e in with_conv if e] == [1, 1]
    changed = grounding.unit_evidence(units, [ctx[0].replace("14", "30")])  # another document: not served stale
    assert changed[0] is not None and changed[0].lexical < 1.0
    assert grounding._against_contexts.cache_info().maxsize == 1024
