"""results.json is written one conversation at a time and reads back unchanged."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_ragdive.core.config import RagdiveConfig
from pytest_ragdive.core.records import Context, Conversation, Turn
from pytest_ragdive.gate.conclude import RunFacts, conclude
from pytest_ragdive.reports.results_json import results_json, write_results_json


def _conv(i: int) -> Conversation:
    return Conversation(id=f"c{i}", suite="core", turns=[Turn(
        rag_input=f"q{i} \u00e9\"quoted\"\n", answer=f"a{i}", ground_truth="g",
        contexts=[Context(id=f"k{k}", text=f"context {k} of {i}", doc_id="d") for k in range(3)],
        scores={"answer_f1": 0.5 if i % 2 else None})])


def test_streamed_results_json_matches_the_whole_document(tmp_path: Path) -> None:
    cfg = RagdiveConfig.model_validate({"suites": {"core": {"single_turn": ["x.jsonl"]}}})
    convs = [_conv(i) for i in range(5)]
    outcome = conclude(convs, cfg, None, RunFacts(planned=5))
    path = tmp_path / "results.json"
    write_results_json(path, outcome)
    data = json.loads(path.read_text(encoding="utf-8"))
    whole = json.loads(json.dumps(results_json(outcome)))
    assert data == whole
    assert [Conversation.model_validate(c) for c in data["conversations"]] == outcome.conversations
    assert data["conversations"][0]["turns"][0]["contexts"][2]["text"] == "context 2 of 0"  # contexts kept


def test_streamed_results_json_with_no_conversation(tmp_path: Path) -> None:
    cfg = RagdiveConfig.model_validate({"suites": {"core": {"single_turn": ["x.jsonl"]}}})
    outcome = conclude([], cfg, None, RunFacts(planned=0))
    path = tmp_path / "results.json"
    write_results_json(path, outcome)
    assert json.loads(path.read_text())["conversations"] == []


def test_summary_md_shows_the_llm_calls_tokens_and_cost() -> None:
    from pytest_ragdive.llm.stats import LLMStats
    from pytest_ragdive.reports.markdown import summary_md

    stats = LLMStats()
    stats.bump("judge", "openai/gpt-4o-mini", calls=3, requests=3, prompt_tokens=1200, completion_tokens=90,
               cost_usd=0.0123)
    cfg = RagdiveConfig.model_validate({"suites": {"core": {"single_turn": ["x.jsonl"]}}})
    md = summary_md(conclude([_conv(1)], cfg, None, RunFacts(planned=1, llm=stats)))
    section = md.split("## LLM calls", 1)[1]
    assert "LLM: 3 calls, 3 requests" in section and "1290 tokens" in section and "$0.0123" in section
    assert "openai/gpt-4o-mini" in section
