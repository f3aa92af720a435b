"""Run outcomes built from real scored conversations of the bundled example
(run through :func:`pytest_ragdive.run_suite`), for the report and review tests."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pytest_ragdive.core.config import load_config
from pytest_ragdive.core.records import Conversation, TargetResponse
from pytest_ragdive.gate.baseline import load_baseline
from pytest_ragdive.gate.conclude import RunFacts, conclude
from pytest_ragdive.gate.outcome import RunOutcome
from pytest_ragdive.run.api import run_suite

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "example_project"
if str(EXAMPLE) not in sys.path:
    sys.path.insert(0, str(EXAMPLE))

HOSTILE = '<script>document.body.dataset.pwned="1"</script><img src=x onerror="alert(1)"> & "quotes"'


PRO_PRICE = "How much is the Pro plan per month?"  # a core single-turn question


def hostile(bot: Any, raise_on: str | None = None) -> Any:
    """The bot, with markup appended to every first answer (untrusted text the report
    must escape), raising on the question ``raise_on``."""

    def target(messages: list[dict[str, str]]) -> TargetResponse:
        if raise_on is not None and messages[-1]["content"] == raise_on:
            raise RuntimeError("the bot fell over")
        resp: TargetResponse = bot(messages)
        if len(messages) == 1:
            resp = resp.model_copy(update={"answer": resp.answer + " " + HOSTILE})
        return resp

    return target


def example_outcome(
    history: str = "none", suite: str = "core", gate: bool = True, markup: bool = True, raise_on: str | None = None,
    reader: str | None = None,
) -> RunOutcome:
    """The example's suite, ended by :func:`conclude` against its committed baseline
    (or ungated), with the bot's history policy and reader set (and, with ``markup``,
    markup in every first answer); ``reader`` None: the environment's (EXAMPLE_RAG_READER)."""
    from example_rag import make_bot

    cfg = load_config(EXAMPLE / "pyproject.toml")
    cfg.suite = suite
    cfg.baseline = str(EXAMPLE / "baseline.json") if gate else None  # (its answers file lies beside it)
    convs: list[Conversation] = []
    bot = make_bot(history=history, **({"reader": reader} if reader else {}))
    run_suite(hostile(bot, raise_on) if markup else bot, cfg, suite, conversations=convs)
    baseline = load_baseline(EXAMPLE / "baseline.json") if gate else None
    facts = RunFacts(planned=len(convs), notes=["a note with <b>markup</b>"])
    return conclude(convs, cfg, baseline, facts)
