"""Usage errors (exit code 4, one line, no traceback) and config sources."""

from __future__ import annotations

import json

import pytest
from conftest import PYPROJECT


def _one_line_error(res: pytest.RunResult, *fragments: str) -> None:
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    err = [line for line in res.stderr.lines if line.startswith("ERROR:")]
    assert len(err) == 1, res.stderr.str()
    for f in fragments:
        assert f in err[0], err[0]
    assert "Traceback" not in res.stderr.str() + res.stdout.str()


def test_unknown_key_names_file_and_key(toy: pytest.Pytester) -> None:
    toy.makefile(".toml", pyproject=PYPROJECT.format(extra="concurency = 4"))
    _one_line_error(toy.runpytest("--ragdive-suite=core"), "pyproject.toml", "unknown key 'concurency'", "concurrency")


def test_bad_value_names_key_and_expectation(toy: pytest.Pytester) -> None:
    toy.makefile(".toml", pyproject=PYPROJECT.format(extra='record_mode = "sometimes"'))
    _one_line_error(toy.runpytest("--ragdive-suite=core"), "pyproject.toml", "'record_mode'", "new_episodes")


def test_bad_cli_value_names_the_option(toy: pytest.Pytester) -> None:
    _one_line_error(toy.runpytest("--ragdive-suite=core", "--ragdive-runs=zero"), "--ragdive-runs")


def test_unknown_suite_selected(toy: pytest.Pytester) -> None:
    _one_line_error(toy.runpytest("--ragdive-suite=nightly"), "--ragdive-suite", "extended")


def test_nonzero_safety_tolerance_is_rejected(toy: pytest.Pytester) -> None:
    text = PYPROJECT.format(extra="").replace("safety_pass_rate = 0", "safety_pass_rate = 0.1")
    toy.makefile(".toml", pyproject=text)
    _one_line_error(toy.runpytest("--ragdive-suite=core"), "safety_pass_rate has zero tolerance")


def test_corrupt_baseline_is_usage_error(toy: pytest.Pytester) -> None:
    (toy.path / "b.json").write_text("{not json")
    _one_line_error(toy.runpytest("--ragdive-baseline=b.json"), "b.json")


def test_invalid_baseline_schema_is_usage_error(toy: pytest.Pytester) -> None:
    (toy.path / "b.json").write_text(json.dumps({"suites": {"core": {"correctness": {"mean": "high"}}}}))
    _one_line_error(toy.runpytest("--ragdive-baseline=b.json"), "b.json", "invalid")


def test_missing_baseline_is_usage_error(toy: pytest.Pytester) -> None:
    _one_line_error(toy.runpytest("--ragdive-baseline=nope.json"), "nope.json", "not found", "--ragdive-update-baseline")


def test_gated_metric_missing_from_baseline(toy: pytest.Pytester) -> None:
    toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline").assert_outcomes(passed=5)
    data = json.loads((toy.path / "b.json").read_text())
    del data["suites"]["core"]["forgetfulness"]
    (toy.path / "b.json").write_text(json.dumps(data))
    _one_line_error(toy.runpytest("--ragdive-baseline=b.json"), "forgetfulness", "missing")


def test_malformed_golden_row_names_file_and_line(toy: pytest.Pytester) -> None:
    (toy.path / "data" / "single.jsonl").write_text(
        '{"question_id": "a", "question": "ok?"}\n{"question_id": "b", "question": "x", "difficulty": 3, "bogus": 1}\n'
    )
    _one_line_error(toy.runpytest("--ragdive-suite=core"), "single.jsonl:2")


def test_ragdive_yaml_config(toy: pytest.Pytester) -> None:
    (toy.path / "pyproject.toml").unlink()
    toy.makefile(
        ".yaml",
        ragdive="suites:\n  core:\n    single_turn: [data/single.jsonl]\nreport_dir: report\n",
    )
    toy.makeini("[pytest]\n")
    res = toy.runpytest("--ragdive-suite=core")
    res.assert_outcomes(passed=3)


def test_cli_overrides_file(toy: pytest.Pytester) -> None:
    toy.makefile(".toml", pyproject=PYPROJECT.format(extra="runs = 2"))
    toy.runpytest("--ragdive-suite=core").assert_outcomes(passed=10)
    toy.runpytest("--ragdive-suite=core", "--ragdive-runs=1").assert_outcomes(passed=5)


def test_update_baseline_needs_a_path(toy: pytest.Pytester) -> None:
    _one_line_error(toy.runpytest("--ragdive-update-baseline"), "--ragdive-baseline=PATH")
