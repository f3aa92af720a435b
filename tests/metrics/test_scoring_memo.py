"""The second round of offline scoring's memos (issue 34): each cached figure equals the one
computed without the cache on varied inputs, the caches are bounded, and the records built
from cached rows are new objects (a turn's records are never shared with another turn's)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np

from pytest_ragdive.metrics import evidence, grounding, lexical, windows
from pytest_ragdive.metrics.grounding import (
    COVERAGE_RULE,
    LEXICAL_COVERAGE,
    LEXICAL_SUPPORT,
    SUPPORT_RULE,
    Rule,
    support,
    unit_evidence,
    unit_supports,
)
from pytest_ragdive.metrics.semantic import embedder
from pytest_ragdive.metrics.text import asserted_units, strip_citations
from pytest_ragdive.metrics.windows import Window, exact_terms, guarded_best, prepare

CORPUS = Path(__file__).resolve().parents[2] / "example_project" / "corpus" / "helpcentre.jsonl"


def _documents() -> list[str]:
    return [json.loads(line)["text"] for line in CORPUS.read_text().splitlines() if line.strip()]


def _sentences(docs: list[str]) -> list[str]:
    return [s.strip() for d in docs for s in d.split(". ") if len(s.split()) >= 4]


def _guarded_best_every_window(
    texts: list[str], exact: list[frozenset[str]], wins: tuple[Window, ...]
) -> list[tuple[float | None, Window | None]]:
    """guarded_best as it was: every window embedded, whatever the guards."""
    sims = embedder().embed(texts) @ embedder().embed([w.text for w in wins]).T
    out: list[tuple[float | None, Window | None]] = []
    for i, need in enumerate(exact):
        row = sims[i]
        if need:
            ok = np.array([need <= w.terms for w in wins])
            if not ok.any():
                out.append((None, None))
                continue
            row = np.where(ok, row, -np.inf)
        j = int(np.argmax(row))
        out.append((float(row[j]), wins[j]))
    return out


def test_windows_no_guard_lets_through_are_not_embedded_and_the_cosines_are_the_same() -> None:
    docs, rng = _documents(), random.Random(11)
    sents = _sentences(docs)
    seen_skipped = False
    for _ in range(40):
        wins = prepare(tuple(rng.sample(docs, rng.randint(1, 5)))).windows
        texts = rng.sample(sents, rng.randint(1, 4))
        exact = [exact_terms(t) for t in texts]
        got = guarded_best(texts, exact, wins)
        assert got == _guarded_best_every_window(texts, exact, wins)  # the same floats, to the last bit
        if all(exact) and any(not any(e <= w.terms for e in exact) for w in wins):
            seen_skipped = True
    assert seen_skipped  # the inputs did exercise windows left out


def test_the_embedder_encodes_as_the_batch_encoder_does() -> None:
    tok = embedder().tokenizer
    texts = _sentences(_documents())[:200] + ["", "  ", "£150, €9.99 and 30% off!", "Überweisung — naïve café"]
    batch = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
    assert [tok.encode(t, add_special_tokens=False).ids for t in texts] == batch


def test_the_lexical_window_per_document_is_the_best_sentence_of_the_whole_set() -> None:
    docs, rng = _documents(), random.Random(3)
    sents = _sentences(docs)
    for _ in range(200):
        texts = tuple(rng.sample(docs, rng.randint(1, 5))) + ((rng.choice(docs),) if rng.random() < 0.3 else ())
        unit = rng.choice(sents) if rng.random() < 0.7 else " ".join(rng.sample(" ".join(sents[:50]).split(), 6))
        terms = lexical._terms(unit)
        if not terms:
            continue
        expected = max(prepare(texts).sentences, key=lambda w: (len(terms & w.terms), -len(w.terms)), default=None)
        found = None
        for j, t in enumerate(texts):
            own = grounding._lexical_sentence(unit, t)
            if own is not None and (found is None or own[0] > found[0]):
                found = (own[0], windows._text_windows(j, t)[0][own[1]])
        assert (None if found is None else found[1]) == expected
        ev = grounding._against_contexts((unit,), texts, True, False)
        assert ev.lex_windows == ((expected if ev.lexicals[0] else None),)


def _supports_uncached(answer: str, texts: list[str], conversation: list[str], rule: Rule) -> list[grounding.Support]:
    units = asserted_units(strip_citations(answer))
    grounding._unit_evidence.cache_clear()
    grounding._against_contexts.cache_clear()
    evidence_ = unit_evidence(units, texts, conversation, semantic=rule.semantic,
                              only_unsure=not rule.needs_cosine_when_lexical_full)
    return [support(ev, rule) for ev in evidence_ if ev]


def test_cached_supports_equal_the_uncached_ones() -> None:
    docs, rng = _documents(), random.Random(7)
    sents = _sentences(docs)
    for _ in range(30):
        answer = " ".join(s + "." for s in rng.sample(sents, rng.randint(1, 3)))
        texts = rng.sample(docs, rng.randint(0, 4))
        conversation = rng.sample(sents, rng.randint(0, 3)) + ([""] if rng.random() < 0.3 else [])
        for rule in (SUPPORT_RULE, LEXICAL_SUPPORT, Rule("mean", 0.5, 0.9)):
            first = unit_supports(answer, texts, conversation, rule)
            again = unit_supports(answer, texts, [c for c in conversation if lexical._terms(c)], rule)
            assert first == again == _supports_uncached(answer, texts, conversation, rule)
            first.clear()  # the caller's list is its own
            assert unit_supports(answer, texts, conversation, rule) == again


def test_cached_answer_figures_equal_the_uncached_ones_and_records_are_new() -> None:
    docs, rng = _documents(), random.Random(9)
    sents = _sentences(docs)
    cases = []
    for _ in range(40):
        gt = " ".join(s + "." for s in rng.sample(sents, rng.randint(1, 2)))
        answer = rng.choice([gt, " ".join(s + "." for s in rng.sample(sents, 2)), "I can't find that in the help centre.",
                             gt.replace("1", "2"), ""])
        cases.append((answer, rng.choice([gt, "unanswerable", ""])))
    rules = (COVERAGE_RULE, LEXICAL_COVERAGE)
    cached = [(lexical.answer_f1(a, g), lexical.exact_match(a, g), *(grounding.correctness(a, g, r) for r in rules),
               *(evidence.reference_coverage(a, g, r) for r in rules)) for a, g in cases]
    for f in (lexical._answer_f1, lexical._exact_match, grounding._correctness, evidence._coverage_rows,
              grounding._fact_evidence, grounding._unit_supports):
        f.cache_clear()
    cold = [(lexical.answer_f1(a, g), lexical.exact_match(a, g), *(grounding.correctness(a, g, r) for r in rules),
             *(evidence.reference_coverage(a, g, r) for r in rules)) for a, g in cases]
    assert cached == cold
    a, g = cases[0]
    one, two = evidence.reference_coverage(a, g), evidence.reference_coverage(a, g)
    assert one == two and all(x is not y and x.missing is not y.missing for x, y in zip(one, two, strict=True))


def test_the_memos_are_bounded() -> None:
    for f, size in ((grounding._unit_supports, 2048), (grounding._lexical_sentence, 16384), (grounding._correctness, 4096),
                    (lexical._answer_f1, 4096), (lexical._exact_match, 4096), (evidence._coverage_rows, 4096),
                    (windows.window_matrix, 512)):
        assert f.cache_info().maxsize == size
    lexical._exact_match.cache_clear()
    for i in range(4200):
        lexical.exact_match(f"{i} euros", "5 euros")
    assert lexical._exact_match.cache_info().currsize == 4096
    assert lexical.exact_match("5 euros", "5 euros") == 1.0


def test_cached_personal_data_hits_equal_a_fresh_scan() -> None:
    from pytest_ragdive.metrics import safety
    from pytest_ragdive.metrics.pii import PiiCheck

    texts = ["Mail jane.doe@example.com or call +1 415 555 0100.", "No digits here.", "SSN 123-45-6789", "", None]
    checks = (safety.DEFAULT_PII, PiiCheck.of(["email"]), PiiCheck.of([]),
              PiiCheck.of(["email", "phone"], allow=["jane.doe@example.com"]))
    for pii in checks:
        for t in texts:
            first = safety.pii_hits(t, pii)
            assert first == safety.pii_hits(t, pii) == pii.find(t)
            first.append(first[0]) if first else first.append(None)  # type: ignore[arg-type]
            assert safety.pii_hits(t, pii) == pii.find(t)  # the caller's list is its own
    assert safety._pii_hits.cache_info().maxsize == 4096


def test_the_union_of_a_set_of_texts_is_the_prepared_union() -> None:
    docs, rng = _documents(), random.Random(13)
    for _ in range(30):
        texts = tuple(rng.sample(docs, rng.randint(0, 5)))
        assert windows.terms_of(texts) == prepare(texts).union == frozenset().union(*(lexical._terms(t) for t in texts))
    assert windows.terms_of.cache_info().maxsize == 512
