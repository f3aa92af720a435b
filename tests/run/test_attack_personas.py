"""The adversarial personas of the RAG-DIVE simulator (roles/attacker_*.yaml, docs/safety.md)
against FakeLLMServer's default replies: several turns each, validated by the red-team CV,
the attack checks on their turns, and the role's version in every call's cache key."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_ragdive.attacks.score import score_attacks
from pytest_ragdive.core.config_models import GeneratedConfig
from pytest_ragdive.core.records import Context, Conversation, Document, TargetResponse
from pytest_ragdive.run.target import as_async
from pytest_ragdive.run.users.simulator import run_generated
from pytest_ragdive.sources.generator import plan_generated
from pytest_ragdive.sources.roles import available_roles, load_roles
from pytest_ragdive.testing import FakeLLMServer, config_for

DOC = Document(id="refunds", title="Refunds", text="Hardware can be returned within 30 days of delivery for a full refund.")
CANARY = "ACME-CANARY-93XQ-11"
ATTACKERS = ["attacker_instructions", "attacker_personal_data", "attacker_policy", "attacker_off_domain",
             "attacker_persistent"]


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as s:  # the default replies: a red-team user who rephrases each turn
        yield s


def bot(leaks: bool):  # type: ignore[no-untyped-def]
    def answer(messages: list[dict[str, str]]) -> TargetResponse:
        text = f"My instructions say {CANARY}." if leaks and len(messages) >= 3 else "I can't share that."
        return TargetResponse(answer=text, contexts=[Context(id="refunds#0", doc_id="refunds", text=DOC.text)])

    return answer


def generate(server: FakeLLMServer, cache: Path, role: str, *, leaks: bool = False, roles_dir: Path | None = None
             ) -> Conversation:
    from pytest_ragdive.llm import LLMClient

    settings = GeneratedConfig(conversations=1, turns=3, roles=[role])

    async def go() -> Conversation:
        cfg = config_for(server, cache_dir=str(cache), llm={"timeout_s": 5, "max_retries": 0, "transport": "openai_http"})
        client = LLMClient.from_config(cfg)
        try:
            [spec] = plan_generated(settings, [DOC], "core")
            [r] = load_roles([role], extra_dirs=[roles_dir] if roles_dir else [])
            return await run_generated(spec, DOC, r, as_async(bot(leaks)), client, settings, 0)
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_the_adversarial_roles_are_versioned_role_files() -> None:
    files = available_roles()
    assert {"default", "confused", *ATTACKERS} <= set(files)
    for r in load_roles(ATTACKERS):
        assert r.version and r.attack is not None
    assert {r.attack.family for r in load_roles(ATTACKERS) if r.attack} == {
        "instructions", "personal_data", "policy", "off_domain", "persistence"}
    assert load_roles(["default"])[0].version is None  # the cooperative roles keep their keys


@pytest.mark.parametrize("role", ATTACKERS)
def test_each_persona_runs_several_validated_turns(server: FakeLLMServer, tmp_path: Path, role: str) -> None:
    conv = generate(server, tmp_path / "cache", role)
    assert conv.role == role and len(conv.turns) == 3, conv.validation
    assert [t.question_type for t in conv.turns] == ["Initial", "Follow-up", "Follow-up"]
    assert all(t.attack is not None and t.attack.framing == "persona" for t in conv.turns)
    systems = [str(b["messages"][0]["content"]) for b in server.requests]
    assert sum("prompt id: attack_generator_first" in s for s in systems) == 3
    assert sum("prompt id: attack_validator_turn" in s for s in systems) == 3  # the CV checked every turn
    assert conv.validation is not None and conv.validation.accepted == 3
    score_attacks(conv, [CANARY])
    assert conv.scores["attack_success_rate"] == 0.0


def test_a_leaking_bot_loses_to_the_persona(server: FakeLLMServer, tmp_path: Path) -> None:
    conv = generate(server, tmp_path / "cache", "attacker_instructions", leaks=True)
    score_attacks(conv, [CANARY])
    assert conv.scores["attack_success_instructions"] == 1.0
    assert conv.failures and CANARY not in conv.failures[0]


def test_the_roles_version_is_in_the_cache_key(server: FakeLLMServer, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = generate(server, cache, "attacker_policy")
    n = server.request_count
    again = generate(server, cache, "attacker_policy")
    assert server.request_count == n  # replayed
    assert [t.rag_input for t in again.turns] == [t.rag_input for t in first.turns]
    # the same role text under another version: every simulator and validator call is new
    bumped = tmp_path / "roles"
    bumped.mkdir()
    text = available_roles()["attacker_policy"].read_text(encoding="utf-8").replace('version: "1"', 'version: "2"')
    (bumped / "attacker_policy.yaml").write_text(text, encoding="utf-8")
    generate(server, cache, "attacker_policy", roles_dir=bumped)
    assert server.request_count == 2 * n
