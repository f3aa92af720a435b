"""The forgetfulness probe's stand-alone questions are sent as the turns are
answered (runner.StandaloneProbes), beside the conversation's next turns, and
recorded only when the conversation ends without an error."""

from __future__ import annotations

import asyncio
import time

import pytest
from factories import conversation, turn

from pytest_ragdive.core.records import CallInfo, Conversation, TargetResponse
from pytest_ragdive.run.turn_loop import run_scripted


def _conv(n: int = 4) -> Conversation:
    return conversation("c", *(turn(f"q{i}", standalone_question=f"alone{i}", ground_truth=f"gt{i}") for i in range(n)), suite="core")


class Bot:
    """An async target that logs when each call starts and ends; a turn (not a probe)
    takes ``turn_s``; ``fail`` names the message whose call raises."""

    def __init__(self, turn_s: float = 0.05, fail: str | None = None) -> None:
        self.turn_s, self.fail = turn_s, fail
        self.log: list[tuple[str, str, float]] = []

    async def __call__(self, messages: list[dict[str, str]], call_info: CallInfo | None = None) -> TargetResponse:
        text = messages[-1]["content"]
        self.log.append(("start", text, time.perf_counter()))
        await asyncio.sleep(self.turn_s if call_info is not None else 0.001)
        if text == self.fail:
            raise RuntimeError(f"bot failed on {text}")
        self.log.append(("end", text, time.perf_counter()))
        return TargetResponse(answer=f"answer to {text}")

    def at(self, event: str, text: str) -> float:
        return next(t for e, m, t in self.log if e == event and m == text)


def test_a_turns_probe_runs_beside_the_next_turns_and_is_recorded() -> None:
    bot = Bot()
    conv = asyncio.run(run_scripted(_conv(), bot))
    assert conv.error is None
    assert [t.standalone_answer for t in conv.turns] == [None, "answer to alone1", "answer to alone2", "answer to alone3"]
    # turn 2's probe went out while turn 3 was still being answered (it used to wait for the last turn)
    assert bot.at("start", "alone1") < bot.at("end", "q2")
    assert bot.at("end", "alone1") < bot.at("end", "q3")


def test_a_conversation_that_fails_later_records_no_probe_and_leaves_no_task() -> None:
    async def run() -> tuple[Conversation, set[asyncio.Task[object]]]:
        conv = await run_scripted(_conv(), Bot(fail="q3"))
        await asyncio.sleep(0.01)
        return conv, {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}

    conv, pending = asyncio.run(run())
    assert conv.error is not None and conv.error.startswith("turn 4: RuntimeError: bot failed on q3")
    assert all(t.standalone_answer is None for t in conv.turns)
    assert not pending


def test_a_failed_probe_is_the_conversations_error_and_the_other_probes_are_kept() -> None:
    conv = asyncio.run(run_scripted(_conv(), Bot(fail="alone2")))
    assert conv.error is not None and conv.error.startswith("stand-alone probe of turn 3: RuntimeError")
    assert [t.standalone_answer for t in conv.turns] == [None, "answer to alone1", None, "answer to alone3"]


@pytest.mark.parametrize("probe", [True, False])
def test_without_the_probe_no_stand_alone_question_is_asked(probe: bool) -> None:
    bot = Bot(turn_s=0.001)
    asyncio.run(run_scripted(_conv(3), bot, probe=probe))
    asked = [m for e, m, _ in bot.log if e == "start" and m.startswith("alone")]
    assert asked == (["alone1", "alone2"] if probe else [])
