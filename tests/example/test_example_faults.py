"""The example bot's injected-change knobs (``example_rag/faults.py``): off by default,
read from the environment, seeded per call, and each one changing what it says."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "example_project"
if str(EXAMPLE) not in sys.path:
    sys.path.insert(0, str(EXAMPLE))

from example_rag import BotConfig, HelpCentreBot  # noqa: E402
from example_rag.faults import Faults  # noqa: E402

from pytest_ragdive import CallInfo  # noqa: E402

FOLLOW_UP = [
    {"role": "user", "content": "How much does the Pro plan cost?"},
    {"role": "assistant", "content": "The Pro plan costs $12 a month."},
    {"role": "user", "content": "And how many days of video history does it keep?"},
]


def info(seed: int, turn: int = 0) -> CallInfo:
    return CallInfo(suite="core", conversation_id="c", run=0, turn=turn, seed=seed)


def test_faults_are_off_by_default_and_read_from_the_environment() -> None:
    assert BotConfig.from_env({}).faults == Faults() and not Faults().any
    cfg = BotConfig.from_env({"EXAMPLE_RAG_BREAK_RATE": "0.25", "EXAMPLE_RAG_MEMORY_RATE": "0.5", "EXAMPLE_RAG_FORGET_RATE": "1"})
    assert cfg.faults == Faults(break_rate=0.25, memory_rate=0.5, forget_rate=1.0) and cfg.faults.any
    with pytest.raises(ValueError, match="EXAMPLE_RAG_BREAK_RATE must be a number"):
        BotConfig.from_env({"EXAMPLE_RAG_BREAK_RATE": "often"})
    with pytest.raises(ValueError, match=r"EXAMPLE_RAG_FORGET_RATE must be in \[0, 1\]"):
        BotConfig.from_env({"EXAMPLE_RAG_FORGET_RATE": "1.5"})


def test_draws_are_seeded_per_call_and_strike_at_their_rate() -> None:
    f = Faults(break_rate=0.3, memory_rate=0.3)
    draws = [f.draw("break", FOLLOW_UP, info(s), 0) for s in range(2000)]
    assert draws == [f.draw("break", FOLLOW_UP, info(s), 0) for s in range(2000)]  # the same call repeats
    assert 0.26 < sum(draws) / len(draws) < 0.34
    other = [f.draw("memory", FOLLOW_UP, info(s), 0) for s in range(2000)]
    assert other != draws  # every fault has its own stream
    assert [f.draw("break", FOLLOW_UP, info(s), 1) for s in range(200)] != draws[:200]  # EXAMPLE_RAG_SEED moves them
    assert not any(Faults().draw("break", FOLLOW_UP, info(s), 0) for s in range(200))  # rate 0 never strikes
    # without call_info the draw comes from the messages (the stand-alone probe)
    assert f.draw("break", FOLLOW_UP, None, 0) == f.draw("break", FOLLOW_UP, None, 0)


def test_rate_zero_leaves_the_bot_exactly_as_it_was() -> None:
    healthy, off = HelpCentreBot(), HelpCentreBot(BotConfig(faults=Faults()))
    assert off(FOLLOW_UP, info(3)) == healthy(FOLLOW_UP, info(3))


def test_each_fault_changes_what_it_says() -> None:
    healthy = HelpCentreBot()(FOLLOW_UP, info(3))
    broken = HelpCentreBot(BotConfig(faults=Faults(break_rate=1.0)))(FOLLOW_UP, info(3))
    assert broken.contexts == healthy.contexts  # retrieval untouched
    last = healthy.contexts[-1]
    assert broken.answer != healthy.answer and broken.answer in last.text and broken.citations == [last.doc_id]

    memory = HelpCentreBot(BotConfig(faults=Faults(memory_rate=1.0)))(FOLLOW_UP, info(3))
    assert memory.answer == HelpCentreBot(BotConfig(reader="memory"))(FOLLOW_UP, info(3)).answer
    assert memory.answer != healthy.answer

    forgetful = HelpCentreBot(BotConfig(faults=Faults(forget_rate=1.0)))(FOLLOW_UP, info(3))
    assert forgetful == HelpCentreBot(BotConfig(history="none"))(FOLLOW_UP, info(3))
    assert forgetful.contexts != healthy.contexts  # the follow-up lost "Pro plan"
