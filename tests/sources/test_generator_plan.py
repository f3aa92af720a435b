"""Planning generated conversations and choosing document windows (no LLM)."""

from __future__ import annotations

import pytest

from pytest_ragdive.core.config_models import GeneratedConfig
from pytest_ragdive.core.records import Document
from pytest_ragdive.llm.prompts import load_prompt
from pytest_ragdive.sources.generator import (
    GeneratedSpec,
    GenerationError,
    conversation_seed,
    document_window,
    plan_generated,
)

CORPUS = [Document(id=f"d{i}", title=f"Doc {i}", text=f"Document number {i}.") for i in range(6)]


def test_plan_is_deterministic_and_round_robin() -> None:
    cfg = GeneratedConfig(conversations=5, turns=3, roles=["default", "confused"], seed=7)
    a = plan_generated(cfg, CORPUS, "core")
    b = plan_generated(cfg, CORPUS, "core")
    assert a == b and len(a) == 5
    assert [s.role for s in a] == ["default", "confused", "default", "confused", "default"]
    assert len({s.document_id for s in a}) == 5  # without replacement while the corpus lasts
    assert all(isinstance(s, GeneratedSpec) and s.turns == 3 and s.suite == "core" for s in a)
    assert a[2].id == f"gen-002-{a[2].document_id}-default"
    assert [s.seed for s in a] == [7, 8, 9, 10, 11]
    other = plan_generated(cfg.model_copy(update={"seed": 8}), CORPUS, "core")
    assert [s.document_id for s in other] != [s.document_id for s in a]


def test_plan_more_conversations_than_documents() -> None:
    cfg = GeneratedConfig(conversations=14, roles=["default"])
    specs = plan_generated(cfg, CORPUS, "extended")
    ids = [s.document_id for s in specs]
    assert sorted(ids[:6]) == sorted(d.id for d in CORPUS)
    assert sorted(ids[6:12]) == sorted(d.id for d in CORPUS)
    assert len({s.id for s in specs}) == 14


def test_plan_skips_blank_documents_and_rejects_empty_corpus() -> None:
    corpus = [Document(id="blank", text="  \n"), Document(id="ok", text="Some text.")]
    specs = plan_generated(GeneratedConfig(conversations=2), corpus, "core")
    assert {s.document_id for s in specs} == {"ok"}
    with pytest.raises(GenerationError, match="core"):
        plan_generated(GeneratedConfig(), [Document(id="blank", text="")], "core")


def test_id_is_safe_for_odd_document_ids() -> None:
    specs = plan_generated(GeneratedConfig(conversations=1), [Document(id="faq/returns policy", text="x")], "core")
    assert specs[0].id == "gen-000-faq_returns_policy-default"


def test_conversation_seed_differs_per_run() -> None:
    spec = plan_generated(GeneratedConfig(conversations=1, seed=3), CORPUS, "core")[0]
    seeds = {conversation_seed(spec, r) for r in range(5)}
    assert len(seeds) == 5 and conversation_seed(spec, 0) == 3


def test_short_document_is_seen_whole() -> None:
    assert document_window("short text", 200, 0) == (0, 10)


def test_long_document_window_respects_limit_and_boundaries() -> None:
    paras = [f"Paragraph {i}. " + " ".join(f"word{i}x{j}." for j in range(30)) for i in range(40)]
    text = "\n\n".join(paras)
    assert len(text) > 10000
    windows = set()
    for seed in range(10):
        start, end = document_window(text, 2000, seed)
        assert 0 <= start < end <= len(text)
        assert end - start <= 2000
        assert end - start >= 1000  # packs chunks, not a single sentence
        assert start == 0 or text[start - 1].isspace()  # starts at a chunk boundary
        assert document_window(text, 2000, seed) == (start, end)
        windows.add((start, end))
    assert len(windows) > 3


def test_window_of_text_without_breaks() -> None:
    text = "x" * 5000
    start, end = document_window(text, 1000, 1)
    assert end - start <= 1000 and end > start


def test_generator_prompts_load_and_render() -> None:
    for pid in ("generator_first", "generator_next", "generator_feedback", "generator_skip", "validator_turn"):
        p = load_prompt(pid)
        assert p.id == pid and p.version
    msgs = load_prompt("generator_first").render(
        role_name="default", role_instructions="Be brief.", fence_note="N", title="T", window_note="", document="D"
    )
    assert msgs[0]["role"] == "system" and "prompt id: generator_first" in msgs[0]["content"]
    assert "Be brief." in msgs[0]["content"] and "D" in msgs[1]["content"]
