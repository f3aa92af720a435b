"""The structure of issue 9: open suite names, the pure end of a run, roles, the user protocol."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from types import SimpleNamespace

import pytest
from conftest import PYPROJECT, results

from pytest_ragdive.core.config import RagdiveConfig
from pytest_ragdive.core.records import Conversation, Turn
from pytest_ragdive.gate.conclude import RunFacts, conclude
from pytest_ragdive.gate.outcome import GateStatus
from pytest_ragdive.run.target import as_async
from pytest_ragdive.run.turn_loop import run_conversation

NIGHTLY = '[tool.ragdive.suites.nightly]\nconversations = ["data/convs.yaml"]\n'


def test_a_suite_of_any_name_runs_under_its_own_marker(toy: pytest.Pytester) -> None:
    toy.makefile(".toml", pyproject=PYPROJECT.format(extra="") + NIGHTLY)
    res = toy.runpytest("--ragdive-suite=nightly", "-m", "ragdive_nightly", "--strict-markers")
    res.assert_outcomes(passed=2)
    assert set(results(toy)["suites"]) == {"nightly"}
    res = toy.runpytest("--ragdive-suite=core,nightly", "-v")
    res.assert_outcomes(passed=7)
    res.stdout.fnmatch_lines(["*nightly*c-grass*PASSED*"])
    assert set(results(toy)["suites"]) == {"core", "nightly"}
    res = toy.runpytest("--ragdive-suite=all")
    res.assert_outcomes(passed=7)


def test_a_bad_suite_name_is_one_line(toy: pytest.Pytester) -> None:
    toy.makefile(".toml", pyproject=PYPROJECT.format(extra="") + NIGHTLY.replace("nightly", "9lives"))
    res = toy.runpytest("--ragdive-suite=core")
    assert res.ret == 4
    assert "9lives" in res.stderr.str() and "Traceback" not in res.stderr.str()


def test_conclude_imports_no_pytest() -> None:
    code = (
        "import sys; import pytest_ragdive.gate.conclude, pytest_ragdive.reports.write; "
        "print(sorted(m for m in sys.modules if m == 'pytest' or m.startswith('_pytest')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _scored(cid: str, value: float) -> Conversation:
    turn = Turn(rag_input="q", answer="a", scores={"correctness": value})
    return Conversation(id=cid, turns=[turn])


def test_conclude_never_passes_on_nothing() -> None:
    from pytest_ragdive.gate.baseline import build_baseline

    cfg = RagdiveConfig.model_validate({"gate": {"correctness": 0.0}, "suites": {"core": {}}})
    convs = [_scored("a", 1.0), _scored("b", 0.0)]
    base = conclude(convs, cfg, None, RunFacts(planned=2))
    assert base.status is GateStatus.NOT_GATED and base.gate is None
    bl = build_baseline(base.suites, cfg.gate, config_hash="", backend="offline", judge_models={}, plugin_version="")
    same = conclude(convs, cfg, bl, RunFacts(planned=2))
    assert same.status is GateStatus.PASSED and not same.failed
    worse = conclude([_scored("a", 0.0), _scored("b", 0.0)], cfg, bl, RunFacts(planned=2))
    assert worse.status is GateStatus.FAILED and worse.failed and worse.regressions()
    nothing = conclude([], cfg, bl, RunFacts(planned=2))
    assert nothing.status is GateStatus.NOTHING_RAN and nothing.gate is None
    fatal = conclude(convs, cfg, bl, RunFacts(planned=2, fatal=["budget"]))
    assert fatal.status is GateStatus.FAILED


def test_update_refuses_an_interrupted_run() -> None:
    cfg = RagdiveConfig.model_validate({"suites": {"core": {}}, "update_baseline": True, "baseline": "b.json"})
    out = conclude([_scored("a", 1.0)], cfg, None, RunFacts(planned=1, completed=False))
    assert out.status is GateStatus.BASELINE_REFUSED and out.failed and out.baseline is None
    ok = conclude([_scored("a", 1.0)], cfg, None, RunFacts(planned=1))
    assert ok.status is GateStatus.BASELINE_WRITTEN and ok.baseline is not None


def test_a_worker_that_sends_nothing_is_named() -> None:
    from pytest_ragdive.plugin.controller import WORKER_KEY, DistController

    sess = SimpleNamespace(notes=[], fatal=[], worker_llm_stats=[])
    ctl = DistController(sess)  # type: ignore[arg-type]
    ctl.pytest_testnodedown(SimpleNamespace(workeroutput={}, gateway=SimpleNamespace(id="gw3")), "crashed")
    assert len(sess.notes) == 1 and "gw3" in sess.notes[0] and "no ragdive data" in sess.notes[0]
    ctl.pytest_testnodedown(
        SimpleNamespace(workeroutput={WORKER_KEY: '{"ran": 2, "llm": null, "fatal": ["x"]}'}, gateway=None), None
    )
    assert len(sess.notes) == 1 and sess.fatal == ["x"]


class EchoUser:
    """A user that asks about the previous answer, three times."""

    def __init__(self) -> None:
        self.finished = 0

    async def next_turn(self, conv: Conversation) -> Turn | None:
        if len(conv.turns) >= 3:
            return None
        last = conv.turns[-1].answer if conv.turns else "start"
        return Turn(rag_input=f"about {last}")

    def finish(self, conv: Conversation) -> None:
        self.finished += 1


def test_the_runner_drives_any_user() -> None:
    seen: list[int] = []

    def bot(history: list[dict[str, str]]) -> str:
        seen.append(len(history))
        if "boom" in history[-1]["content"]:
            raise RuntimeError("boom")
        return f"answer{len(history)}"

    user = EchoUser()
    conv = asyncio.run(run_conversation(Conversation(id="x"), user, as_async(bot), probe=False))
    assert [t.rag_input for t in conv.turns] == ["about start", "about answer1", "about answer3"]
    assert [t.index for t in conv.turns] == [0, 1, 2] and seen == [1, 3, 5]
    assert user.finished == 1 and conv.error is None

    class Boom(EchoUser):
        async def next_turn(self, conv: Conversation) -> Turn | None:
            return Turn(rag_input="boom") if conv.turns else Turn(rag_input="hi")

    user = Boom()
    conv = asyncio.run(run_conversation(Conversation(id="y"), user, as_async(bot), probe=False))
    assert conv.error is not None and "turn 2" in conv.error and conv.traceback
    assert len(conv.turns) == 1 and user.finished == 1
