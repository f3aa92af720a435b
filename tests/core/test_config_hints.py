"""Config mistakes a newcomer makes (issue 33): each a line that says what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ragdive.core.config import RagdiveConfig, load_config
from pytest_ragdive.core.errors import ConfigError
from pytest_ragdive.core.results import Baseline, BaselineMetric, CustomMetric
from pytest_ragdive.gate.preconditions import missing_metrics


def test_a_suite_table_under_suite_instead_of_suites_gets_a_hint(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.ragdive.suite.core]\nsingle_turn = ["q.jsonl"]\n')
    with pytest.raises(ConfigError) as e:
        load_config(tmp_path / "pyproject.toml")
    assert "key 'suite': Input should be a valid string" in str(e.value)
    assert "[tool.ragdive.suites.NAME], with an s" in str(e.value) and "[tool.ragdive.suite.core]" in str(e.value)


def test_a_gate_of_ones_own_keeps_the_assert_checks() -> None:
    """Writing [tool.ragdive.gate] used to drop assertion_pass_rate from the gate."""
    cfg = RagdiveConfig.model_validate({"gate": {"correctness": 0.05}})
    assert cfg.gate == {"correctness": 0.05, "assertion_pass_rate": 0.0}
    cfg = RagdiveConfig.model_validate({"gate": {"correctness": 0.05, "method": "band"}})
    assert cfg.gate == {"correctness": 0.05, "assertion_pass_rate": 0.0} and cfg.gate_policy.method == "band"
    assert RagdiveConfig.model_validate({"gate": {"method": "band"}}).gate["correctness"] == 0.03  # the defaults


def test_a_metric_added_after_the_baseline_says_so() -> None:
    bm = BaselineMetric(mean=1.0, min=1.0, max=1.0)
    bl = Baseline(created="2026-12-01T10:00:00+00:00", suites={"core": {"correctness": bm, "tone_ok": bm}},
                  custom_metrics={"tone_ok": CustomMetric(direction="higher", level="turn")})
    line = missing_metrics(Path("baseline.json"), "core", ["polite"], bl)
    assert "polite was added after the baseline was recorded (the baseline of 2026-12-01T10:00:00+00:00 does not know it)" in line
    assert "no case they apply to" not in line
    line = missing_metrics(Path("baseline.json"), "core", ["citation_rate"], bl)
    assert "citation_rate: no value in the recorded run, either added to [tool.ragdive.gate] after" in line
    assert line.endswith("re-record it with --ragdive-update-baseline, or remove them from [tool.ragdive.gate]")
