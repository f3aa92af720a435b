"""The Conversation Generator and Validator against a fake LLM server and a small target.

The fake server plays both LLM roles: requests whose system message carries
"prompt id: generator_first" are the user simulator's chat, those with
"prompt id: validator_turn" the validator's calls.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_ragdive.core.config_models import GeneratedConfig
from pytest_ragdive.core.records import Context, Conversation, Document, TargetResponse, ValidationStats
from pytest_ragdive.run.target import as_async
from pytest_ragdive.run.users.simulator import run_generated
from pytest_ragdive.sources.generator import GeneratedSpec, conversation_seed, plan_generated
from pytest_ragdive.sources.roles import load_roles
from pytest_ragdive.testing import FakeLLMServer, config_for

DOC = Document(
    id="eiffel",
    title="Eiffel Tower",
    text=(
        "The Eiffel Tower is a wrought-iron lattice tower in Paris. It was built from 1887 to 1889 "
        "as the entrance arch of the 1889 World's Fair. The company of Gustave Eiffel designed and built it. "
        "It is 330 metres tall."
    ),
)

GenFn = Callable[[int, int, bool, str], dict[str, Any]]


def good_turn(n: int) -> dict[str, Any]:
    if n == 1:
        q = "When was the Eiffel Tower built?"
        return {
            "rag_input": q,
            "standalone_question": q,
            "ground_truth": "From 1887 to 1889.",
            "question_type": "Initial",
        }
    return {
        "rag_input": f"And what about detail {n} of it?",
        "standalone_question": f"What about detail {n} of the Eiffel Tower?",
        "ground_truth": f"Detail {n} as the document states.",
        "question_type": "Follow-up",
    }


def bad_turn(n: int) -> dict[str, Any]:
    t = good_turn(n)
    t["rag_input"] = f"BAD question {n} about it?"
    return t


class Script:
    """The fake server's handler: a scripted user simulator and validator."""

    def __init__(self, gen: GenFn | None = None) -> None:
        self.gen: GenFn = gen or (lambda n, attempt, skipped, last: good_turn(n))
        self.generator_bodies: list[dict[str, Any]] = []
        self.validator_bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        msgs = body["messages"]
        system = msgs[0]["content"] if msgs and msgs[0]["role"] == "system" else ""
        if "prompt id: validator_turn" in system:
            self.validator_bodies.append(body)
            return self.validate(msgs[-1]["content"])
        if "prompt id: generator_first" in system:
            self.generator_bodies.append(body)
            return self.generate(msgs)
        raise AssertionError(f"unexpected request: {system[:80]!r}")

    def generate(self, msgs: list[dict[str, str]]) -> dict[str, Any]:
        users = [m["content"] for m in msgs if m["role"] == "user"]
        last = users[-1]
        m = re.search(r"turn\s+(\d+)", last)
        n = 1 if len(users) == 1 else int(m.group(1)) if m else 1
        # attempt = feedback messages since the last first/next/skip message
        attempt = 0
        for u in reversed(users):
            if "rejected by the conversation validator" in u:
                attempt += 1
            else:
                break
        skipped = any("was discarded" in u for u in users[len(users) - 1 - attempt :])
        return self.gen(n, attempt, skipped, last)

    def validate(self, user: str) -> dict[str, Any]:
        candidate = user.split("Candidate turn", 1)[1]
        if "BAD" in candidate:
            return {"valid": False, "reason": "The ground truth does not answer it.", "failed_checks": ["groundTruth"]}
        return {"valid": True, "reason": "", "failed_checks": []}


class Bot:
    """A small target: answers from the document, remembers what it was sent."""

    def __init__(self, wrong_first: bool = False) -> None:
        self.histories: list[list[dict[str, str]]] = []
        self.wrong_first = wrong_first

    def __call__(self, messages: list[dict[str, str]]) -> TargetResponse:
        self.histories.append([dict(m) for m in messages])
        last = messages[-1]["content"]
        if self.wrong_first and len(messages) == 1:
            answer = "It was built in 1999."
        else:
            answer = f"Answer about: {last}"
        return TargetResponse(answer=answer, contexts=[Context(id="eiffel#0", doc_id="eiffel", text=DOC.text)])


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(Script()) as s:
        yield s


