"""One gate rule (issue 24): ``assert_no_regression`` applies the session's rule: the
gated metrics and their tolerances, band + paired with the conversations, inconclusive
reported; ``metrics=`` narrows it. On 9690bde it ran the band alone on every baseline
metric, the ungated ones at tolerance 0 (answer_f1 failed at -0.011)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ragdive import assert_no_regression
from pytest_ragdive.core.config import RagdiveConfig
from pytest_ragdive.core.records import Conversation, Turn
from pytest_ragdive.core.results import Baseline, BaselineMetric, MetricValue, SuiteResult
from pytest_ragdive.gate.baseline import build_baseline
from pytest_ragdive.gate.conclude import RunFacts, conclude
from pytest_ragdive.metrics.aggregate import aggregate


@pytest.fixture(autouse=True)
def _no_project_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the helper finds no ragdive config here: the plugin's default gate


def _bm(mean: float, tol: float = 0.0, direction: str = "higher") -> BaselineMetric:
    return BaselineMetric(mean=mean, min=mean, max=mean, tolerance=tol, direction=direction)  # type: ignore[arg-type]


def test_ungated_metrics_are_not_gated() -> None:
    """exact_match is in the baseline (every metric is) but not in the gate: it may move."""
    bl = Baseline(suites={"core": {"correctness": _bm(0.80, 0.03), "exact_match": _bm(0.40)}})
    moved = SuiteResult(suite="core", metrics={"correctness": MetricValue(value=0.79), "exact_match": MetricValue(value=0.389)})
    rows = assert_no_regression(moved, bl)
    assert [r.metric for r in rows] == ["correctness"] and rows[0].verdict == "pass"
    # named explicitly, it is gated (at its stored tolerance, 0)
    with pytest.raises(AssertionError, match=r"core/exact_match .*REGRESSION"):
        assert_no_regression(moved, bl, ["exact_match"])


def test_the_gates_tolerances_apply() -> None:
    bl = Baseline(suites={"core": {"correctness": _bm(0.80, 0.0)}})  # recorded without a tolerance
    res = SuiteResult(suite="core", metrics={"correctness": MetricValue(value=0.75)})
    with pytest.raises(AssertionError, match="correctness"):
        assert_no_regression(res, bl)  # default gate: correctness = 0.03
    cfg = RagdiveConfig.model_validate({"gate": {"correctness": 0.1}})
    assert assert_no_regression(res, bl, config=cfg)[0].tolerance == 0.1


def _convs(values: list[float], run: int = 0) -> list[Conversation]:
    return [
        Conversation(id=f"c{i:02d}", suite="core", run=run,
                     turns=[Turn(rag_input="q", answer="a", scores={"answer_f1": v})], scores={"answer_f1": v})
        for i, v in enumerate(values)
    ]


def test_band_and_paired_with_the_conversations_inconclusive_reported() -> None:
    """The band says regression; one conversation out of ten dropped, the others did not:
    the paired test cannot call that a real drop, so the row is inconclusive (and fails,
    saying so, as the session's last look would), not a plain band regression."""
    gate = {"answer_f1": 0.03}
    base = _convs([0.8] * 10)
    bl = build_baseline({"core": aggregate("core", base)}, gate, config_hash="", backend="offline",
                        judge_models={}, plugin_version="0", convs=base)
    now = _convs([0.8] * 9 + [0.0])
    res = aggregate("core", now)
    cfg = RagdiveConfig.model_validate({"gate": gate})
    with pytest.raises(AssertionError) as e:
        assert_no_regression(res, bl, conversations=now, config=cfg)
    assert "core/answer_f1" in str(e.value) and "INCONCLUSIVE" in str(e.value) and "paired drop" in str(e.value)
    # without the conversations: the band alone (a regression)
    with pytest.raises(AssertionError, match="REGRESSION"):
        assert_no_regression(res, bl, config=cfg)
    # gate.inconclusive = "pass": reported in the rows, not raised
    lenient = RagdiveConfig.model_validate({"gate": {**gate, "inconclusive": "pass"}})
    rows = assert_no_regression(res, bl, conversations=now, config=lenient)
    assert rows[0].verdict == "inconclusive" and rows[0].method == "band+paired"


def test_the_helper_and_the_session_gate_agree() -> None:
    gate = {"answer_f1": 0.03}
    values = [0.8, 0.7, 0.9, 0.6, 0.8, 0.75, 0.85, 0.7, 0.8, 0.9]
    base = _convs(values)
    bl = build_baseline({"core": aggregate("core", base)}, gate, config_hash="", backend="offline",
                        judge_models={}, plugin_version="0", convs=base)
    cfg = RagdiveConfig.model_validate({"gate": {**gate, "inconclusive": "fail"}, "suites": {"core": {"single_turn": ["x"]}}})
    for now in (_convs(values), _convs([v - 0.2 for v in values])):
        session = conclude(now, cfg, bl, RunFacts(planned=len(now))).gate or []
        assert session
        if any(r.failed for r in session):
            with pytest.raises(AssertionError) as e:
                assert_no_regression(aggregate("core", now), bl, conversations=now, config=cfg)
            assert str(e.value) == "\n".join(r.line() for r in session if r.failed)
        else:
            helper = assert_no_regression(aggregate("core", now), bl, conversations=now, config=cfg)
            assert [r.line() for r in helper] == [r.line() for r in session]


def test_the_helper_prints_the_sessions_bounds_under_the_default_rerun_policy() -> None:
    """issue 33: the helper printed 95% bounds where the session's first look prints 98.3%
    (its alpha split over the first run and two reruns)."""
    gate = {"answer_f1": 0.03}
    values = [0.8, 0.7, 0.9, 0.6, 0.8, 0.75, 0.85, 0.7, 0.8, 0.9]
    base = _convs(values)
    bl = build_baseline({"core": aggregate("core", base)}, gate, config_hash="", backend="offline",
                        judge_models={}, plugin_version="0", convs=base)
    cfg = RagdiveConfig.model_validate({"gate": gate, "suites": {"core": {"single_turn": ["x"]}}})
    assert cfg.gate_policy.inconclusive == "rerun" and cfg.max_reruns == 2
    now = _convs([v - 0.01 for v in values])
    session = (conclude(now, cfg, bl, RunFacts(planned=len(now))).gate or [])[0]
    helper = assert_no_regression(aggregate("core", now), bl, conversations=now, config=cfg)[0]
    assert session.paired is not None and helper.paired is not None
    assert helper.paired.alpha == session.paired.alpha and "98.3%" in session.paired_text
    assert helper.paired_text.split(", band alone")[0] == session.paired_text.split(", band alone")[0]
