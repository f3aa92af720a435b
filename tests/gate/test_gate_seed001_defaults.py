"""Seed 001's regression-check defaults: the tolerances, the metrics gated only where the
baseline has data, and the improvement rule (band, or the source's delta over 0.01)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from pytest_ragdive.core.config import RagdiveConfig
from pytest_ragdive.core.config_models import DEFAULT_GATE, WHERE_DATA, GatePolicy
from pytest_ragdive.core.errors import BaselineError
from pytest_ragdive.core.results import Baseline, BaselineMetric, MetricValue, SuiteResult
from pytest_ragdive.gate.preconditions import gate_baseline
from pytest_ragdive.gate.rows import check, gate_row, improved, where_recorded
from pytest_ragdive.metrics.registry import METRICS


def _bm(mean: float, direction: str = "higher") -> BaselineMetric:
    return BaselineMetric(mean=mean, min=mean, max=mean, direction=direction)  # type: ignore[arg-type]


def _res(**values: float) -> dict[str, SuiteResult]:
    return {"core": SuiteResult(suite="core", metrics={k: MetricValue(value=v, n=10) for k, v in values.items()})}


def test_the_default_tolerances_are_seed_001s() -> None:
    assert DEFAULT_GATE["faithfulness"] == 0.02  # "faithfulness is held strictly"
    assert "answer_f1" not in DEFAULT_GATE  # reported, not gated by default: token F1 punishes a paraphrase
    assert DEFAULT_GATE["recall_at_k"] == DEFAULT_GATE["mrr"] == DEFAULT_GATE["answer_relevance"] == 0.03
    assert DEFAULT_GATE["citation_rate"] == 0.05 and DEFAULT_GATE["safety_pass_rate"] == 0.0
    assert set(WHERE_DATA) == {"mrr", "answer_relevance", "citation_rate"}
    cfg = RagdiveConfig()
    assert cfg.gate == DEFAULT_GATE and cfg.gate_policy.where_data == list(WHERE_DATA)
    assert cfg.gate_policy.improvement == "band" and cfg.gate_policy.improvement_delta == 0.01
    # every new key is documented for the configuration reference
    for name in ("where_data", "improvement", "improvement_delta"):
        assert GatePolicy.model_fields[name].description


def test_where_data_metrics_are_gated_only_where_the_baseline_has_them() -> None:
    stored = {"faithfulness": _bm(1.0), "citation_rate": _bm(0.9)}
    gate = {"faithfulness": 0.02, "mrr": 0.03, "citation_rate": 0.05}
    assert where_recorded(gate, stored, WHERE_DATA) == {"faithfulness": 0.02, "citation_rate": 0.05}
    bl = Baseline(suites={"core": stored})
    rows = check(_res(faithfulness=1.0, citation_rate=0.8), bl, gate, method="band", where_data=WHERE_DATA)
    verdicts = {r.metric: r.verdict for r in rows}
    assert verdicts == {"faithfulness": "pass", "citation_rate": "regression"}  # mrr: no data in the baseline, no row
    # a metric not in where_data stays strict: missing from the baseline fails
    strict = check(_res(faithfulness=1.0), bl, gate, method="band", where_data=())
    assert {r.metric: r.verdict for r in strict}["mrr"] == "not in baseline"
    # with data in the baseline, a where_data metric that has none now still fails
    lost = check(_res(faithfulness=1.0), bl, gate, method="band", where_data=WHERE_DATA)
    assert {r.metric: r.verdict for r in lost}["citation_rate"] == "no data"


def test_the_improvement_rule_band_or_delta() -> None:
    bm = _bm(0.80)
    # inside the band (tolerance 0.03), 0.02 above the mean
    assert gate_row("core", "answer_f1", 0.82, bm, 0.03).verdict == "pass"
    assert gate_row("core", "answer_f1", 0.82, bm, 0.03, "delta", 0.01).verdict == "improvement"
    assert gate_row("core", "answer_f1", 0.805, bm, 0.03, "delta", 0.01).verdict == "pass"  # +0.005: not enough
    # above the band is an improvement under band, and under delta too (it moved by more than 0.01)
    assert gate_row("core", "answer_f1", 0.90, bm, 0.03).verdict == "improvement"
    assert gate_row("core", "answer_f1", 0.90, bm, 0.03, "delta", 0.2).verdict == "pass"  # +0.10 < 0.2
    # lower-is-better: a drop is the good side; a regression is never turned into anything else
    low = _bm(0.10, "lower")
    assert gate_row("core", "forgetfulness", 0.08, low, 0.05, "delta", 0.01).verdict == "improvement"
    assert gate_row("core", "forgetfulness", 0.20, low, 0.05, "delta", 0.01).verdict == "regression"
    assert improved("regression", 0.5, "higher", "delta", 0.01) == "regression"


def test_the_policy_keys_live_in_the_gate_table() -> None:
    cfg = RagdiveConfig.model_validate({"gate": {"faithfulness": 0.02, "improvement": "delta", "improvement_delta": 0.02,
                                                 "where_data": ["citation_rate"]}})
    assert cfg.gate == {"faithfulness": 0.02, "assertion_pass_rate": 0.0}  # the assert: checks always gate
    assert (cfg.gate_policy.improvement, cfg.gate_policy.improvement_delta) == ("delta", 0.02)
    assert cfg.gate_policy.where_data == ["citation_rate"]
    with pytest.raises(ValidationError, match="unknown metric"):
        RagdiveConfig.model_validate({"gate": {"where_data": ["nope"]}})
    with pytest.raises(ValidationError):
        RagdiveConfig.model_validate({"gate": {"improvement": "sometimes"}})


def test_a_baseline_without_a_where_data_metric_can_gate(tmp_path: Path) -> None:
    cfg = RagdiveConfig.model_validate({"suites": {"core": {"single_turn": ["x.jsonl"]}}})
    path = tmp_path / "baseline.json"
    path.write_text(Baseline(backend="offline", suites={"core": {m: _bm(1.0, METRICS[m].direction)
                                                                for m in DEFAULT_GATE if m not in WHERE_DATA}}).model_dump_json())
    gate_baseline(cfg, path, "offline")  # mrr, answer_relevance, citation_rate absent: fine
    path.write_text(Baseline(backend="offline", suites={"core": {"correctness": _bm(1.0)}}).model_dump_json())
    with pytest.raises(BaselineError, match="gated metric.*faithfulness"):
        gate_baseline(cfg, path, "offline")
