"""Judging each turn while its conversation runs (``metrics.backends.JudgeAsItRuns``,
the turn loop's ``on_turn`` hook): a turn's judge calls are sent before the
conversation's later turns are answered, and the scores, verdicts, call counts
and cache keys are the very ones that judging after the turn loop gives."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_ragdive import run_suite
from pytest_ragdive.core.errors import GoldenError
from pytest_ragdive.core.records import Context, Conversation, TargetResponse, Turn
from pytest_ragdive.metrics import backends
from pytest_ragdive.run.turn_loop import run_conversation
from pytest_ragdive.run.users.scripted import ScriptedUser
from pytest_ragdive.testing import FakeLLMServer, config_for
from pytest_ragdive.testing.replies import example_from_schema

CONVERSATIONS = """
conversations:
  - id: snow
    turns:
      - rag_input: What colour is snow?
        standalone_question: What colour is snow?
        ground_truth: Snow is white.
        relevant_doc_ids: [snow]
      - rag_input: When does it fall?
        standalone_question: When does snow fall?
        ground_truth: Snow falls in winter.
        relevant_doc_ids: [snow]
      - rag_input: Is it cold?
        standalone_question: Is snow cold?
        ground_truth: Snow is cold.
        relevant_doc_ids: [snow]
  - id: sky
    turns:
      - rag_input: What colour is the sky?
        standalone_question: What colour is the sky?
        ground_truth: The sky is blue.
        relevant_doc_ids: [sky]
      - rag_input: And at night?
        standalone_question: What colour is the sky at night?
        ground_truth: The sky is black at night.
        relevant_doc_ids: [sky]
"""

CORPUS = (
    '{"id": "snow", "title": "Snow", "text": "Snow is white and cold. It falls in winter."}\n'
    '{"id": "sky", "title": "Sky", "text": "The sky is blue by day and black at night."}\n'
)


def _flip(text: str, path: str) -> bool:
    return int(hashlib.sha256((text + path).encode()).hexdigest()[:8], 16) % 3 != 0


def _varied(x: Any, text: str, path: str = "") -> Any:
    """The schema's example with every boolean drawn from the prompt (so that scores differ)."""
    if isinstance(x, dict):
        return {k: _varied(v, text, f"{path}/{k}") for k, v in x.items()}
    if isinstance(x, list):
        return [_varied(v, text, f"{path}/{i}") for i, v in enumerate(x)]
    return _flip(text, path) if isinstance(x, bool) else x


def judge_reply(body: dict[str, Any]) -> Any:
    text = "\n".join(m["content"] for m in body["messages"])
    schema = body["response_format"]["json_schema"]["schema"]
    return _varied(example_from_schema(schema, schema.get("$defs", {}), fill=True), text)


def answer(messages: list[dict[str, str]]) -> TargetResponse:
    q = messages[-1]["content"]
    return TargetResponse(answer=f"About {q.lower()}: it depends.", contexts=[Context(id="c1", text=f"Notes on {q}")])


def project(tmp_path: Path, server: FakeLLMServer, cache: str, **kw: Any) -> Any:
    (tmp_path / "convs.yaml").write_text(CONVERSATIONS)
    (tmp_path / "corpus.jsonl").write_text(CORPUS)
    return config_for(
        server,
        base_dir=tmp_path,
        corpus="corpus.jsonl",
        cache_dir=str(tmp_path / cache),
        concurrency=2,
        suites={"core": {"conversations": ["convs.yaml"]}},
        llm={"transport": "openai_http", "max_retries": 0, "timeout_s": 10.0},
        **kw,
    )


def test_a_turns_judge_calls_go_out_while_its_conversation_still_runs(tmp_path: Path) -> None:
    """The target answers the third turn only once the server got a judge call about the
    first one (it waits at most 10 s, and says whether it had to give up): judged after
    the turn loop, that call could only come after the third answer."""
    first_judged = threading.Event()

    def handler(body: dict[str, Any]) -> Any:
        if "What colour is snow?" in "\n".join(m["content"] for m in body["messages"]):
            first_judged.set()
        return judge_reply(body)

    waited: list[bool] = []

    def bot(messages: list[dict[str, str]]) -> TargetResponse:
        if messages[-1]["content"] == "Is it cold?" and len(messages) > 1:
            waited.append(first_judged.wait(timeout=10))
        return answer(messages)

    with FakeLLMServer(handler) as server:
        convs: list[Conversation] = []
        run_suite(bot, project(tmp_path, server, "cache"), conversations=convs)
    assert waited == [True]
    snow = next(c for c in convs if c.id == "snow")
    assert snow.error is None and len(snow.turns) == 3
    assert snow.judge_calls.turn == 12 and snow.judge_calls.conversation == 2
    assert all(t.verdicts["correctness"].model == "openai/fake-model" for t in snow.turns)


