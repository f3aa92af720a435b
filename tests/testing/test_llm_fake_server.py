"""The fake OpenAI-compatible server shipped as pytest_ragdive.testing."""

from __future__ import annotations

import json
import textwrap
import urllib.error
import urllib.request
from typing import Any

import pytest
from pydantic import BaseModel

from pytest_ragdive.testing import FAKE_KEY_ENV, FakeLLMServer, config_for, example_from_schema


def post(url: str, body: dict[str, Any], timeout: float = 5.0) -> tuple[int, dict[str, str], Any]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
            status, headers = r.status, dict(r.headers)
    except urllib.error.HTTPError as e:
        raw = e.read()
        status, headers = e.code, dict(e.headers)
    try:
        return status, headers, json.loads(raw)
    except ValueError:
        return status, headers, raw


BODY = {"model": "fake-model", "messages": [{"role": "user", "content": "hello there"}]}


def test_openai_shaped_reply_and_routes() -> None:
    with FakeLLMServer(lambda body: {"answer": body["messages"][-1]["content"]}) as s:
        assert s.url.startswith("http://127.0.0.1:") and s.url.endswith("/v1")
        for url in (s.url + "/chat/completions", s.url.removesuffix("/v1") + "/chat/completions"):
            status, _, data = post(url, BODY)
            assert status == 200
            assert data["object"] == "chat.completion" and data["model"] == "fake-model"
            assert data["id"].startswith("chatcmpl-") and isinstance(data["created"], int)
            choice = data["choices"][0]
            assert json.loads(choice["message"]["content"]) == {"answer": "hello there"}
            assert choice["finish_reason"] == "stop"
            assert data["usage"]["prompt_tokens"] > 0 and data["usage"]["completion_tokens"] > 0
        assert post(s.url + "/nope", BODY)[0] == 404
        assert post(s.url + "/chat/completions", {**BODY, "stream": True})[0] == 400
        assert s.request_count == 2 and s.requests[0] == BODY  # 404 and stream refusals are not recorded


def test_scripted_faults() -> None:
    kinds = ["429", "500", "malformed", "schema", "400", "bad_body", None]
    with FakeLLMServer(fault_for=lambda body, n: kinds[n], retry_after_s=2) as s:
        st, headers, data = post(s.url + "/chat/completions", BODY)
        assert st == 429 and headers["Retry-After"] == "2" and data["error"]["type"] == "rate_limit_error"
        assert post(s.url + "/chat/completions", BODY)[0] == 500
        st, _, data = post(s.url + "/chat/completions", BODY)
        content = data["choices"][0]["message"]["content"]
        with pytest.raises(ValueError):
            json.loads(content)
        st, _, data = post(s.url + "/chat/completions", BODY)
        assert "ragdive_fake_wrong_field" in json.loads(data["choices"][0]["message"]["content"])
        assert post(s.url + "/chat/completions", BODY)[0] == 400
        st, _, raw = post(s.url + "/chat/completions", BODY)
        assert st == 200 and isinstance(raw, bytes)
        assert post(s.url + "/chat/completions", BODY)[0] == 200
        assert s.fault_count == 6 and s.faults_injected["429"] == 1
        assert s.statuses[200] == 4


def test_timeout_fault_hangs_and_stop_wakes_it() -> None:
    import socket
    import time

    with FakeLLMServer(fault_for=lambda body, n: "timeout", hang_s=30) as s:
        t0 = time.perf_counter()
        with pytest.raises((TimeoutError, socket.timeout, urllib.error.URLError)):
            post(s.url + "/chat/completions", BODY, timeout=0.3)
        assert time.perf_counter() - t0 < 2
    # leaving the context woke the hanging handler thread; nothing blocks here


def test_seeded_fault_rate_is_reproducible() -> None:
    def run() -> list[int]:
        with FakeLLMServer(fault_rate=0.5, faults=["500", "429"], seed=7, retry_after_s=0) as s:
            return [post(s.url + "/chat/completions", BODY)[0] for _ in range(20)]

    a, b = run(), run()
    assert a == b and 200 in a and (500 in a or 429 in a)
    with pytest.raises(ValueError, match="unknown fault"):
        FakeLLMServer(faults=["explode"])