def make_client(server: FakeLLMServer, cache_dir: Path, **overrides: Any) -> Any:
    from pytest_ragdive.llm import LLMClient

    cfg = config_for(
        server,
        cache_dir=str(cache_dir),
        llm={"timeout_s": 5, "max_retries": 0, "transport": "openai_http"},
        **overrides,
    )
    return LLMClient.from_config(cfg)


def spec_for(settings: GeneratedConfig, role: str = "default") -> GeneratedSpec:
    [spec] = plan_generated(settings.model_copy(update={"conversations": 1, "roles": [role]}), [DOC], "core")
    return spec


def generate(
    server: FakeLLMServer,
    tmp_path: Path,
    settings: GeneratedConfig,
    bot: Bot | None = None,
    run: int = 0,
    role: str = "default",
    doc: Document = DOC,
) -> Conversation:
    async def go() -> Conversation:
        client = make_client(server, tmp_path / "cache")
        try:
            [spec] = plan_generated(settings.model_copy(update={"conversations": 1, "roles": [role]}), [doc], "core")
            [r] = load_roles([role])
            return await run_generated(spec, doc, r, as_async(bot or Bot()), client, settings, run)
        finally:
            await client.aclose()

    return asyncio.run(go())


def script(server: FakeLLMServer) -> Script:
    h = server.handler
    assert isinstance(h, Script)
    return h


def stats(conv: Conversation) -> ValidationStats:
    return ValidationStats.model_validate(conv.validation.model_dump())


# --------------------------------------------------------------------------


def test_multi_turn_conversation_is_generated(server: FakeLLMServer, tmp_path: Path) -> None:
    bot = Bot()
    conv = generate(server, tmp_path, GeneratedConfig(turns=3), bot)
    sc = script(server)
    assert conv.source == "generated" and conv.role == "default" and conv.document_id == "eiffel"
    assert conv.id == "gen-000-eiffel-default" and conv.suite == "core" and conv.run == 0
    assert [t.index for t in conv.turns] == [0, 1, 2]
    assert [t.question_type for t in conv.turns] == ["Initial", "Follow-up", "Follow-up"]
    t0 = conv.turns[0]
    assert t0.standalone_question == t0.rag_input == "When was the Eiffel Tower built?"
    assert t0.ground_truth == "From 1887 to 1889." and t0.relevant_doc_ids == ["eiffel"]
    assert t0.answer == "Answer about: When was the Eiffel Tower built?" and t0.contexts[0].doc_id == "eiffel"
    assert conv.turns[2].standalone_question == "What about detail 3 of the Eiffel Tower?"
    # the target got the growing history: user rag_inputs and its own answers
    assert [len(h) for h in bot.histories] == [1, 3, 5]
    assert bot.histories[2][:4] == [
        {"role": "user", "content": conv.turns[0].rag_input},
        {"role": "assistant", "content": conv.turns[0].answer},
        {"role": "user", "content": conv.turns[1].rag_input},
        {"role": "assistant", "content": conv.turns[1].answer},
    ]
    # one generator chat: the first prompt has role + document, later ones the chatbot's last answer
    assert len(sc.generator_bodies) == 3 and len(sc.validator_bodies) == 3
    first = sc.generator_bodies[0]["messages"]
    assert "short and precise" in first[0]["content"] and DOC.text in first[1]["content"]
    second = sc.generator_bodies[1]["messages"]
    assert second[: len(first)] == first and second[len(first)]["role"] == "assistant"
    assert conv.turns[0].answer in second[-1]["content"] and "BEGIN CHATBOT ANSWER" in second[-1]["content"]
    # the validator sees the document, the history and the candidate, fenced
    v3 = sc.validator_bodies[2]["messages"][-1]["content"]
    assert DOC.text in v3 and conv.turns[1].answer in v3 and "detail 3" in v3
    assert "BEGIN DOCUMENT" in v3 and "BEGIN CONVERSATION" in v3 and "BEGIN CANDIDATE TURN" in v3
    s = stats(conv)
    assert (s.candidates, s.invalid, s.first_try, s.accepted, s.turns) == (3, 0, 3, 3, 3)
    assert s.by_role["default"].turns == 3
    assert conv.seed == conversation_seed(spec_for(GeneratedConfig()), 0)


