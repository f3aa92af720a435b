"""The semantic evidence of faithfulness and correctness (issue 27): the embedded model
(loaded from the wordllama wheel, offline, and lazily), paraphrases supported beyond their
shared words, the exact-term guard (numbers, negation, names), the supporting context and
span, coverage of the reference's facts, and courtesy that is not content."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from pytest_ragdive.core.records import Context, Turn
from pytest_ragdive.metrics.grounding import (
    COVERAGE_RULE,
    LEXICAL_COVERAGE,
    LEXICAL_SUPPORT,
    SUPPORT_RULE,
    Rule,
    correctness,
    coverage,
    exact_terms,
    faithfulness,
    support,
    unit_evidence,
    unit_supports,
)
from pytest_ragdive.metrics.offline import score_turn

CTX = [
    Context(id="p#1", doc_id="plans", text="The Pro plan costs $12 per month and includes 30 days of video history."),
    Context(id="r#1", doc_id="refunds", text="Exchanges are free in store. Refunds are issued within 14 days to the original payment method."),
]


def _run(code: str, **env: str) -> str:
    import os

    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env={**os.environ, **env}
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_the_embedded_model_loads_offline_without_network_and_matches_wordllama() -> None:
    out = _run(
        """
        import socket, sys
        def refuse(*a, **k):
            raise OSError("no network in this test")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        import pytest_ragdive.metrics.semantic as semantic
        heavy = [m for m in ("numpy", "tokenizers", "safetensors", "wordllama") if m in sys.modules]
        e = semantic.embedder()
        texts = ["Refunds are issued within 14 days.", "You get your money back in two weeks.", "x"]
        ours = e.embed(texts)
        import numpy as np
        from wordllama import WordLlama
        pkg = semantic.model_files()[0].parent.parent
        theirs = WordLlama.load(cache_dir=pkg, disable_download=True).embed(texts, norm=True)
        import json
        print(json.dumps({"heavy": heavy, "shape": list(ours.shape), "diff": float(np.abs(ours - theirs).max())}))
        """,
        HF_HUB_OFFLINE="1",
    )
    got = json.loads(out.strip().splitlines()[-1])
    assert got["heavy"] == []  # importing the module loads nothing: the model loads on first use
    assert got["shape"] == [3, 256]
    assert got["diff"] < 1e-5  # the same sentence embeddings as wordllama's own dense embed


def test_importing_grounding_loads_no_model_and_no_numpy() -> None:
    out = _run(
        """
        import sys
        import pytest_ragdive.metrics.grounding, pytest_ragdive.metrics.offline, pytest_ragdive.metrics.nli
        print([m for m in ("numpy", "tokenizers", "safetensors", "torch", "transformers") if m in sys.modules])
        """
    )
    assert out.strip() == "[]"


def test_a_paraphrase_is_supported_beyond_its_shared_words() -> None:
    para = "Refunds go back to the card you paid with, within 14 days."
    ev = unit_evidence([para], CTX)[0]
    assert ev is not None and ev.cosine is not None
    lexical = faithfulness(para, CTX, rule=LEXICAL_SUPPORT)
    semantic = faithfulness(para, CTX)
    assert lexical == pytest.approx(0.5)  # refund, within, 14, day of 8 terms
    assert semantic is not None and semantic > lexical + 0.05
    assert semantic == pytest.approx(SUPPORT_RULE.semantic_part(ev.cosine))


def test_an_unrelated_sentence_borrows_nothing() -> None:
    # it shares only function words with the contexts: no term, a cosine below the floor
    ev = unit_evidence(["The cat sat on the mat with the dog."], CTX)[0]
    assert ev is not None and ev.cosine is not None and ev.cosine < SUPPORT_RULE.floor
    assert faithfulness("The cat sat on the mat with the dog.", CTX) == 0.0


@pytest.mark.parametrize(
    ("unit", "exact"),
    [
        ("The Pro plan costs $19 per month.", {"19", "pro"}),  # a number the context does not hold
        ("Refunds are not issued within 14 days.", {"not", "14"}),  # a negation
        ("Refunds from Acme are issued within 14 days.", {"acme", "14"}),  # a name
    ],
)
def test_numbers_negations_and_names_stay_lexical(unit: str, exact: set[str]) -> None:
    assert exact_terms(unit) == exact
    ev = unit_evidence([unit], CTX)[0]
    assert ev is not None
    assert ev.cosine is None  # no window holds every exact term: the embedding is not asked
    assert faithfulness(unit, CTX) == faithfulness(unit, CTX, rule=LEXICAL_SUPPORT) == pytest.approx(ev.lexical)
    # without the guard the embedding would have lifted it: the sentences are near neighbours
    from pytest_ragdive.metrics.semantic import embedder

    sims = embedder().similarity([unit], [c.text for c in CTX] + [s for c in CTX for s in c.text.split(". ")])
    assert float(sims.max()) > 0.6


def test_support_names_the_context_and_span_behind_it() -> None:
    (s,) = unit_supports("Refunds go back to the card you paid with, within 14 days.", CTX)
    assert s.source == "contexts" and s.context == 1
    assert s.span is not None
    start, end = s.span
    # a window of the context: one sentence, or two adjacent ones
    assert "Refunds are issued within 14 days to the original payment method." in CTX[1].text[start:end]
    (p,) = unit_supports("The Pro plan costs $19 per month.", CTX)
    assert p.context == 0 and p.semantic == 0.0 and p.score == pytest.approx(5 / 6)
    (none,) = unit_supports("The cat sat on the mat with the dog.", CTX)
    assert none.source == "none" and none.context is None


def test_a_restatement_of_the_conversation_supports_with_the_same_rule() -> None:
    conv = ["Refunds are issued within 14 days."]
    (s,) = unit_supports("Refunds are issued within 14 days.", [], conv)
    assert s.source == "conversation" and s.conversation == 0 and s.score == 1.0
    # a unit that only shares a little with the conversation text is not a restatement
    (t,) = unit_supports("Refunds need a receipt.", [], conv)
    assert t.source == "none" and t.score == 0.0


def test_the_rule_combines_lexical_and_semantic_evidence() -> None:
    rule = Rule("max", 0.5, 0.9)
    assert rule.score(0.25, None) == 0.25
    assert rule.score(0.25, 0.7) == pytest.approx(0.5)
    assert rule.score(0.75, 0.7) == 0.75
    assert Rule("mean", 0.5, 0.9).score(0.25, 0.9) == pytest.approx(0.625)
    assert Rule("semantic", 0.5, 0.9).score(1.0, 0.4) == 0.0
    assert Rule("lexical").score(0.25, 0.99) == 0.25 and not Rule("lexical").semantic
    ev = unit_evidence(["Refunds are issued within 14 days."], CTX)[0]
    assert ev is not None and support(ev, LEXICAL_SUPPORT).semantic is None


GT = "Refunds are issued within 14 days to the original payment method."


def test_correctness_covers_the_reference_in_other_words() -> None:
    para = "Refunds go back to the card you paid with, within 14 days."
    lexical = coverage(para, GT, LEXICAL_COVERAGE)
    semantic = coverage(para, GT)
    assert lexical is not None and semantic is not None and semantic > lexical
    assert correctness(GT, GT) == 1.0
    # a number the reference does not hold: the embedding is not asked, and the fact whose
    # number is wrong covers nothing (7 of its 8 terms shared: 7/8 before the key-fact check)
    assert coverage("Refunds are issued within 30 days to the original payment method.", GT) == 0.0
    assert COVERAGE_RULE.cap == 24  # chosen inside the folds: a long reference is covered by 24 of its terms


def test_courtesy_is_not_content() -> None:
    # issue 27: on 8bb042a a courtesy-only reply scored faithfulness 1.0
    turn = Turn(rag_input="How long do refunds take?", ground_truth=GT, answer="Let me know if you have any other questions.", contexts=CTX)
    s = score_turn(turn)
    assert s["faithfulness"] is None and s["faithfulness_strict"] is None  # no answer, not a perfect one
    assert s["answer_attempt_rate"] == 0.0 and s["correctness"] == 0.0
    polite = Turn(rag_input="How long?", ground_truth=GT, answer=f"Happy to help! {GT} Let me know if ...", contexts=CTX)
    plain = Turn(rag_input="How long?", ground_truth=GT, answer=GT, contexts=CTX)
    got, want = score_turn(polite), score_turn(plain)
    for m in ("faithfulness", "correctness", "answer_f1", "exact_match", "answer_attempt_rate"):
        assert got[m] == want[m], m


def test_under_max_a_unit_the_contexts_hold_in_full_does_not_ask_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """A unit (or fact) whose terms the contexts hold in full has support 1 under a ``max``
    rule whatever its cosine: the model is asked only for the others, and every score is the
    one the model asked for every unit gives."""
    from pytest_ragdive.metrics import grounding, windows

    full = "Refunds are issued within 14 days."
    para = "Refunds go back to the card you paid with, within 14 days."
    ev_full, ev_para = unit_evidence([full, para], CTX, only_unsure=True)
    assert ev_full is not None and ev_full.lexical == 1.0 and ev_full.cosine is None
    assert ev_para is not None and ev_para.cosine is not None
    asked: list[list[str]] = []
    real = windows.guarded_best
    monkeypatch.setattr(grounding, "guarded_best", lambda texts, *a: asked.append(list(texts)) or real(texts, *a))
    grounding._unit_evidence.cache_clear()
    grounding._against_contexts.cache_clear()
    grounding._fact_evidence.cache_clear()
    answer = f"{full} {para}"
    got = [s.score for s in unit_supports(answer, CTX, ["Exchanges are free in store."])]
    assert asked == [[para]]  # the fully held unit was not embedded
    every = [support(ev, SUPPORT_RULE).score for ev in unit_evidence([full, para], CTX, ["Exchanges are free in store."]) if ev]
    # the same scores (to float32 rounding: the model embeds a batch of another size)
    assert got == pytest.approx(every, abs=1e-6) and got[0] == 1.0
    asked.clear()
    truth = "Refunds are issued within 14 days. The Pro plan costs $12 per month."
    got_cov = coverage(full, truth)
    assert asked == [["The Pro plan costs $12 per month."]]  # the fact the answer holds in full was not embedded
    facts = ["Refunds are issued within 14 days.", "The Pro plan costs $12 per month."]
    every_cov = grounding.coverage_of(grounding.fact_evidence(facts, [full]), COVERAGE_RULE)
    assert got_cov == pytest.approx(every_cov, abs=1e-6) and 0.3 < got_cov < 1.0
    # a rule that reads the cosine of every unit still asks for all of them
    mean = Rule("mean", 0.5, 0.9)
    assert mean.needs_cosine_when_lexical_full and not SUPPORT_RULE.needs_cosine_when_lexical_full
    asked.clear()
    grounding._unit_evidence.cache_clear()
    grounding._against_contexts.cache_clear()
    unit_supports(answer, CTX, (), mean)
    assert asked == [[full, para]]