def test_default_handler_fills_a_requested_schema() -> None:
    class Inner(BaseModel):
        x: int

    class Out(BaseModel):
        name: str
        score: float
        ok: bool
        tags: list[str]
        inner: Inner
        maybe: str | None = None

    inst = example_from_schema(Out.model_json_schema())
    assert Out.model_validate(inst)
    with FakeLLMServer() as s:
        rf = {"type": "json_schema", "json_schema": {"name": "Out", "schema": Out.model_json_schema()}}
        _, _, data = post(s.url + "/chat/completions", {**BODY, "response_format": rf})
        Out.model_validate_json(data["choices"][0]["message"]["content"])
        _, _, data = post(s.url + "/chat/completions", BODY)
        assert data["choices"][0]["message"]["content"] == "echo: hello there"


def test_config_for_points_every_role_at_the_server(monkeypatch) -> None:
    monkeypatch.delenv(FAKE_KEY_ENV, raising=False)
    with FakeLLMServer() as s:
        cfg = config_for(s, concurrency=3, llm={"timeout_s": 1.5, "judge": {"temperature": 0.2}})
        assert cfg.llm.api_base == s.url and cfg.llm.api_key_env == FAKE_KEY_ENV
        assert all(cfg.role_model(r) == "openai/fake-model" for r in ("simulator", "validator", "judge", "classifier"))
        assert cfg.concurrency == 3 and cfg.llm.timeout_s == 1.5 and cfg.llm.judge.temperature == 0.2
        import os

        assert os.environ[FAKE_KEY_ENV]


def test_fixtures_for_users(pytester: pytest.Pytester) -> None:
    pytester.makeconftest('pytest_plugins = ["pytest_ragdive.testing"]')
    pytester.makepyfile(
        test_user=textwrap.dedent(
            """
            import asyncio
            from pytest_ragdive.llm import LLMClient
            from pytest_ragdive.testing import config_for

            def test_fixture(fake_llm_server, tmp_path):
                fake_llm_server.handler = lambda body: "scripted"
                cfg = config_for(fake_llm_server, cache_dir=str(tmp_path), llm={"transport": "openai_http"})
                client = LLMClient.from_config(cfg)
                async def go():
                    try:
                        return await client.complete_text("judge", [{"role": "user", "content": "hi"}])
                    finally:
                        await client.aclose()
                assert asyncio.run(go()) == "scripted"
                assert fake_llm_server.request_count == 1

            def test_factory(make_fake_llm_server):
                a = make_fake_llm_server(lambda body: "a", latency_s=0.01)
                b = make_fake_llm_server(fault_rate=1.0, faults=["500"])
                assert a.url != b.url
            """
        )
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_the_default_handler_gives_every_judge_a_valid_healthy_verdict() -> None:
    """issue 33: the minimal schema instance left faithfulness and context_recall n/a (no claims,
    no statements) and context precision invalid (no verdict per context)."""
    from pytest_ragdive.metrics.judged import schemas
    from pytest_ragdive.testing import default_handler

    def body(aspect: str, schema: type[BaseModel], user: str = "") -> dict:
        rf = {"type": "json_schema", "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()}}
        return {"messages": [{"role": "system", "content": f"Aspect: {aspect}.\n"}, {"role": "user", "content": user}],
                "response_format": rf}

    cases = {
        "faithfulness": schemas.FaithfulnessJudgment, "context_recall": schemas.ContextRecallJudgment,
        "correctness": schemas.CorrectnessJudgment, "answer_relevance": schemas.AnswerRelevanceJudgment,
        "forgetfulness": schemas.ForgetfulnessJudgment, "context_retention": schemas.ContextRetentionJudgment,
    }
    for aspect, schema in cases.items():
        schema.model_validate(default_handler(body(aspect, schema)))
    assert schemas.FaithfulnessJudgment.model_validate(default_handler(body("faithfulness", schemas.FaithfulnessJudgment))).claims
    assert not schemas.ForgetfulnessJudgment.model_validate(default_handler(body("forgetfulness", schemas.ForgetfulnessJudgment))).forgetful
    precision = default_handler(body("context_precision", schemas.ContextPrecisionJudgment,
                                     "Retrieved contexts (3, numbered 1 to 3 in rank order):"))
    assert [v["context"] for v in schemas.ContextPrecisionJudgment.model_validate(precision).model_dump()["verdicts"]] == [1, 2, 3]
    assert schemas.RubricVerdict.model_validate(default_handler(body("rubric", schemas.RubricVerdict))).met
    assert schemas.RubricGrade.model_validate(default_handler(body("rubric", schemas.RubricGrade))).grade == 5