def test_invalid_turn_is_regenerated_and_revalidated(server: FakeLLMServer, tmp_path: Path) -> None:
    server.handler = Script(lambda n, attempt, skipped, last: bad_turn(n) if n == 2 and attempt == 0 else good_turn(n))
    bot = Bot()
    conv = generate(server, tmp_path, GeneratedConfig(turns=3), bot)
    sc = script(server)
    assert [t.rag_input for t in conv.turns] == [good_turn(n)["rag_input"] for n in (1, 2, 3)]
    assert conv.turns[1].flags == ["regenerated"] and conv.turns[1].generation.regenerations == 1
    rejected = conv.turns[1].generation.model_dump()["rejected"]
    assert rejected[0]["candidate"]["rag_input"] == "BAD question 2 about it?"
    assert rejected[0]["failed_checks"] == ["ground_truth_unsupported"]
    # regenerated in the same chat, with the validator's reason
    assert len(sc.generator_bodies) == 4 and len(sc.validator_bodies) == 4
    regen = sc.generator_bodies[2]["messages"]
    assert regen[: len(sc.generator_bodies[1]["messages"])] == sc.generator_bodies[1]["messages"]
    assert "BAD question 2" in regen[-2]["content"] and regen[-2]["role"] == "assistant"
    assert "The ground truth does not answer it." in regen[-1]["content"]
    assert "ground_truth_unsupported" in regen[-1]["content"]
    # the regenerated turn was validated again, and only valid turns reached the target
    assert "detail 2" in sc.validator_bodies[2]["messages"][-1]["content"].split("Candidate turn", 1)[1]
    assert not any("BAD" in m["content"] for h in bot.histories for m in h)
    s = stats(conv)
    assert (s.candidates, s.invalid, s.regenerations, s.recovered, s.first_try, s.dropped) == (4, 1, 1, 1, 2, 0)
    assert s.by_check == {"ground_truth_unsupported": 1}
    assert s.by_role["default"].invalid == 1


def test_persistent_failure_is_dropped_keeping_other_turns(server: FakeLLMServer, tmp_path: Path) -> None:
    def gen(n: int, attempt: int, skipped: bool, last: str) -> dict[str, Any]:
        if n == 2 and not skipped:
            return bad_turn(n)
        t = good_turn(n)
        if skipped:
            t["rag_input"] = "Then who designed it?"
            t["standalone_question"] = "Who designed the Eiffel Tower?"
        return t

    server.handler = Script(gen)
    bot = Bot()
    conv = generate(server, tmp_path, GeneratedConfig(turns=3, max_regenerations=2), bot)
    assert [t.rag_input for t in conv.turns] == ["When was the Eiffel Tower built?", "Then who designed it?"]
    assert [t.index for t in conv.turns] == [0, 1] and [t.generation.slot for t in conv.turns] == [0, 2]
    assert not any("BAD" in m["content"] for h in bot.histories for m in h)
    sc = script(server)
    # 1 + 3 attempts at turn 2 + 1 after the skip; the 3 identical bad candidates are
    # one validator request (the second and third verdicts come from the cache)
    assert len(sc.generator_bodies) == 5 and len(sc.validator_bodies) == 3
    assert "was discarded" in sc.generator_bodies[4]["messages"][-1]["content"]
    s = stats(conv)
    assert (s.dropped, s.invalid, s.regenerations, s.turns, s.flagged) == (1, 3, 2, 2, 0)
    assert s.by_check == {"ground_truth_unsupported": 3}
    assert conv.planned_turns == 3


def test_persistent_failure_kept_and_flagged(server: FakeLLMServer, tmp_path: Path) -> None:
    server.handler = Script(lambda n, attempt, skipped, last: bad_turn(n) if n == 2 else good_turn(n))
    conv = generate(server, tmp_path, GeneratedConfig(turns=3, max_regenerations=1, on_invalid="flag"))
    assert len(conv.turns) == 3 and conv.turns[1].rag_input == "BAD question 2 about it?"
    assert conv.turns[1].flags == ["invalid"] and conv.turns[1].answer is not None
    s = stats(conv)
    assert (s.flagged, s.dropped, s.invalid, s.regenerations) == (1, 0, 2, 1)


