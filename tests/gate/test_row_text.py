"""What a gate row and the end-of-run line say to a person: bands clipped to the metric's
range, "any change" or "n/a" for what the paired test can detect, shares of the total drop
that never pass 100%, one plain-words reason per verdict, and honest statuses (no gated
metric with data is its own failing status; errored conversations are never a bare "passed")."""

from __future__ import annotations

import pytest

from pytest_ragdive.core.config import RagdiveConfig
from pytest_ragdive.core.records import Conversation, Turn
from pytest_ragdive.core.results import Baseline, BaselineMetric
from pytest_ragdive.gate.conclude import RunFacts, conclude
from pytest_ragdive.gate.outcome import GateStatus
from pytest_ragdive.gate.paired import PairedResult, Pairing
from pytest_ragdive.gate.power import Power, worse
from pytest_ragdive.gate.rows import GateRow, gate_row, num
from pytest_ragdive.reports.text import status_text


def row(**kw: object) -> GateRow:
    base = {"suite": "core", "metric": "faithfulness", "direction": "higher", "baseline_mean": 1.0, "band_low": 0.97,
            "band_high": 1.03, "tolerance": 0.03, "current": 0.64, "delta": -0.36, "verdict": "regression"}
    return GateRow(**{**base, **kw})  # type: ignore[arg-type]


def test_bands_are_clipped_to_the_metrics_range() -> None:
    bm = BaselineMetric(mean=0.0, min=0.0, max=0.0, direction="lower", tolerance=0.05)
    assert gate_row("core", "forgetfulness", 0.0, bm, 0.05).band_text == "[0.0000, 0.0500]"  # not [-0.0500, 0.0500]
    assert row().band_text == "[0.9700, 1.0000]"
    assert row(metric="sharded_gap", direction="lower", band_low=-1.2, band_high=0.05).band_text == "[-1.0000, 0.0500]"
    assert row(metric="my_latency", band_low=-0.5, band_high=3.0).band_text == "[-0.5000, 3.0000]"  # unknown range: as is
    assert row(band_low=-0.05).band_low == -0.05  # the verdict's band is untouched
    from pytest_ragdive.gate.diff import fmt_band

    assert fmt_band(bm, "forgetfulness") == "[0.0000, 0.0500]" and fmt_band(bm) == "[-0.0500, 0.0500]"  # baseline show/diff


def test_detectable_says_any_change_or_n_a() -> None:
    exact = Power(mdr=0.0, se=0.0, conversations=30, baseline_runs=5)
    assert row(power=exact).detectable_text == "any change"
    assert row(power=Power(mdr=None, se=None, conversations=30, baseline_runs=1)).detectable_text == "n/a"
    assert row().detectable_text == "n/a"
    assert row(power=Power(mdr=0.0412, se=0.01, conversations=30, baseline_runs=5, too_small=True)).detectable_text == \
        "0.0412 (larger than the tolerance)"
    assert "detects any change" in row(power=exact).power_text


def test_shares_are_of_the_total_drop_and_never_sum_past_100_percent() -> None:
    # two conversations got worse, one got much better: the mean drop is small, the shares are not over it
    p = Pairing(ids=["a", "b", "c"], drops=[1.0, 0.5, -1.2], weights=[1.0, 1.0, 1.0])
    moved = worse(p)
    assert [(m.id, round(m.share, 4)) for m in moved] == [("a", 0.6667), ("b", 0.3333)]
    assert sum(m.share for m in moved) == pytest.approx(1.0)
    assert moved[0].contribution / (p.drop or 1) > 3  # the old "share of the mean drop": 333%


def paired(drop: float, low: float, high: float, **kw: object) -> PairedResult:
    base = {"n": 15, "drop": drop, "low": low, "high": high, "p_drop": 0.001, "level": 0.05, "alpha": 0.05,
            "significant": low > 0, "within": high <= 0.03, "noise_free": False}
    return PairedResult(**{**base, **kw})  # type: ignore[arg-type]


def test_one_reason_in_plain_words_per_verdict() -> None:
    assert row(paired=paired(0.36, 0.31, 0.4)).reason == "paired drop 0.36, 95% bound 0.31 > tolerance 0.03, over 15 conversations"
    assert row(paired=paired(0.05, 0.01, 0.09)).reason == (
        "paired drop 0.05, 95% bound 0.01 > 0 and the value is below the band, over 15 conversations")
    assert row(verdict="pass", current=0.99, paired=paired(0.004, -0.01, 0.02)).reason == (
        "paired drop 0.004, 95% bound 0.02 ≤ tolerance 0.03, over 15 conversations")
    assert row(paired=paired(0.2, 0.2, 0.2, noise_free=True)).reason == (
        "paired drop 0.20 > tolerance 0.03 (exact: the runs repeat), over 15 conversations")
    assert row(verdict="no data", current=None).reason.startswith("no conversation had a value for this metric")
    assert row(metric="safety_pass_rate", tolerance=0.0, band_low=1.0, current=0.83).reason == \
        "0.830 is below the band (limit 1.000): zero tolerance"
    incon = row(verdict="inconclusive", look=2, looks=3, on_inconclusive="rerun", paired=paired(0.04, -0.01, 0.09),
                power=Power(mdr=0.08, se=0.02, conversations=15, baseline_runs=3, too_small=True, conversations_needed=107))
    assert incon.reason.endswith("still undecided after 2 rerun(s) (deciding needs 107 conversations)")
    assert num(0.0) == "0.00" and num(-0.0) == "0.00" and num(0.0016) == "0.0016"


def _cfg(tmp_path) -> RagdiveConfig:  # type: ignore[no-untyped-def]
    from pytest_ragdive.core.config import load_config

    (tmp_path / "pyproject.toml").write_text(
        '[tool.ragdive.gate]\ncorrectness = 0.03\nfaithfulness = 0.03\n[tool.ragdive.suites.core]\nsingle_turn = ["q.jsonl"]\n')
    return load_config(tmp_path / "pyproject.toml")


def _baseline() -> Baseline:
    bm = BaselineMetric(mean=1.0, min=1.0, max=1.0, tolerance=0.03)
    return Baseline(suites={"core": {"correctness": bm, "faithfulness": bm}})


def test_no_gated_metric_with_data_is_its_own_failing_status(tmp_path) -> None:  # type: ignore[no-untyped-def]
    convs = [Conversation(id="c", turns=[Turn(rag_input="q", answer="a")])]  # answered, but nothing scored
    out = conclude(convs, _cfg(tmp_path), _baseline(), RunFacts(planned=1))
    assert out.status is GateStatus.NO_DATA and out.failed
    text = status_text(out)
    assert text.startswith("ragdive gate FAILED: no gated metric had data (2 gated") and "out of band" not in text


def test_errored_conversations_are_never_a_bare_pass(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ok = [Conversation(id=f"c{i}", turns=[Turn(rag_input="q", answer="a", scores={"correctness": 1.0, "faithfulness": 1.0})])
          for i in range(3)]
    bad = Conversation(id="boom", error="RuntimeError: the bot fell over", turns=[Turn(rag_input="q")])
    out = conclude([*ok, bad], _cfg(tmp_path), _baseline(), RunFacts(planned=4))
    assert out.status is GateStatus.PASSED
    assert status_text(out).startswith("ragdive gate passed on 3 of 4 conversations; 1 errored")
    out = conclude(ok, _cfg(tmp_path), _baseline(), RunFacts(planned=3))
    assert status_text(out) == "ragdive gate passed: 2 gated metric(s) within their baseline bands"
