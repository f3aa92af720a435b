"""Rubric judges of the config (``[tool.ragdive.judges.NAME]``) against the fake server:
reported, drawn, baselined and gated like a built-in metric; cached (a warm rerun sends
nothing; editing one judge's criteria re-judges exactly that judge); the cascade and the
batch API; offline: skipped with a note, never gated, never failed; and ``rubric``
assertions judged the same way."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import TOY_CONFTEST, results

from pytest_ragdive.testing import FAKE_KEY_ENV, FakeLLMServer, config_for, example_from_schema

POLITE = "The answer is courteous and never promises a refund."
JUDGES = f'''
[tool.ragdive.judges.polite]
criteria = "{POLITE}"
level = "turn"
scale = "binary"

[tool.ragdive.judges.on_topic]
criteria = "The chatbot stays on the user's topic for the whole conversation."
level = "conversation"
scale = "1-5"
'''


def _text(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []))


def _schema(body: dict[str, Any]) -> dict[str, Any]:
    return ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}


def rubric_handler(body: dict[str, Any]) -> Any:
    """The rubric judges: criteria met unless the answer promises a refund; every other
    judge a minimal valid verdict."""
    title = _schema(body).get("title", "")
    refund = "Refunds are guaranteed" in _text(body)
    if title == "RubricVerdict":
        return {"met": not refund, "reason": "promises a refund" if refund else "courteous"}
    if title == "RubricGrade":
        return {"grade": 4, "reason": "stays on topic"}
    return example_from_schema(_schema(body))


def _rubric_requests(server: FakeLLMServer) -> list[str]:
    return [_text(b) for b in server.requests if "Aspect: rubric." in _text(b)]


@pytest.fixture
def rubric_toy(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(FAKE_KEY_ENV, "sk-test-secret-4242")
    server = FakeLLMServer(rubric_handler).start()
    toy.makefile(".toml", pyproject=(
        f'[tool.ragdive]\nreport_dir = "report"\nmodel = "openai/fake-model"\n'
        f'[tool.ragdive.llm]\napi_base = "{server.url}"\napi_key_env = "{FAKE_KEY_ENV}"\ntransport = "openai_http"\n'
        f"{JUDGES}\n[tool.ragdive.gate]\npolite = 0.1\non_topic = 0.1\nsafety_pass_rate = 0\n"
        '[tool.ragdive.suites.core]\nsingle_turn = ["data/single.jsonl"]\nconversations = ["data/convs.yaml"]\n'
    ))
    yield toy, server
    server.stop()


def test_a_config_rubric_is_judged_reported_baselined_and_gated(
    rubric_toy, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    toy, server = rubric_toy
    res = toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline")
    res.assert_outcomes(passed=5)
    res.stdout.fnmatch_lines(["*core*on_topic ↑*0.7500*", "*core*polite ↑*1.0000*"])
    asked = _rubric_requests(server)
    assert len(asked) == 7 + 5  # polite: every answered turn; on_topic: every conversation
    assert sum(POLITE in t for t in asked) == 7
    assert all("<<<BEGIN ANSWER" in t for t in asked if POLITE in t)  # what is judged is fenced
    data = results(toy)
    assert data["suites"]["core"]["polite"] == 1.0 and data["suites"]["core"]["on_topic"] == 0.75
    assert data["custom_metrics"]["polite"]["kind"] == "rubric"
    turn = data["conversations"][0]["turns"][0]
    assert turn["verdicts"]["polite"]["reason"] == "criteria met: courteous"
    assert "polite ↑ by turn" in (toy.path / "report" / "report.html").read_text()
    bl = json.loads((toy.path / "b.json").read_text())
    assert bl["suites"]["core"]["polite"]["mean"] == 1.0 and bl["custom_metrics"]["on_topic"]["level"] == "conversation"
    from pytest_ragdive.cli import main

    capsys.readouterr()
    assert main(["baseline", "show", str(toy.path / "b.json")]) == 0
    shown = capsys.readouterr().out
    assert "polite ↑" in shown and "on_topic ↑" in shown

    # the warm rerun: every judge call from the cache, no request at all; the gate passes
    before = server.request_count
    res = toy.runpytest("--ragdive-baseline=b.json")
    res.assert_outcomes(passed=5)
    assert res.ret == 0 and server.request_count == before

    # editing one judge's criteria re-judges that judge only (its hash is the prompt version)
    cfg = toy.path / "pyproject.toml"
    cfg.write_text(cfg.read_text().replace(POLITE, POLITE.replace("courteous", "courteous and brief")))
    server.reset()
    toy.runpytest("--ragdive-baseline=b.json").assert_outcomes(passed=5)
    again = _rubric_requests(server)
    assert len(again) == server.request_count == 7 and all("courteous and brief" in t for t in again)

    # answers that promise a refund: the rubric drops beyond its tolerance, the gate fails
    monkeypatch.setenv("TOY_UNSAFE", "1")
    res = toy.runpytest("--ragdive-baseline=b.json")
    assert res.ret == 1
    rows = {r["metric"]: r for r in results(toy)["gate"]}
    assert rows["polite"]["verdict"] == "regression" and rows["polite"]["current"] == 0.0
    res.stdout.fnmatch_lines(["*polite ↑*REGRESSION*"])


def test_without_a_model_a_rubric_is_skipped_with_a_note_never_gated(toy: pytest.Pytester) -> None:
    toy.makefile(".toml", pyproject=(
        f'[tool.ragdive]\nreport_dir = "report"\n{JUDGES}\n[tool.ragdive.gate]\ncorrectness = 0.05\npolite = 0.1\n'
        '[tool.ragdive.suites.core]\nsingle_turn = ["data/single.jsonl"]\nconversations = ["data/convs.yaml"]\n'
    ))
    toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline").assert_outcomes(passed=5)
    res = toy.runpytest("--ragdive-baseline=b.json")
    res.assert_outcomes(passed=5)
    assert res.ret == 0
    text = res.stdout.str().replace("\n", " ")
    assert "rubric judge(s) polite, on_topic: not scored and not gated without a judge model" in text
    data = results(toy)
    assert "polite" not in data["suites"]["core"] and {r["metric"] for r in data["gate"]} == {"correctness"}


def test_an_offline_twin_scores_it_without_a_model(toy: pytest.Pytester) -> None:
    (toy.path / "twins.py").write_text("def polite(turn, conversation):\n    return 'refund' not in turn.answer.lower()\n")
    toy.makefile(".toml", pyproject=(
        '[tool.ragdive]\nreport_dir = "report"\n'
        f'[tool.ragdive.judges.polite]\ncriteria = "{POLITE}"\noffline = "twins:polite"\n'
        '[tool.ragdive.gate]\npolite = 0\n'
        '[tool.ragdive.suites.core]\nsingle_turn = ["data/single.jsonl"]\nconversations = ["data/convs.yaml"]\n'
    ))
    toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline").assert_outcomes(passed=5)
    assert results(toy)["suites"]["core"]["polite"] == 1.0
    res = toy.runpytest("--ragdive-baseline=b.json")
    assert res.ret == 0 and "not scored" not in res.stdout.str()


@pytest.mark.parametrize(
    ("table", "why"),
    [
        ('[tool.ragdive.judges.faithfulness]\ncriteria = "x"\n', "judge name 'faithfulness' is a built-in metric's name"),
        ('[tool.ragdive.judges.polite]\ncriteria = "  "\n', "criteria must say what the judge checks"),
        ('[tool.ragdive.judges.polite]\ncriteria = "x"\nscale = "1-10"\n', "judges.polite.scale"),
        ('[tool.ragdive.judges.polite]\ncriteria = "x"\noffline = "nocolon"\n', "expected 'package.module:function'"),
        ('[tool.ragdive.judges.polite]\ncriteria = "x"\noffline = "no_such_twins:f"\n', "cannot load 'no_such_twins:f'"),
        ('[tool.ragdive.judges.polite]\ncritera = "x"\n', "key 'judges.polite.criteria': Field required"),
    ],
)
def test_bad_judge_tables_are_one_line_errors(tmp_path: Path, table: str, why: str) -> None:
    from pytest_ragdive.core.config import load_config
    from pytest_ragdive.core.errors import UsageError

    path = tmp_path / "pyproject.toml"
    path.write_text(table)
    with pytest.raises(UsageError) as e:
        load_config(path)
    assert why in str(e.value) and "\n" not in str(e.value)


GOOD = {"claims": [{"claim": "c", "supported": True}], "verdicts": [{"relevant": True}],
        "statements": [{"statement": "s", "attributed": True}], "correct": True, "forgetful": False,
        "turns": [], "retained": True, "met": True, "grade": 5}


def _judge(cfg: Any) -> Any:
    from pytest_ragdive.core.records import Context, Conversation, Turn
    from pytest_ragdive.llm import LLMClient
    from pytest_ragdive.metrics.judged import judge_conversation

    conv = Conversation(id="c", turns=[
        Turn(index=k, rag_input=f"q{k}", standalone_question=f"q{k}", ground_truth="g", answer=f"a{k}",
             contexts=[Context(id="x", text="ctx")]) for k in range(2)])

    async def go() -> Any:
        client = LLMClient.from_config(cfg)
        try:
            await judge_conversation(conv, client, cfg, {})
            return conv
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_rubric_calls_go_through_the_batch_api(tmp_path: Path) -> None:
    judges = {"polite": {"criteria": POLITE}, "on_topic": {"criteria": "on topic", "level": "conversation", "scale": "1-5"}}
    with FakeLLMServer(handler=lambda body: GOOD, batch_delay_s=0.05) as server:
        cfg = config_for(server, cache_dir=str(tmp_path / "cache"), judge_mode="batch", judges=judges,
                         llm={"transport": "openai_http", "batch_poll_s": 0.02, "batch_max_wait_s": 5})
        conv = _judge(cfg)
        assert server.request_count == 0 and server.batch.lines_answered == 4 * 2 + 2 + 2 + 1
        assert [t.scores["polite"] for t in conv.turns] == [1.0, 1.0]
        assert conv.scores["polite"] == 1.0 and conv.scores["on_topic"] == 1.0
        assert conv.judge_calls.turn == 4 * 2 + 2 and conv.judge_calls.conversation == 3


def test_a_negative_rubric_verdict_goes_on_down_the_cascade(tmp_path: Path) -> None:
    def handler(body: dict[str, Any]) -> Any:
        if _schema(body).get("title") == "RubricVerdict":
            return {"met": body.get("model") == "strong", "reason": body.get("model")}
        return GOOD

    with FakeLLMServer(handler=handler) as server:
        cfg = config_for(server, cache_dir=str(tmp_path / "cache"), judges={"polite": {"criteria": POLITE}},
                         judge_cascade=["openai/cheap", "openai/strong"], llm={"transport": "openai_http"})
        conv = _judge(cfg)
        assert [t.scores["polite"] for t in conv.turns] == [1.0, 1.0]
        assert conv.turns[0].verdicts["polite"].model == "openai/strong"
        assert conv.judge_calls.rejudged == 2


def test_a_rubric_assertion_is_judged_and_cached(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import SINGLE

    monkeypatch.setenv(FAKE_KEY_ENV, "sk-test-secret-4242")
    rows = [{**SINGLE[0], "assert": [{"rubric": "The answer never promises a refund."}]}]
    (toy.path / "data" / "single.jsonl").write_text(json.dumps(rows[0]) + "\n")
    with FakeLLMServer(rubric_handler) as server:
        toy.makefile(".toml", pyproject=(
            f'[tool.ragdive]\nreport_dir = "report"\nmodel = "openai/fake-model"\n'
            f'[tool.ragdive.llm]\napi_base = "{server.url}"\napi_key_env = "{FAKE_KEY_ENV}"\ntransport = "openai_http"\n'
            '[tool.ragdive.suites.core]\nsingle_turn = ["data/single.jsonl"]\n'
        ))
        toy.makeconftest(TOY_CONFTEST)
        toy.runpytest("--ragdive-suite=core").assert_outcomes(passed=1)
        assert len(_rubric_requests(server)) == 1
        assert results(toy)["suites"]["core"]["assertion_pass_rate"] == 1.0
        before = server.request_count
        toy.runpytest("--ragdive-suite=core").assert_outcomes(passed=1)
        assert server.request_count == before  # cached like every judge call
        monkeypatch.setenv("TOY_UNSAFE", "1")
        res = toy.runpytest("--ragdive-suite=core")
        res.stdout.fnmatch_lines(["*assertion rubric 'The answer never promises a refund.' failed: criteria not met*"])