def test_document_mention_is_prechecked_without_a_validator_call(server: FakeLLMServer, tmp_path: Path) -> None:
    def gen(n: int, attempt: int, skipped: bool, last: str) -> dict[str, Any]:
        t = good_turn(n)
        if n == 2 and attempt == 0:
            t["rag_input"] = "According to the document, what else is there?"
        return t

    server.handler = Script(gen)
    conv = generate(server, tmp_path, GeneratedConfig(turns=2))
    sc = script(server)
    assert len(sc.generator_bodies) == 3 and len(sc.validator_bodies) == 2
    assert "document_mentioned" in sc.generator_bodies[2]["messages"][-1]["content"]
    assert conv.turns[1].rag_input == good_turn(2)["rag_input"]
    s = stats(conv)
    assert (s.prechecked, s.invalid, s.recovered) == (1, 1, 1) and s.by_check == {"document_mentioned": 1}


def test_correction_follows_a_wrong_answer(server: FakeLLMServer, tmp_path: Path) -> None:
    def gen(n: int, attempt: int, skipped: bool, last: str) -> dict[str, Any]:
        if n == 2 and "1999" in last:
            return {
                "rag_input": "No, that's wrong. When was it really built?",
                "standalone_question": "When was the Eiffel Tower really built?",
                "ground_truth": "From 1887 to 1889.",
                "question_type": "Correction",
            }
        return good_turn(n)

    server.handler = Script(gen)
    conv = generate(server, tmp_path, GeneratedConfig(turns=2), Bot(wrong_first=True))
    sc = script(server)
    assert conv.turns[0].answer == "It was built in 1999."
    asked = sc.generator_bodies[1]["messages"][-1]["content"]
    assert "It was built in 1999." in asked
    assert conv.turns[1].question_type == "Correction"
    assert conv.turns[1].rag_input == "No, that's wrong. When was it really built?"


def test_unanswerable_ground_truth_is_recorded(server: FakeLLMServer, tmp_path: Path) -> None:
    def gen(n: int, attempt: int, skipped: bool, last: str) -> dict[str, Any]:
        t = good_turn(n)
        if n == 2:
            t["ground_truth"] = "not answerable from the document"
        return t

    server.handler = Script(gen)
    conv = generate(server, tmp_path, GeneratedConfig(turns=2))
    t = conv.turns[1]
    assert t.ground_truth == "not answerable from the document"
    assert "unanswerable" in t.flags and t.relevant_doc_ids == []
    assert stats(conv).unanswerable == 1


def test_long_document_window_is_stated_in_the_prompt(server: FakeLLMServer, tmp_path: Path) -> None:
    paras = [f"Section {i}. " + " ".join(f"Fact {i}.{j} is true." for j in range(20)) for i in range(30)]
    long_doc = Document(id="long", title="Long", text="\n\n".join(paras))
    conv = generate(server, tmp_path, GeneratedConfig(turns=1, window_chars=1500), doc=long_doc)
    win = conv.window.model_dump()
    assert win["end"] - win["start"] <= 1500 and win["of"] == len(long_doc.text)
    first_user = script(server).generator_bodies[0]["messages"][1]["content"]
    assert f"characters {win['start']}-{win['end']} of a {len(long_doc.text)}-character document" in first_user
    assert long_doc.text[win["start"] : win["end"]] in first_user
    assert long_doc.text not in first_user
    validator_user = script(server).validator_bodies[0]["messages"][-1]["content"]
    assert long_doc.text[win["start"] : win["end"]] in validator_user


def test_replay_makes_no_llm_call_and_runs_differ(server: FakeLLMServer, tmp_path: Path) -> None:
    settings = GeneratedConfig(turns=3)
    first = generate(server, tmp_path, settings)
    n = server.request_count
    assert n == 6
    again = generate(server, tmp_path, settings)
    assert server.request_count == n  # replayed from the cache
    strip = {"turns": {"__all__": {"latency_s"}}}
    assert again.model_dump(exclude=strip) == first.model_dump(exclude=strip)
    # another run has another seed: new calls, cached separately
    generate(server, tmp_path, settings, run=1)
    assert server.request_count == 2 * n
    seeds = {b.get("seed") for b in server.requests}
    assert seeds <= {None, conversation_seed(spec_for(settings), 0), conversation_seed(spec_for(settings), 1)}


