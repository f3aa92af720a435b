"""``python -m pytest_ragdive.testing.launch -- PYTEST-ARGS``: a whole session on the LLM
path against FakeLLMServer, with no config change (the launcher the docs show)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def launch(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GITHUB_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(cwd)])
    return subprocess.run([sys.executable, "-m", "pytest_ragdive.testing.launch", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_a_whole_session_runs_against_the_fake_server(toy: pytest.Pytester) -> None:
    toy.makepyfile(replies='def accept(body):\n    return {"correct": True, "reason": "fine"} if "Correctness" in str(body) else {}\n')
    res = launch(toy.path, "--", "--ragdive-suite=core", "-p", "no:cacheprovider")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    got = re.search(r"FakeLLMServer at http://127\.0\.0\.1:\d+/v1: (\d+) request\(s\)", res.stderr)
    assert got is not None and int(got.group(1)) > 0, res.stderr
    data = json.loads((toy.path / "report" / "results.json").read_text())
    assert data["info"]["backend"] == "llm" and data["judge_calls"]["turn"] > 0
    # a handler of your own answers every request
    res = launch(toy.path, "--handler", "replies:accept", "--", "--ragdive-suite=core", "-p", "no:cacheprovider",
                 "--ragdive-record-mode=off")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    data = json.loads((toy.path / "report" / "results.json").read_text())
    assert any(t["verdicts"].get("correctness", {}).get("value") == 1.0 for c in data["conversations"] for t in c["turns"])
