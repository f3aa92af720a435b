"""Keyless runs that can pass honestly (issue 24): record mode none (a fork's pull
request: no key) replays the judge cache; a judge call not cached is "not judged (no
key)" and the gate decides the suite on the judged metrics' offline twins against the
baseline's offline values, saying so; a generated conversation whose simulated user's
call is not cached is not run. ``--ragdive-require-judge`` keeps today's strict replay.
On 9690bde every miss was a CacheMissError that failed its item and the run, and a
baseline held only the judged value of each metric."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import CONVS, SINGLE, llm_project, results
from test_plugin_llm import CORPUS, scripted

from pytest_ragdive.testing import FAKE_KEY_ENV, FakeLLMServer

TWINS = ("faithfulness_offline", "correctness_offline", "forgetfulness_offline")


@pytest.fixture
def judged_toy(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    """The toy bot on the LLM path (scripted conversations, judged by the fake server),
    with a baseline recorded on "main" (key set, record mode new_episodes)."""
    for var in ("TOY_FORGET", "TOY_RAISE_ON", "TOY_UNSAFE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(FAKE_KEY_ENV, "sk-main-secret-4242")
    server = FakeLLMServer(scripted).start()
    (pytester.path / "data").mkdir()
    (pytester.path / "data" / "single.jsonl").write_text("\n".join(json.dumps(r) for r in SINGLE) + "\n")
    (pytester.path / "data" / "convs.yaml").write_text(CONVS)
    llm_project(
        pytester, CORPUS,
        llm=f'api_base = "{server.url}"\napi_key_env = "{FAKE_KEY_ENV}"\ntransport = "openai_http"\ntimeout_s = 5',
        rest="[tool.ragdive.gate]\ncorrectness = 0.05\nforgetfulness = 0.0\nfaithfulness = 0.05\nsafety_pass_rate = 0\n"
        '[tool.ragdive.suites.core]\nsingle_turn = ["data/single.jsonl"]\nconversations = ["data/convs.yaml"]\n',
    )
    res = pytester.runpytest_subprocess("--ragdive-baseline=baseline.json", "--ragdive-update-baseline", "-p", "no:cacheprovider")
    assert res.ret == 0, res.stdout.str()[-3000:]
    monkeypatch.delenv(FAKE_KEY_ENV)  # from here on: a fork, no key
    yield pytester, server
    server.stop()


def fork(pytester: pytest.Pytester, *extra: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "--ragdive-baseline=baseline.json", "--ragdive-record-mode=none", "-p", "no:cacheprovider", *extra
    )


def test_a_baseline_records_the_judged_and_the_offline_value(judged_toy) -> None:
    pytester, _ = judged_toy
    core = json.loads((pytester.path / "baseline.json").read_text())["suites"]["core"]
    for twin in TWINS:
        judged = twin.removesuffix("_offline")
        assert judged in core and twin in core
        assert core[twin]["tolerance"] == core[judged]["tolerance"]  # gated the same way
        assert core[twin]["conversations"], twin  # per conversation: the paired test runs on the twins too


def test_a_fork_with_the_unchanged_bot_replays_everything(judged_toy) -> None:
    pytester, server = judged_toy
    before = server.request_count
    res = fork(pytester)
    assert res.ret == 0, res.stdout.str()[-3000:]
    assert server.request_count == before  # not a single LLM request
    assert "not judged" not in res.stdout.str()


def test_a_fork_whose_answers_changed_is_gated_on_the_offline_twins(judged_toy, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester, server = judged_toy
    before = server.request_count
    monkeypatch.setenv("TOY_FORGET", "1")  # the bot loses the thread: its answers change
    res = fork(pytester)
    out = res.stdout.str()
    assert server.request_count == before  # not a single LLM request
    assert res.ret == 1, out[-3000:]
    assert "CacheMissError" not in out
    res.stdout.fnmatch_lines(["*judge call(s) not cached and no key*not judged (no key)*offline twins*"])
    data = results(pytester)
    rows = {r["metric"]: r for r in data["gate"]}
    assert {"correctness_offline", "forgetfulness_offline", "faithfulness_offline"} <= set(rows)
    assert "correctness" not in rows and "faithfulness" not in rows
    assert rows["forgetfulness_offline"]["verdict"] == "regression"
    reasons = [v["reason"] for c in data["conversations"] for t in c["turns"] for v in t["verdicts"].values()]
    assert any(r.startswith("not judged (no key)") for r in reasons)
    summary = (pytester.path / "report" / "summary.md").read_text()
    assert "offline twins" in summary and "not judged (no key)" in summary


def test_require_judge_keeps_the_strict_replay(judged_toy, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester, server = judged_toy
    monkeypatch.setenv("TOY_FORGET", "1")
    before = server.request_count
    res = fork(pytester, "--ragdive-require-judge")
    assert res.ret == 1 and server.request_count == before
    res.stdout.fnmatch_lines(["*CacheMissError*record mode 'none'*"])


def test_an_update_from_a_keyless_run_is_refused(judged_toy, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester, _ = judged_toy
    monkeypatch.setenv("TOY_FORGET", "1")
    res = pytester.runpytest_subprocess("--ragdive-baseline=new.json", "--ragdive-update-baseline",
                                        "--ragdive-record-mode=none", "-p", "no:cacheprovider")
    assert res.ret == 1
    res.stdout.fnmatch_lines(["*baseline NOT written*not judged*record mode none*"])
    assert not Path(pytester.path / "new.json").exists()
