"""A team's own metric named in [tool.ragdive.gate] outside pytest (issue 33): run_suite with
``metrics=[...]``, ``cache prune`` and ``alert-rules`` used to stop at "unknown metric"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pytest_ragdive as rd
from pytest_ragdive.cli import main
from pytest_ragdive.core.errors import ConfigError


@rd.metric("polite", definition="the answer says please")
def polite(turn: rd.Turn, conversation: rd.Conversation) -> float:
    return float("please" in (turn.answer or "").lower())


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "q.jsonl").write_text(json.dumps({"question_id": "q1", "question": "Hi?", "expected_answer": "hello"}) + "\n")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ragdive]\ncache_ttl_days = 30\n[tool.ragdive.gate]\npolite = 0.0\n'
        '[tool.ragdive.suites.core]\nsingle_turn = ["q.jsonl"]\n'
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path / "pyproject.toml"


def test_run_suite_with_the_metric_given(project: Path) -> None:
    res = rd.run_suite(lambda messages: "hello, please", project, metrics=[polite])
    assert res.value("polite") == 1.0
    with pytest.raises(ConfigError, match="key 'gate': unknown metric 'polite'"):  # not given: still one clear line
        rd.run_suite(lambda messages: "hello", project)


def test_cache_prune_and_alert_rules_do_not_check_the_gate(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["alert-rules"]) == 0
    assert "groups:" in capsys.readouterr().out
    code = main(["cache", "prune"])
    err = capsys.readouterr().err
    assert code != 0 and "no LLM cache at" in err and "unknown metric" not in err