def _keys(cache_dir: Path) -> list[str]:
    import sqlite3

    with sqlite3.connect(cache_dir / "cache.db") as db:
        return sorted(k for (k,) in db.execute("select key from Cache"))


def test_judging_as_it_runs_gives_what_judging_after_the_turn_loop_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same suite judged turn by turn, then with the hook switched off (every call
    made after the turn loop, as before): the same conversations, score for score and
    verdict for verdict, the same call counts, and a cache holding the same keys."""
    def judged(cache: str) -> tuple[list[dict[str, Any]], list[str]]:
        convs: list[Conversation] = []
        run_suite(answer, project(tmp_path, server, cache), conversations=convs)
        dumped = [c.model_dump(mode="json") for c in sorted(convs, key=lambda c: c.id)]
        for c in dumped:
            for t in c["turns"]:
                t.pop("latency_s")
        return dumped, _keys(tmp_path / cache)

    with FakeLLMServer(judge_reply) as server:
        as_it_runs, keys = judged("a")
        requests = server.request_count
        with monkeypatch.context() as m:
            m.setattr(backends.JudgeAsItRuns, "__call__", lambda self, conv, turn: None)
            after_the_loop, keys_after = judged("b")
        assert server.request_count == 2 * requests == 2 * (4 * 5 + 2 * 2)
    assert as_it_runs == after_the_loop
    assert keys == keys_after and len(keys) == requests
    scores = {v for c in as_it_runs for t in c["turns"] for v in t["scores"].values() if isinstance(v, float)}
    assert len(scores) > 2  # the replies vary: an equality of constants would prove little


def test_a_conversation_that_fails_later_is_not_judged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The target fails on snow's third turn: the judge calls started for its first two
    turns are cancelled or dropped, nothing judged is written, and no task is left with
    an exception nobody retrieved; the other conversation is judged as usual."""

    def bot(messages: list[dict[str, str]]) -> TargetResponse:
        if messages[-1]["content"] == "Is it cold?" and len(messages) > 1:
            raise RuntimeError("the bot fell over")
        return answer(messages)

    with FakeLLMServer(judge_reply, latency_s=0.05) as server, caplog.at_level(logging.ERROR, logger="asyncio"):
        convs: list[Conversation] = []
        run_suite(bot, project(tmp_path, server, "cache"), conversations=convs)
    snow = next(c for c in convs if c.id == "snow")
    sky = next(c for c in convs if c.id == "sky")
    assert snow.error is not None and snow.error.startswith("turn 3: RuntimeError")
    assert [t.answer is not None for t in snow.turns][:2] == [True, True]
    assert all(not t.verdicts for t in snow.turns) and snow.judge_calls is None
    assert sky.error is None and sky.judge_calls.turn == 8 and sky.judge_calls.conversation == 2
    assert "never retrieved" not in caplog.text


def test_an_error_building_the_judge_is_raised_when_judging_not_into_the_turn_loop() -> None:
    def make(conv: Conversation) -> Any:
        raise GoldenError("corpus.jsonl: not a corpus")

    async def main() -> None:
        judging = backends.JudgeAsItRuns(make)
        conv = Conversation(id="c")
        seen: list[int] = []

        async def target(history: list[dict[str, str]], info: Any = None) -> TargetResponse:
            return TargetResponse(answer="fine")

        def on_turn(c: Conversation, turn: Turn) -> None:
            seen.append(turn.index)
            assert c.turns[-1] is turn and turn.answer == "fine"
            judging(c, turn)

        user = ScriptedUser([Turn(rag_input="a"), Turn(rag_input="b")])
        await run_conversation(conv, user, target, probe=False, on_turn=on_turn)
        assert seen == [0, 1] and conv.error is None
        with pytest.raises(GoldenError, match="not a corpus"):
            await judging.finish(conv)

    asyncio.run(main())
