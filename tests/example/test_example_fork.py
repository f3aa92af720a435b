"""The done-when of issue 24, on the bundled example: a fork-style run (no key, record
mode none) of the example's core suite on the LLM path, against a baseline and a judge
cache recorded on "main" (with a key, against FakeLLMServer):

- the bot that answers from "memory" (``EXAMPLE_RAG_READER=memory``) fails, on the
  offline faithfulness twin (its changed answers are not in the cache: not judged);
- the healthy bot passes (every call replayed), and passes again with no cache at all
  (every judged metric on its twin, the generated conversations not run);

each without a single LLM request (the FakeLLMServer counts them). On 9690bde the
memory run failed every changed conversation with CacheMissError, and the empty-cache
run failed everything."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_generator_example import handler as generator

from pytest_ragdive.testing import FAKE_MODEL, FakeLLMServer, example_from_schema

pytestmark = pytest.mark.slow  # runs pytest sessions of the example in subprocesses

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "EXAMPLE_FORK_KEY"


def judge(body: dict[str, Any]) -> Any:
    """The simulator and validator of the generated conversations, and judges that
    accept (one verdict per retrieved context)."""
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    title = schema.get("title", "")
    if title in ("GeneratedTurn", "ValidatorOutput"):
        return generator(body)
    text = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
    n = len(re.findall(r"<<<BEGIN CONTEXT \d+ ", text)) or 1
    verdicts: dict[str, Any] = {
        "FaithfulnessJudgment": {"claims": [{"claim": "c", "supported": True}]},
        "ContextPrecisionJudgment": {"verdicts": [{"context": i, "relevant": True} for i in range(1, n + 1)]},
        "ContextRecallJudgment": {"statements": [{"statement": "s", "attributed": True}]},
        "CorrectnessJudgment": {"correct": True, "reason": "judged"},
        "ForgetfulnessJudgment": {"forgetful": False, "reason": "kept it"},
        "ContextRetentionJudgment": {"retained": True, "reason": "kept it"},
    }
    return verdicts.get(title) or example_from_schema(schema)


@pytest.fixture(scope="module")
def main_branch(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The example on the LLM path, its baseline and judge cache recorded with a key."""
    ws = tmp_path_factory.mktemp("fork")
    ignore = shutil.ignore_patterns(".ragdive", "__pycache__", "ragdive-report*", "*.pyc")
    shutil.copytree(ROOT / "example_project", ws / "example_project", ignore=ignore)
    shutil.copytree(ROOT / "golden", ws / "golden")
    project = ws / "example_project"
    with FakeLLMServer(judge) as server:
        text = (project / "pyproject.toml").read_text()
        text = text.replace("[tool.ragdive]\n", f'[tool.ragdive]\nmodel = "{FAKE_MODEL}"\n', 1)
        text += (f'\n[tool.ragdive.llm]\napi_base = "{server.url}"\napi_key_env = "{KEY_ENV}"\n'
                 'transport = "openai_http"\ntimeout_s = 10\n')
        (project / "pyproject.toml").write_text(text)
        res = run(project, "--ragdive-baseline=llm-baseline.json", "--ragdive-update-baseline", key=True)
        assert res.returncode == 0, res.stdout[-4000:]
        assert server.request_count > 0
        shutil.copytree(project / ".ragdive" / "cache", ws / "main-cache")  # what the workflow restores on a fork
        yield project, ws / "main-cache", server


def run(project: Path, *args: str, key: bool = False, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("EXAMPLE_RAG_", KEY_ENV, "GITHUB_"))}
    full.update({"PYTHONPATH": str(ROOT), "PYTEST_ADDOPTS": "-p no:cacheprovider -p no:langsmith_plugin", **env})
    if key:
        full[KEY_ENV] = "sk-main-branch-secret"
    return subprocess.run([sys.executable, "-m", "pytest", *args], cwd=project, env=full,
                          capture_output=True, text=True, timeout=600)


def fork(project: Path, cache: Path | None, **env: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    shutil.rmtree(project / ".ragdive", ignore_errors=True)
    if cache is not None:
        shutil.copytree(cache, project / ".ragdive" / "cache")
    res = run(project, "--ragdive-baseline=llm-baseline.json", "--ragdive-record-mode=none", **env)
    return res, json.loads((project / ".ragdive" / "report" / "results.json").read_text())


def test_the_baseline_holds_the_judged_and_the_offline_faithfulness(main_branch: Any) -> None:
    project, _, _ = main_branch
    core = json.loads((project / "llm-baseline.json").read_text())["suites"]["core"]
    assert {"faithfulness", "faithfulness_offline", "correctness_offline", "forgetfulness_offline"} <= set(core)


def test_a_fork_with_the_memory_reader_fails_on_the_offline_faithfulness_twin(main_branch: Any) -> None:
    project, cache, server = main_branch
    before = server.request_count
    res, data = fork(project, cache, EXAMPLE_RAG_READER="memory")
    assert server.request_count == before, "a keyless run sent an LLM request"
    assert res.returncode == 1, res.stdout[-4000:]
    assert "CacheMissError" not in res.stdout
    rows = {r["metric"]: r for r in data["gate"]}
    assert rows["faithfulness_offline"]["verdict"] == "regression"
    assert "faithfulness" not in rows  # not judged (no key): its twin decides
    assert any("offline twins" in n for n in data["notes"])


def test_a_fork_with_the_healthy_bot_passes(main_branch: Any) -> None:
    project, cache, server = main_branch
    before = server.request_count
    res, data = fork(project, cache)
    assert server.request_count == before, "a keyless run sent an LLM request"
    assert res.returncode == 0, res.stdout[-4000:]
    assert data["status"] == "passed" and "faithfulness" in {r["metric"] for r in data["gate"]}  # all replayed


def test_a_fork_without_any_cache_passes_the_healthy_bot_on_the_twins(main_branch: Any) -> None:
    project, _, server = main_branch
    before = server.request_count
    res, data = fork(project, None)
    assert server.request_count == before, "a keyless run sent an LLM request"
    assert res.returncode == 0, res.stdout[-4000:]
    rows = {r["metric"]: r for r in data["gate"]}
    assert rows["faithfulness_offline"]["verdict"] == "pass" and "faithfulness" not in rows
    not_run = [c for c in data["conversations"] if c.get("not_run")]
    assert len(not_run) == 5 and all(c["source"] == "generated" for c in not_run)  # the simulator cannot run
    assert data["status"] == "passed"
