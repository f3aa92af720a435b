"""Generated conversations against the example help-centre chatbot (fake LLM server)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_ragdive.core.config_models import GeneratedConfig
from pytest_ragdive.core.records import Conversation, ValidationStats
from pytest_ragdive.run.target import as_async
from pytest_ragdive.run.users.simulator import run_generated
from pytest_ragdive.sources.generator import plan_generated
from pytest_ragdive.sources.roles import load_roles
from pytest_ragdive.testing import FakeLLMServer, config_for

EXAMPLE = Path(__file__).resolve().parents[2] / "example_project"


def handler(body: dict[str, Any]) -> dict[str, Any]:
    msgs = body["messages"]
    system = msgs[0]["content"]
    if "prompt id: validator_turn" in system:
        return {"valid": True, "reason": "", "failed_checks": []}
    assert "prompt id: generator_first" in system
    title = re.search(r"Title of the information source:\n<<<BEGIN TITLE \w+>>>\n(.*)\n<<<END", msgs[1]["content"])
    topic = title.group(1) if title else "it"
    users = [m for m in msgs if m["role"] == "user"]
    if len(users) == 1:
        q = f"What does {topic} cover?"
        return {
            "rag_input": q,
            "standalone_question": q,
            "ground_truth": "See the article.",
            "question_type": "Initial",
        }
    n = len(users)
    return {
        "rag_input": f"What else should I know about that ({n})?",
        "standalone_question": f"What else should I know about {topic} ({n})?",
        "ground_truth": "More details from the article.",
        "question_type": "Follow-up",
    }


def test_generated_suite_against_the_example_bot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not (EXAMPLE / "example_rag" / "bot.py").is_file():
        pytest.skip("example chatbot not present")
    pytest.importorskip("bm25s")
    monkeypatch.syspath_prepend(str(EXAMPLE))
    for var in ("EXAMPLE_RAG_MODEL", "EXAMPLE_RAG_HISTORY", "EXAMPLE_RAG_CORPUS"):
        monkeypatch.delenv(var, raising=False)
    from example_rag.bot import make_bot
    from example_rag.corpus import load_corpus

    corpus = load_corpus()
    docs = {d.id: d for d in corpus}
    settings = GeneratedConfig(conversations=3, turns=3, roles=["default", "referrer", "confused"], seed=1)
    specs = plan_generated(settings, corpus, "core")
    target = as_async(make_bot())

    with FakeLLMServer(handler) as server:
        cfg = config_for(
            server,
            cache_dir=str(tmp_path / "cache"),
            llm={"timeout_s": 5, "max_retries": 0, "transport": "openai_http"},
        )

        async def go() -> list[Conversation]:
            from pytest_ragdive.llm import LLMClient

            async with LLMClient.from_config(cfg) as client:
                roles = {r.name: r for r in load_roles(settings.roles)}
                return list(
                    await asyncio.gather(
                        *(
                            run_generated(s, docs[s.document_id], roles[s.role], target, client, settings, 0)
                            for s in specs
                        )
                    )
                )

        convs = asyncio.run(go())
        calls = server.request_count
        assert calls == 3 * 3 * 2
        again = asyncio.run(go())
        assert server.request_count == calls  # replay: zero LLM calls
    assert [c.turns[-1].rag_input for c in again] == [c.turns[-1].rag_input for c in convs]
    assert [c.role for c in convs] == ["default", "referrer", "confused"]
    for c, s in zip(convs, specs, strict=True):
        assert c.document_id == s.document_id and len(c.turns) == 3
        assert all(t.answer for t in c.turns) and all(t.contexts for t in c.turns)
        assert all(ctx.doc_id in docs for t in c.turns for ctx in t.contexts)
    stats = ValidationStats.from_conversations(convs)
    assert stats.turns == 9 and stats.first_try == 9 and set(stats.by_role) == {"default", "referrer", "confused"}
