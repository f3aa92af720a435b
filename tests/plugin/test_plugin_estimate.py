"""--ragdive-estimate in a real pytest session: it plans, prints calls and cost, and runs nothing."""

from __future__ import annotations

import pytest

from pytest_ragdive.testing import FAKE_KEY_ENV, FakeLLMServer

# valid for every judge schema (extra fields are ignored)
GOOD = {"claims": [{"claim": "c", "supported": True}], "verdicts": [{"relevant": True}],
        "statements": [{"statement": "s", "attributed": True}], "correct": True, "forgetful": False,
        "turns": [], "retained": True}
# 3 single-turn cases + 2 conversations of 2 turns: 4 calls per turn, 2 per multi-turn conversation
CALLS = 4 * (3 + 4) + 2 * 2


def _judge_row(text: str) -> list[str]:
    line = next(ln for ln in text.splitlines() if ln.startswith("core") and " judge " in ln)
    return line.split()


@pytest.fixture
def judged_toy(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(FAKE_KEY_ENV, "sk-test-fake")
    server = FakeLLMServer(lambda body: GOOD).start()
    text = (toy.path / "pyproject.toml").read_text()
    text = text.replace("[tool.ragdive]\n", f"""[tool.ragdive]
model = "openai/fake-model"
llm = {{ api_base = "{server.url}", api_key_env = "{FAKE_KEY_ENV}", transport = "openai_http" }}
""", 1)
    (toy.path / "pyproject.toml").write_text(text)
    yield toy, server
    server.stop()


def test_estimate_prints_calls_and_runs_nothing_then_a_rerun_is_warm(judged_toy, monkeypatch) -> None:
    toy, server = judged_toy
    monkeypatch.setenv("TOY_RAISE_ON", " ")  # the bot raises on any question: it must not be asked
    res = toy.runpytest("--ragdive-estimate")
    assert res.ret == 0, res.stdout.str()
    out = res.stdout.str()
    assert "ragdive estimate" in out
    row = _judge_row(out)
    assert row[1:4] == ["judge", "openai/fake-model", str(CALLS)]
    assert row[-2] == str(CALLS)  # cold: nothing cached yet
    assert server.request_count == 0
    assert not (toy.path / "report").exists()  # nothing ran, nothing written

    monkeypatch.delenv("TOY_RAISE_ON")
    res = toy.runpytest("--ragdive-suite=core")
    res.assert_outcomes(passed=5)
    assert server.request_count == CALLS

    res = toy.runpytest("--ragdive-estimate")
    row = _judge_row(res.stdout.str())
    assert row[3] == str(CALLS) and row[-2] == "0"  # every call is in the cache now
    assert server.request_count == CALLS


def test_estimate_refuses_xdist(judged_toy) -> None:
    toy, _ = judged_toy
    res = toy.runpytest("--ragdive-estimate", "-n", "2")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    assert "leave out -n" in res.stderr.str()


def test_estimate_offline(toy: pytest.Pytester) -> None:
    res = toy.runpytest("--ragdive-estimate")
    assert res.ret == 0
    res.stdout.fnmatch_lines(["*offline run (5 conversations): no LLM call*"])
