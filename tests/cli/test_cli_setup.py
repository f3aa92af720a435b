"""The command line's edges (issue 24), each through ``python -m pytest_ragdive`` as a
user runs it: ``gate`` without a baseline exits 4 (on 9690bde it exited 0 after gating
nothing); ``report`` writes what it documents (JUnit only with ``--baseline``); ``shard``
reads the project config like the plugin does (on 9690bde it required ``--model`` and
ignored ``[tool.ragdive.llm]``) and names an unset key variable in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_ragdive.testing import FAKE_MODEL, FakeLLMServer

ROOT = Path(__file__).resolve().parents[2]


def cli(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), **(env or {})}
    return subprocess.run([sys.executable, "-m", "pytest_ragdive", *args], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=120)


def one_line_error(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 4, res.stdout + res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    return res.stderr.strip()


@pytest.fixture
def gated_run(toy: pytest.Pytester) -> Path:
    """The toy project after a recorded baseline and a gated run (report/results.json)."""
    assert toy.runpytest("--ragdive-baseline=baseline.json", "--ragdive-update-baseline", "-p", "no:cacheprovider").ret == 0
    assert toy.runpytest("--ragdive-baseline=baseline.json", "-p", "no:cacheprovider").ret == 0
    assert json.loads((toy.path / "report" / "results.json").read_text())["gate"]
    return toy.path


def test_gate_without_a_baseline_exits_4(gated_run: Path) -> None:
    err = one_line_error(cli(gated_run, "gate", "report/results.json"))
    assert "no baseline: nothing to gate" in err and "report" in err and "--ragdive-baseline" not in err
    # the config's baseline counts as given
    pyproject = gated_run / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('report_dir = "report"', 'report_dir = "report"\nbaseline = "baseline.json"'))
    res = cli(gated_run, "gate", "report/results.json", "--report-dir", "again")
    assert res.returncode == 0, res.stdout + res.stderr
    assert (gated_run / "again" / "ragdive-junit.xml").is_file()


def test_report_writes_what_it_documents(gated_run: Path) -> None:
    helptext = cli(gated_run, "report", "--help").stdout
    assert "ragdive-junit.xml only with --baseline" in " ".join(helptext.split())
    res = cli(gated_run, "report", "report/results.json", "-o", "plain")
    assert res.returncode == 0, res.stderr
    assert {p.name for p in (gated_run / "plain").iterdir()} == {"results.json", "summary.md", "pr-comment.md", "report.html", ".ragdive-reports.json"}
    assert "no ragdive-junit.xml (no --baseline" in res.stdout
    res = cli(gated_run, "report", "report/results.json", "-o", "gated", "--baseline", "baseline.json")
    assert res.returncode == 0, res.stderr
    assert {p.name for p in (gated_run / "gated").iterdir()} == {"results.json", "summary.md", "pr-comment.md", "report.html", "ragdive-junit.xml", ".ragdive-reports.json"}


QUESTIONS = [{"id": "q-rate", "question": "How many API requests per minute does the Business plan allow?", "answer": "600"}]


def _segments(body: dict[str, Any]) -> dict[str, Any]:
    text = "\n".join(m["content"] for m in body["messages"])
    if "Divide the question's informational content" in text:
        return {"segments": ["It is the Business plan.", "How many API requests per minute does the plan allow?"]}
    return {"intent_index": 1, "opening": "How many API requests per minute does the plan allow?"}


def test_shard_reads_the_project_config(tmp_path: Path) -> None:
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    with FakeLLMServer(_segments) as server:
        (tmp_path / "pyproject.toml").write_text(
            f'[tool.ragdive]\nmodel = "{FAKE_MODEL}"\ncache_dir = "cache"\n'
            f'[tool.ragdive.llm]\napi_base = "{server.url}"\napi_key_env = "SHARD_TEST_KEY"\ntransport = "openai_http"\n'
        )
        res = cli(tmp_path, "shard", "questions.jsonl", "-o", "sharded.jsonl", env={"SHARD_TEST_KEY": "sk-shard-test"})
        assert res.returncode == 0, res.stdout + res.stderr
        assert server.request_count == 3  # segment + intent + the judged review of the shards, at the config's api_base
        assert server.request_headers[0].get("authorization") == "Bearer sk-shard-test"  # the config's key variable
        assert (tmp_path / "cache").is_dir()  # the config's cache_dir, beside the config
        rows = [json.loads(line) for line in (tmp_path / "sharded.jsonl").read_text().splitlines()]
        assert [r["id"] for r in rows] == ["q-rate"] and rows[0]["reviewed"] is False
        # the key variable unset: one line, before any call
        env = {k: v for k, v in os.environ.items() if k != "SHARD_TEST_KEY"}
        (tmp_path / "sharded.jsonl").unlink()
        err = one_line_error(subprocess.run(
            [sys.executable, "-m", "pytest_ragdive", "shard", "questions.jsonl", "-o", "sharded.jsonl", "--cache-dir", "c2"],
            cwd=tmp_path, env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120))
        assert "SHARD_TEST_KEY" in err and "llm.api_key_env" in err
        assert server.request_count == 3


def test_shard_without_a_model_says_where_to_set_it(tmp_path: Path) -> None:
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    err = one_line_error(cli(tmp_path, "shard", "questions.jsonl", "-o", "out.jsonl"))
    assert "needs a model" in err and "--model" in err
