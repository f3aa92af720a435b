"""judge_band (issue 27): the LLM judge scores faithfulness only for the turns whose offline
faithfulness falls in the uncertain band; the others keep the offline figure and a verdict
says so (a PR pays for the hard cases only). On the fake LLM server."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from pytest_ragdive.core.errors import ConfigError
from pytest_ragdive.core.records import Context, Conversation, Turn
from pytest_ragdive.metrics.backends import judge_conversation
from pytest_ragdive.metrics.offline import score_conversation
from pytest_ragdive.testing import FakeLLMServer, config_for

CTX = [Context(id="r#1", doc_id="refunds", text="Refunds are issued within 14 days to the original payment method.")]


def _conv() -> Conversation:
    return Conversation(
        id="c",
        turns=[
            # offline 1.0: sure, not judged
            Turn(index=0, rag_input="How long do refunds take?", ground_truth="14 days.",
                 answer="Refunds are issued within 14 days to the original payment method.", contexts=CTX),
            # offline in between: judged
            Turn(index=1, rag_input="And gift cards?", ground_truth="They never expire.",
                 answer="Refunds are issued within 14 days. Gift cards never expire.", contexts=CTX),
        ],
    )


def _verdict(body: dict[str, Any]) -> dict[str, Any]:
    system = next(m["content"] for m in body["messages"] if m["role"] == "system")
    metric = re.search(r"Aspect: (\w+)\.", system).group(1)  # type: ignore[union-attr]
    if metric == "faithfulness":
        return {"claims": [{"claim": "x", "supported": False, "reason": "judged"}]}
    if metric == "context_precision":
        return {"verdicts": [{"context": 1, "relevant": True, "reason": "r"}]}
    if metric == "context_recall":
        return {"statements": [{"statement": "s", "attributed": True, "reason": "r"}]}
    if metric == "correctness":
        return {"correct": True, "reason": "r"}
    if metric == "forgetfulness":
        return {"forgetful": False, "turns": [], "reason": "r"}
    return {"retained": True, "reason": "r"}


def _judge(cfg: Any, conv: Conversation) -> None:
    from pytest_ragdive.llm import LLMClient

    client = LLMClient.from_config(cfg)

    async def go() -> None:
        try:
            score_conversation(conv)
            await judge_conversation(conv, client, cfg, {})
        finally:
            await client.aclose()

    asyncio.run(go())


def _faithfulness_calls(server: FakeLLMServer) -> int:
    return sum("Aspect: faithfulness." in str(r) for r in server.requests)


def test_only_the_uncertain_turns_go_to_the_judge(tmp_path: Any) -> None:
    conv = _conv()
    with FakeLLMServer(_verdict) as server:
        cfg = config_for(server, cache_dir=str(tmp_path), record_mode="off", judge_band=[0.3, 0.9])
        _judge(cfg, conv)
        assert server.handler_errors == []
        assert _faithfulness_calls(server) == 1
    sure, unsure = conv.turns
    assert sure.scores["faithfulness"] == 1.0  # the offline figure stands
    assert sure.verdicts["faithfulness"].model is None
    assert "outside judge_band [0.3, 0.9): not judged" in sure.verdicts["faithfulness"].reason
    assert unsure.scores["faithfulness"] == 0.0 and unsure.verdicts["faithfulness"].model  # judged
    assert conv.scores["faithfulness"] == pytest.approx(0.5)


def test_without_a_band_every_turn_is_judged(tmp_path: Any) -> None:
    conv = _conv()
    with FakeLLMServer(_verdict) as server:
        _judge(config_for(server, cache_dir=str(tmp_path), record_mode="off"), conv)
        assert _faithfulness_calls(server) == 2
    assert [t.scores["faithfulness"] for t in conv.turns] == [0.0, 0.0]


def test_a_bad_band_is_a_config_error(tmp_path: Any) -> None:
    from pytest_ragdive.core.config import load_config

    (tmp_path / "pyproject.toml").write_text("[tool.ragdive]\njudge_band = [0.9, 0.3]\n")
    with pytest.raises(ConfigError, match="judge_band.*0 <= lo < hi <= 1"):
        load_config(tmp_path / "pyproject.toml")
