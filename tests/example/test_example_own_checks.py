"""The example's own checks (docs: "Add your own checks"): the team's metric
numbers_grounded (lumio_checks.py), the assert: lists of its core golden data and the
rubric judge polite. All pass on the healthy bot; the memory reader breaks the metric
and an assertion; offline the rubric judge is skipped with a note, never failed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "example_project"
if str(EXAMPLE) not in sys.path:
    sys.path.insert(0, str(EXAMPLE))

from example_rag import BotConfig, HelpCentreBot  # noqa: E402

from pytest_ragdive import run_suite  # noqa: E402
from pytest_ragdive.core.config import load_config  # noqa: E402
from pytest_ragdive.core.records import Conversation  # noqa: E402
from pytest_ragdive.gate.baseline import load_baseline  # noqa: E402
from pytest_ragdive.gate.conclude import RunFacts, conclude  # noqa: E402
from pytest_ragdive.gate.outcome import GateStatus, RunOutcome  # noqa: E402


def _core(reader: str) -> tuple[RunOutcome, list[str]]:
    cfg = load_config(EXAMPLE / "pyproject.toml")
    convs: list[Conversation] = []
    res = run_suite(HelpCentreBot(BotConfig(reader=reader)), cfg, "core", conversations=convs)
    with cfg.metrics.active():
        out = conclude(convs, cfg, load_baseline(EXAMPLE / "baseline.json"), RunFacts(planned=len(convs)))
    return out, res.notes


@pytest.fixture(scope="module")
def healthy() -> tuple[RunOutcome, list[str]]:
    return _core("extractive")


def test_the_healthy_bot_passes_every_check_of_its_own(healthy: tuple[RunOutcome, list[str]]) -> None:
    out, notes = healthy
    rows = {r.metric: r for r in out.gate or []}
    assert out.status is GateStatus.PASSED
    assert rows["numbers_grounded"].verdict == "pass" and rows["numbers_grounded"].current == 1.0
    assert rows["assertion_pass_rate"].verdict == "pass" and rows["assertion_pass_rate"].current == 1.0
    assert not any(c.failures for c in out.conversations)
    assert "polite" not in rows  # the rubric judge needs a model: not gated offline ...
    assert any("rubric judge(s) polite: not scored and not gated" in n for n in notes)  # ... and says so
    assert out.custom_metrics["numbers_grounded"].origin == "lumio_checks.numbers_grounded"


def test_the_memory_reader_fails_the_team_metric_and_an_assertion() -> None:
    out, _ = _core("memory")
    rows = {r.metric: r for r in out.gate or []}
    assert rows["numbers_grounded"].verdict == "regression" and (rows["numbers_grounded"].current or 1) < 0.9
    assert rows["assertion_pass_rate"].verdict == "regression"
    pro = next(c for c in out.conversations if c.id == "core-pro-price")
    assert "turn 1: assertion not_contains '$9' failed: the answer contains '$9'" in pro.failures
