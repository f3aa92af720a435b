"""The LLM path through real pytest sessions: a generated (RAG-DIVE) suite and
judged metrics gated end to end, against the fake OpenAI-compatible server."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import llm_project, results

from pytest_ragdive.testing import FAKE_KEY_ENV, FakeLLMServer, example_from_schema

CORPUS = [
    {"id": "sky", "title": "Sky", "text": "The sky is blue on a clear day."},
    {"id": "snow", "title": "Snow", "text": "Snow is white and cold."},
    {"id": "grass", "title": "Grass", "text": "Grass is green in spring."},
]
COLOUR = {"sky": "blue", "snow": "white", "grass": "green"}


def _text(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []))


def scripted(body: dict[str, Any]) -> Any:
    """Simulator: asks about the document it was given, then a context-dependent
    follow-up. Validator: accepts. Judges: a minimal valid verdict."""
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    title = schema.get("title", "")
    if title == "GeneratedTurn":
        first = [m for m in body["messages"] if m["role"] != "system"][0]["content"]
        doc = next(d for d in COLOUR if f"{d} is" in first.lower() or f"{d.title()} is" in first)
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if turn == 0:
            return {"rag_input": f"Tell me about {doc}.", "standalone_question": f"Tell me about {doc}.",
                    "ground_truth": CORPUS_TEXT[doc], "question_type": "Initial"}
        return {"rag_input": "What colour is it?", "standalone_question": f"What colour is {doc}?",
                "ground_truth": COLOUR[doc], "question_type": "Follow-up"}
    if title == "ValidatorOutput":
        return {"valid": True, "reason": "ok", "failed_checks": []}
    lost = "I don't know" in _text(body)  # the toy bot's answer when it lost the thread
    verdicts: dict[str, Any] = {
        "FaithfulnessJudgment": {"claims": [{"claim": "c", "supported": True}]},
        "ContextPrecisionJudgment": {"verdicts": [{"context": 1, "relevant": True}]},
        "ContextRecallJudgment": {"statements": [{"statement": "s", "attributed": True}]},
        "CorrectnessJudgment": {"correct": not lost, "reason": "judged"},
        "ForgetfulnessJudgment": {"forgetful": lost, "reason": "lost the subject" if lost else "kept it"},
        "ContextRetentionJudgment": {"retained": not lost, "reason": "judged"},
    }
    return verdicts.get(title) or example_from_schema(schema)


CORPUS_TEXT = {d["id"]: d["text"] for d in CORPUS}


@pytest.fixture
def llm_toy(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    for var in ("TOY_FORGET", "TOY_RAISE_ON", "TOY_UNSAFE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(FAKE_KEY_ENV, "sk-test-secret-4242")
    server = FakeLLMServer(scripted).start()
    llm_project(
        pytester, CORPUS, top="concurrency = 4",
        llm=f'api_base = "{server.url}"\napi_key_env = "{FAKE_KEY_ENV}"\ntransport = "openai_http"\ntimeout_s = 5',
        rest="[tool.ragdive.gate]\nrecall_at_k = 0.05\nforgetfulness = 0.0\n[tool.ragdive.suites.core]\n"
        'generated = { conversations = 3, turns = 2, roles = ["default", "referrer"], seed = 1 }\n',
    )
    yield pytester, server
    server.stop()


def test_generated_suite_is_gated_and_replayed_from_cache(llm_toy) -> None:
    pytester, server = llm_toy
    res = pytester.runpytest_subprocess("--ragdive-baseline=b.json", "--ragdive-update-baseline")
    res.assert_outcomes(passed=3)
    first = server.request_count
    assert first > 0
    data = results(pytester)
    convs = data["conversations"]
    assert all(c["source"] == "generated" and len(c["turns"]) == 2 for c in convs)
    assert {c["role"] for c in convs} == {"default", "referrer"}
    assert data["suites"]["core"]["recall_at_k"] == 1.0
    assert data["suites"]["core"]["forgetfulness"] == 0.0
    assert data["validation"]["core"]["candidates"] >= 6
    assert data["llm"] is not None
    assert (pytester.path / "report" / "ragdive_core.json").is_file()
    md = (pytester.path / "report" / "summary.md").read_text()
    assert "core: generated conversations (validator)" in md and "| referrer |" in md

    # the same chatbot again: everything replays from the cache, the gate passes
    res = pytester.runpytest_subprocess("--ragdive-baseline=b.json")
    res.assert_outcomes(passed=3)
    assert res.ret == 0
    assert server.request_count == first
    res.stdout.fnmatch_lines(["*ragdive gate passed*"])

    # the chatbot forgets the history: answers change, turns diverge, the gate fails
    import os

    os.environ["TOY_FORGET"] = "1"
    try:
        res = pytester.runpytest_subprocess("--ragdive-baseline=b.json")
    finally:
        del os.environ["TOY_FORGET"]
    assert res.ret == 1
    res.stdout.fnmatch_lines(["*recall_at_k*REGRESSION*", "*forgetfulness*REGRESSION*"])
    assert server.request_count > first  # new answers, new simulator turns and judgments
    md = (pytester.path / "report" / "summary.md").read_text()
    assert "lost the subject" in md  # the judge's reasons for the failing conversations

    # no API key or secret in any file the run wrote
    for path in list((pytester.path / "report").rglob("*")) + list((pytester.path / ".ragdive").rglob("*")):
        if path.is_file():
            assert b"sk-test-secret-4242" not in path.read_bytes(), path


def test_replay_only_mode_fails_fast_naming_the_call(llm_toy) -> None:
    """--ragdive-require-judge: a strict replay, a miss fails the run naming the call."""
    pytester, server = llm_toy
    res = pytester.runpytest_subprocess("--ragdive-suite=core", "--ragdive-record-mode=none", "--ragdive-require-judge")
    assert res.ret == 1
    assert server.request_count == 0
    res.stdout.fnmatch_lines(["*CacheMissError*simulator*"])


def test_replay_only_mode_without_a_cache_skips_what_it_cannot_generate(llm_toy) -> None:
    """Record mode none (a fork, no key): a simulated user whose call is not cached cannot go
    on; its conversation is not run (skipped, saying why), not a failure of the bot."""
    pytester, server = llm_toy
    res = pytester.runpytest_subprocess("--ragdive-suite=core", "--ragdive-record-mode=none", "-rs")
    assert server.request_count == 0
    res.assert_outcomes(skipped=3)
    res.stdout.fnmatch_lines(["*not run (no key): the simulated user's simulator call is not cached*"])


def test_generated_conversation_without_valid_turns_fails_its_item(llm_toy, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester, server = llm_toy

    def mentions_document(body: dict[str, Any]) -> Any:
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
        if schema.get("title") == "GeneratedTurn":
            return {"rag_input": "What does the document say?", "standalone_question": "What does the document say?",
                    "ground_truth": "It says things.", "question_type": "Initial"}
        return scripted(body)

    server.handler = mentions_document
    res = pytester.runpytest_subprocess("--ragdive-suite=core")
    res.assert_outcomes(failed=3)
    res.stdout.fnmatch_lines(["*the generator produced no valid turn*", "*document_mentioned*"])


def test_max_cost_stops_the_run_and_says_what_was_spent(llm_toy) -> None:
    """A priced model (litellm's local price map), a tiny budget: the run fails
    with one message naming the spend per role and model."""
    pytester, server = llm_toy
    text = (pytester.path / "pyproject.toml").read_text()
    text = text.replace('model = "openai/fake-model"', 'model = "openai/gpt-4o-mini"')
    text = text.replace('transport = "openai_http"', 'transport = "litellm"')
    (pytester.path / "pyproject.toml").write_text(text)
    res = pytester.runpytest_subprocess("--ragdive-suite=core", "--ragdive-max-cost=0.000001", "--ragdive-concurrency=1")
    assert res.ret == 1
    res.stdout.fnmatch_lines(["ERROR: BudgetExceeded*gpt-4o-mini*"])
    assert server.request_count < 20  # it stopped early instead of running every call


def test_max_cost_also_holds_on_the_lean_http_path(llm_toy) -> None:
    """openai_http prices calls from litellm's bundled price map without importing litellm."""
    pytester, server = llm_toy
    text = (pytester.path / "pyproject.toml").read_text().replace('model = "openai/fake-model"', 'model = "openai/gpt-4o-mini"')
    (pytester.path / "pyproject.toml").write_text(text)
    res = pytester.runpytest_subprocess("--ragdive-suite=core", "--ragdive-max-cost=0.000001", "--ragdive-concurrency=1")
    assert res.ret == 1
    res.stdout.fnmatch_lines(["ERROR: BudgetExceeded*gpt-4o-mini*"])


def test_lean_http_path_honours_the_openai_environment(llm_toy, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester, server = llm_toy
    text = (pytester.path / "pyproject.toml").read_text()
    text = text.replace(f'api_base = "{server.url}"\n', "").replace(f'api_key_env = "{FAKE_KEY_ENV}"\n', "")
    (pytester.path / "pyproject.toml").write_text(text)
    monkeypatch.setenv("OPENAI_API_BASE", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    pytester.runpytest_subprocess("--ragdive-suite=core").assert_outcomes(passed=3)
    assert server.request_count > 0
    assert all(h.get("authorization") == "Bearer sk-from-the-environment" for h in server.request_headers)


def test_roles_default_sensibly() -> None:
    from pytest_ragdive.core.config import RagdiveConfig

    cfg = RagdiveConfig.model_validate({"model": "gen-model", "llm": {"judge": {"model": "judge-model"}}})
    assert cfg.role_model("simulator") == "gen-model"
    assert cfg.role_model("validator") == "judge-model"  # not the generator's own model
    cascade = RagdiveConfig.model_validate({"judge_cascade": ["cheap", "strong"]})
    assert cascade.llm_enabled() and cascade.role_model("judge") == "cheap"
    assert cascade.role_model("simulator") is None
