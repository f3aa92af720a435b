"""Config values that used to switch a check off or hang planning: one line, exit 4."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import PYPROJECT

from pytest_ragdive.core.config import load_config
from pytest_ragdive.core.errors import ConfigError


@pytest.mark.parametrize(
    ("toml", "key", "why"),
    [
        ("[tool.ragdive.gate]\ncorrectness = nan", "gate.correctness", "finite number, got nan"),
        ("[tool.ragdive.gate]\ncorrectness = inf", "gate.correctness", "finite number, got inf"),
        ("[tool.ragdive.gate]\ncorrectness = -inf", "gate.correctness", "finite number, got -inf"),
        ("[tool.ragdive.gate]\ncorrectness = true", "gate.correctness", "valid number, got True"),
        ("[tool.ragdive.gate]\ncorrectness = '0.03'", "gate.correctness", "valid number, got '0.03'"),
        ("[tool.ragdive.gate]\nbogus = 0.1", "gate", "unknown metric 'bogus'"),
        ("[tool.ragdive.suites.all]\nsingle_turn = []", "suites", "suite name 'all'"),
        ("[tool.ragdive]\nmax_cost = inf", "max_cost", "finite number"),
        ("[tool.ragdive]\ntarget_timeout_s = nan", "target_timeout_s", "finite number"),
        ("[tool.ragdive.llm]\ntimeout_s = inf", "llm.timeout_s", "finite number"),
        ("[tool.ragdive]\nruns = 1e9", "runs", "less than or equal to 100"),
        ("[tool.ragdive]\nconcurrency = 1e9", "concurrency", "less than or equal to 1024"),
        ("[tool.ragdive.suites.core.generated]\nconversations = 1e9", "suites.core.generated.conversations", "10000"),
        ("[tool.ragdive.suites.core.generated]\nturns = 100000", "suites.core.generated.turns", "100"),
    ],
)
def test_non_finite_unbounded_and_unknown_values_are_one_line_errors(tmp_path: Path, toml: str, key: str, why: str) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(toml + "\n")
    with pytest.raises(ConfigError) as e:
        load_config(path)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"ragdive config error in {path}: key {key!r}")
    assert why in msg


def test_finite_tolerances_still_load(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text("[tool.ragdive]\nruns = 100\n[tool.ragdive.gate]\ncorrectness = 0\nfaithfulness = 0.05\n")
    cfg = load_config(path)
    assert cfg.gate == {"correctness": 0.0, "faithfulness": 0.05, "assertion_pass_rate": 0.0} and cfg.runs == 100


@pytest.mark.parametrize(
    ("setting", "cli", "expected"),
    [
        ("faithfulness = nan", (), "*pyproject.toml: key 'gate.faithfulness': Input should be a finite number, got nan*"),
        ("", ("--ragdive-runs=1000000000",), "*command line: key '--ragdive-runs': Input should be less than or equal to 100*"),
    ],
)
def test_pytest_exits_4_with_the_file_and_key(
    toy: pytest.Pytester, setting: str, cli: tuple[str, ...], expected: str
) -> None:
    text = PYPROJECT.format(extra="")
    if setting:
        text = text.replace("correctness = 0.05", setting)
    toy.makefile(".toml", pyproject=text)
    res = toy.runpytest("--ragdive-suite=core", *cli)
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines([expected])
    assert "Traceback" not in res.stderr.str() + res.stdout.str()
