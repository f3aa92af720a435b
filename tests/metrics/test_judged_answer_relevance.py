"""answer_relevance, the LLM-judged metric: a versioned prompt, three binary verdicts,
scored as the share of checks passed, cached like every judge (against the fake server)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pytest_ragdive.core.records import Turn
from pytest_ragdive.llm.prompts import load_prompt
from pytest_ragdive.metrics.judged import judge_answer_relevance
from pytest_ragdive.metrics.offline import score_turn
from pytest_ragdive.metrics.registry import METRICS
from pytest_ragdive.testing import FakeLLMServer, config_for


def verdicts(body: dict[str, Any]) -> dict[str, Any]:
    text = "\n".join(m["content"] for m in body["messages"])
    assert "Aspect: answer_relevance." in text
    if "padding" in text and "Gift cards" in text:
        return {"addresses_question": True, "missing_essential": False, "padding": True, "reason": "gift cards"}
    return {"addresses_question": True, "missing_essential": False, "padding": False, "reason": ""}


def judge(turn: Turn, cfg: Any) -> None:
    from pytest_ragdive.llm import LLMClient

    client = LLMClient.from_config(cfg)

    async def go() -> None:
        try:
            await judge_answer_relevance(turn, client, cfg)
        finally:
            aclose = getattr(client, "aclose", None)
            if aclose is not None:
                await aclose()

    asyncio.run(go())


def test_prompt_is_versioned_and_metric_registered() -> None:
    p = load_prompt("judge_answer_relevance")
    assert p.id == "judge_answer_relevance" and p.version
    assert "{fence_note}" in p.system
    assert METRICS["answer_relevance"].direction == "higher"


def test_offline_it_is_not_applicable() -> None:
    assert "answer_relevance" not in score_turn(Turn(rag_input="q?", answer="a."))


def test_judged_share_of_checks_and_cache(tmp_path: Any) -> None:
    padded = Turn(rag_input="How long do refunds take?", answer="Refunds take 14 days. Gift cards never expire.")
    plain = Turn(rag_input="How long do refunds take?", answer="Refunds take 14 days.")
    with FakeLLMServer(verdicts) as server:
        cfg = config_for(server, cache_dir=str(tmp_path / "cache"), record_mode="new_episodes", llm={"max_retries": 0})
        judge(padded, cfg)
        judge(plain, cfg)
        assert server.handler_errors == []
        sent = len(server.requests)
        judge(Turn(rag_input=plain.rag_input, answer=plain.answer), cfg)  # same inputs: from the cache
        assert len(server.requests) == sent == 2
    assert padded.scores["answer_relevance"] == pytest.approx(2 / 3)
    assert "padding" in padded.verdicts["answer_relevance"].reason
    assert plain.scores["answer_relevance"] == 1.0


def test_judged_metrics_selects_answer_relevance_by_name(tmp_path: Any) -> None:
    from test_judged_metrics import VERDICTS, aspect, cfg_for, make_conv, run_judge, turn_no

    from pytest_ragdive.core.config_models import DEFAULT_JUDGED

    def handler(body: dict[str, Any]) -> dict[str, Any]:
        if aspect(body) == "answer_relevance":
            return {"addresses_question": True, "missing_essential": turn_no(body) == 2, "padding": False, "reason": ""}
        return VERDICTS[(aspect(body), turn_no(body))]

    with FakeLLMServer(handler) as server:
        default = make_conv()
        run_judge(cfg_for(server, tmp_path), default)
        assert "answer_relevance" not in default.scores
        assert not any(aspect(b) == "answer_relevance" for b in server.requests)
        assert "answer_relevance" not in DEFAULT_JUDGED

        asked = make_conv()
        before = len(server.requests)
        run_judge(cfg_for(server, tmp_path, judged_metrics=[*DEFAULT_JUDGED, "answer_relevance"]), asked)
        relevance = [b for b in server.requests[before:] if aspect(b) == "answer_relevance"]
        assert len(relevance) == len(asked.turns)  # one more call per answered turn
        assert [t.scores["answer_relevance"] for t in asked.turns] == pytest.approx([1.0, 2 / 3])
        assert asked.scores["answer_relevance"] == pytest.approx((1.0 + 2 / 3) / 2)
        assert asked.judge_calls is not None and asked.judge_calls.turn == 5 * len(asked.turns)

        only = make_conv()
        before = len(server.requests)
        run_judge(cfg_for(server, tmp_path, judged_metrics=["faithfulness"]), only)
        assert {aspect(b) for b in server.requests[before:]} == {"faithfulness"}
        assert "forgetfulness" not in only.scores


def test_judged_metrics_names_are_checked(tmp_path: Any) -> None:
    from pytest_ragdive.core.config import load_config
    from pytest_ragdive.core.errors import ConfigError

    path = tmp_path / "pyproject.toml"
    path.write_text('[tool.ragdive]\njudged_metrics = ["faithfulness", "relevancy"]\n')
    with pytest.raises(ConfigError, match="judged_metrics"):
        load_config(path)
    path.write_text('[tool.ragdive]\njudged_metrics = ["answer_relevance"]\n')
    assert load_config(path).judged_metrics == ["answer_relevance"]
