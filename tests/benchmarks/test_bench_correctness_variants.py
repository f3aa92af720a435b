"""The correctness-variants benchmark: its families' arithmetic, the passages a reference draws
on, and its tables, on the tiny synthetic MTRAG-format file of the human-agreement test."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_correctness_variants as bench  # noqa: E402
from test_bench_human_agreement import _file  # noqa: E402

from pytest_ragdive.metrics.grounding import COVERAGE_RULE, FactEvidence, Rule  # noqa: E402

pytestmark = pytest.mark.slow  # loads the embedded model and scores a grid


PASSAGE = "Refunds are issued within 14 days to the original payment method."


def test_drawn_on_is_the_window_that_supports_a_reference_fact() -> None:
    contexts = ["The Hub ships to Canada in a week. " + PASSAGE + " Gift cards never expire.", "Pro costs $12."]
    assert bench.drawn_on(["Refunds are issued within 14 days."], contexts) == [PASSAGE]
    # a fact nothing in the contexts supports draws on nothing
    assert bench.drawn_on(["Lumio was founded in 1999 by Ada."], contexts) == []


def _parts(**kw: Any) -> bench.Parts:
    fact = FactEvidence("Refunds are issued within 14 days.", 4, 0.5, None)
    base: dict[str, Any] = dict(plain=False, facts=[fact], passages=[FactEvidence(PASSAGE, 8, 1.0, None)],
                                idf=[(2.0, 0.5)], question=0.5, partial=False, length=0.25, soft={0.6: [1.0]})
    base.update(kw)
    return bench.Parts(**base)


def test_every_family_keeps_the_plain_value_at_its_null_and_moves_it_otherwise() -> None:
    lexical = Rule("lexical")
    p = _parts()
    assert bench.value(0.5, p, lexical, "plain", 0.0) == 0.5
    assert bench.value(0.5, p, lexical, "passages", 0.5) == pytest.approx(0.75)  # passages fully covered
    assert bench.value(0.5, p, lexical, "question", 0.5) == pytest.approx(0.5)
    assert bench.value(0.5, p, lexical, "length", 1.0) == pytest.approx(0.125)
    assert bench.value(0.5, p, lexical, "soft", 0.6) == pytest.approx(1.0)
    assert bench.value(0.5, p, lexical, "idf", 1.0) == pytest.approx(0.5)
    assert bench.value(0.5, p, lexical, "partial", 0.5) == 0.5  # not a partial answer: unchanged
    assert bench.value(0.5, _parts(partial=True), lexical, "partial", 0.5) == pytest.approx(0.25)
    # unanswerable reference, no answer, no fact: the plugin's value stands in every family
    assert bench.value(1.0, _parts(plain=True), COVERAGE_RULE, "passages", 1.0) == 1.0
    assert bench.value(None, p, COVERAGE_RULE, "passages", 1.0) is None
    # no passage drawn on: the plain coverage
    assert bench.value(0.5, _parts(passages=[]), lexical, "passages", 1.0) == 0.5


def test_main_prints_the_families_out_of_fold(tmp_path: Path, capsys: Any) -> None:
    sys.argv = ["bench", "--data", str(_file(tmp_path)), "--resamples", "20", "--splits", "7,11", "--folds", "3"]
    bench.main()
    out = capsys.readouterr().out
    for family in ("plain", "passages", "idf", "question", "partial", "length", "soft", "all"):
        assert f"| {family} | " in out
    assert "Paired difference with each proxy" in out and "| rl_f |" in out
    assert "| rated fully faithful (median 4) |" in out
