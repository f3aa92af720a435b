"""--ragdive-estimate's function: calls, tokens and cost before spending, against the fake server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from pytest_ragdive.core.records import Context, Conversation
from pytest_ragdive.llm import LLMClient
from pytest_ragdive.llm.cache import LLMCache
from pytest_ragdive.metrics.judged import judge_conversation
from pytest_ragdive.run.estimate import Assumptions, ModelPrice, cache_lookup, estimate, price_map
from pytest_ragdive.run.planning import plan_all
from pytest_ragdive.testing import FakeLLMServer, config_for

PRICE = ModelPrice(input=1e-6, output=2e-6, batch_input=0.5e-6, batch_output=1e-6)


# valid for every judge schema (extra fields are ignored): no repair call
GOOD = {"claims": [], "verdicts": [{"relevant": True}, {"relevant": True}], "statements": [], "correct": True,
        "forgetful": False, "turns": [], "retained": True}


def _price(model: str) -> ModelPrice | None:
    return PRICE if model.endswith("fake-model") else None


def _write(tmp_path: Path) -> None:
    (tmp_path / "single.jsonl").write_text("\n".join(json.dumps(r) for r in [
        {"question_id": "q1", "question": "What colour is the sky?", "expected_answer": "blue"},
        {"question_id": "q2", "question": "What colour is grass?", "expected_answer": "green"},
    ]))
    (tmp_path / "convs.jsonl").write_text(json.dumps({"id": "c1", "turns": [
        {"rag_input": "Tell me about snow.", "ground_truth": "Snow is white."},
        {"rag_input": "When does it fall?", "standalone_question": "When does snow fall?", "ground_truth": "winter"},
        {"rag_input": "Is it cold?", "standalone_question": "Is snow cold?", "ground_truth": "yes"},
    ]}))


def _cfg(server: FakeLLMServer, tmp_path: Path, **kw: object):  # type: ignore[no-untyped-def]
    cfg = config_for(server, cache_dir=str(tmp_path / "cache"), llm={"transport": "openai_http"},
                     suites={"core": {"single_turn": ["single.jsonl"], "conversations": ["convs.jsonl"]}}, **kw)
    cfg.base_dir = str(tmp_path)
    return cfg


def _answered(conv: Conversation) -> Conversation:
    out = conv.model_copy(deep=True)
    for t in out.turns:
        t.answer = f"An answer to {t.rag_input}"
        t.contexts = [Context(id="k1", text="Snow is white and falls in winter."), Context(id="k2", text="Sky.")]
    return out


def test_cold_estimate_counts_the_judge_calls_and_sends_nothing(tmp_path: Path) -> None:
    _write(tmp_path)
    with FakeLLMServer() as server:
        cfg = _cfg(server, tmp_path)
        plans = plan_all(cfg, True, [])
        est = estimate(plans, cfg, price=_price)
        assert server.request_count == 0
    (suite,) = est.suites
    assert suite.conversations == 3
    (judge,) = suite.roles
    # 4 per answered turn (2 singles + 3 turns) + 2 for the multi-turn conversation
    assert (judge.role, judge.calls, judge.warm_calls) == ("judge", 4 * 5 + 2, 4 * 5 + 2)
    assert judge.prompt_tokens > 22 * 100  # the prompts are real renders, not a constant
    assert judge.cost_usd == pytest.approx(judge.prompt_tokens * 1e-6 + judge.completion_tokens * 2e-6)
    batch = estimate(plans, cfg, price=_price, batch=True)
    assert batch.suites[0].roles[0].cost_usd == pytest.approx(judge.cost_usd / 2)
    assert any("total" in line for line in est.lines())


def test_warm_estimate_matches_the_cache_a_real_run_left(tmp_path: Path) -> None:
    """The probe builds the same cache keys as the client: after a real judging run
    with the same answers, every call is warm; with one answer changed, only that
    conversation's calls are cold again."""
    _write(tmp_path)
    with FakeLLMServer(handler=lambda body: GOOD) as server:
        cfg = _cfg(server, tmp_path)
        plans = plan_all(cfg, True, [])
        convs = {p.key: _answered(c) for p in plans if (c := p.new_conversation()) is not None}

        async def judge_all() -> None:
            client = LLMClient.from_config(cfg)
            try:
                for conv in convs.values():
                    await judge_conversation(conv.model_copy(deep=True), client, cfg, {})
            finally:
                await client.aclose()

        asyncio.run(judge_all())
        sent = server.request_count
        assert sent == 22
        cache = LLMCache.from_config(cfg)
        assert cache is not None
        with cache:
            warm = estimate(plans, cfg, lookup=cache_lookup(cache), previous=convs, price=_price)
            changed = dict(convs)
            key = next(k for k in convs if "c1" in k)
            changed[key] = convs[key].model_copy(deep=True)
            changed[key].turns[2].answer = "something else"
            partly = estimate(plans, cfg, lookup=cache_lookup(cache), previous=changed, price=_price)
        assert server.request_count == sent  # the estimate sent nothing
    (judge,) = warm.suites[0].roles
    assert (judge.calls, judge.warm_calls, judge.warm_cost_usd) == (22, 0, 0.0)
    assert warm.suites[0].reused_answers == 3
    # the changed answer's faithfulness and correctness calls (context precision and recall do not
    # read the answer) and the 2 conversation-level calls (the transcript changed)
    assert partly.suites[0].roles[0].warm_calls == 4


def test_without_previous_answers_placeholders_are_cold(tmp_path: Path) -> None:
    _write(tmp_path)
    with FakeLLMServer() as server:
        cfg = _cfg(server, tmp_path)
        plans = plan_all(cfg, True, [])
        est = estimate(plans, cfg, lookup=lambda key: None, price=lambda m: None,
                       assumptions=Assumptions(answer_chars=2000))
        small = estimate(plans, cfg, lookup=lambda key: None, price=lambda m: None,
                         assumptions=Assumptions(answer_chars=100))
    role = est.suites[0].roles[0]
    assert role.cost_usd is None and est.suites[0].total("cost_usd") is None  # unpriced model
    assert role.prompt_tokens > small.suites[0].roles[0].prompt_tokens  # the assumed answer size counts


def test_cascade_sends_a_share_on_to_the_next_model(tmp_path: Path) -> None:
    _write(tmp_path)
    with FakeLLMServer() as server:
        cfg = _cfg(server, tmp_path, judge_cascade=["openai/cheap", "openai/strong"])
        est = estimate(plan_all(cfg, True, []), cfg, price=_price, assumptions=Assumptions(rejudge_rate=0.5))
    models = {r.model: r.calls for r in est.suites[0].roles}
    assert models == {"openai/cheap": 22, "openai/strong": 11}


def test_price_map_reads_batch_rates() -> None:
    price = price_map({"gpt-x": {"input_cost_per_token": 2e-6, "output_cost_per_token": 8e-6,
                                 "input_cost_per_token_batches": 1e-6, "output_cost_per_token_batches": 4e-6},
                       "text-only": {"mode": "embedding"}})
    p = price("openai/gpt-x")
    assert p is not None and (p.input, p.batch_output) == (2e-6, 4e-6)
    assert price("text-only") is None and price("nope") is None