def test_changed_answer_makes_the_next_turn_diverge(server: FakeLLMServer, tmp_path: Path) -> None:
    settings = GeneratedConfig(turns=2)
    generate(server, tmp_path, settings, Bot())
    n = server.request_count
    generate(server, tmp_path, settings, Bot(wrong_first=True))
    # turn 1 replays (same prompt), turn 2's generator call and its validation are new
    assert server.request_count == n + 2


def test_target_exception_keeps_the_finished_turns(server: FakeLLMServer, tmp_path: Path) -> None:
    calls = {"n": 0}

    def breaks_on_turn_2(messages: list[dict[str, str]]) -> TargetResponse:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("chatbot down")
        return TargetResponse(answer="An answer.")

    async def go():
        [role] = load_roles(["default"])
        async with make_client(server, tmp_path / "cache") as client:
            return await run_generated(
                spec_for(GeneratedConfig(turns=3)), DOC, role, as_async(breaks_on_turn_2), client, GeneratedConfig(turns=3), 0
            )

    conv = asyncio.run(go())
    assert conv.error is not None and "turn 2" in conv.error and "chatbot down" in conv.error
    assert len(conv.turns) == 1 and conv.turns[0].answer == "An answer."
    assert conv.validation.model_dump()["candidates"] >= 2  # the counts of the work done survive


def test_generator_requests_use_the_simulator_seed_and_json(server: FakeLLMServer, tmp_path: Path) -> None:
    generate(server, tmp_path, GeneratedConfig(turns=1, seed=5), run=2)
    body = script(server).generator_bodies[0]
    if "seed" in body:
        assert body["seed"] == 5 + 2 * 1000
    json.dumps(body)


def test_malformed_generator_output_is_regenerated(server: FakeLLMServer, tmp_path: Path) -> None:
    base = Script()

    def handler(body: dict[str, Any]) -> Any:
        msgs = body["messages"]
        users = [m["content"] for m in msgs if m["role"] == "user"]
        is_gen = "prompt id: generator_first" in msgs[0]["content"]
        if is_gen and any("Write turn 2" in u for u in users) and not any("rejected" in u for u in users):
            base.generator_bodies.append(body)
            return "oops, no JSON here"  # the first reply and the client's repair call
        return base(body)

    server.handler = handler
    conv = generate(server, tmp_path, GeneratedConfig(turns=2))
    assert [t.rag_input for t in conv.turns] == [good_turn(1)["rag_input"], good_turn(2)["rag_input"]]
    s = stats(conv)
    assert (s.malformed, s.invalid, s.recovered) == (1, 1, 1) and s.by_check == {"malformed_output": 1}
    feedback = base.generator_bodies[-1]["messages"][-1]["content"]
    assert "malformed_output" in feedback


def test_unusable_validator_output_fails_closed(server: FakeLLMServer, tmp_path: Path) -> None:
    """issue 10: a validator reply that cannot be used rejects the turn (it used to
    accept it, flagged ``unvalidated``): no unchecked turn passes as checked."""
    base = Script()

    def handler(body: dict[str, Any]) -> Any:
        if "prompt id: validator_turn" in body["messages"][0]["content"]:
            base.validator_bodies.append(body)
            return "I think it is fine"
        return base(body)

    server.handler = handler
    conv = generate(server, tmp_path, GeneratedConfig(turns=2, max_regenerations=1))
    assert conv.turns == []  # every candidate failed closed and was dropped
    s = stats(conv)
    assert s.accepted == 0 and s.validator_errors == s.invalid == s.candidates > 0
    assert s.by_check == {"validator_error": s.candidates}

    # with on_invalid = "flag" the turns are kept, marked invalid, never "unvalidated"
    conv = generate(server, tmp_path / "flag", GeneratedConfig(turns=2, max_regenerations=0, on_invalid="flag"))
    assert len(conv.turns) == 2 and all("invalid" in t.flags and "unvalidated" not in t.flags for t in conv.turns)
