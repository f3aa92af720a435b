"""The end of a run as one record: :class:`RunOutcome`.

:func:`pytest_ragdive.conclude.conclude` computes it from scored
conversations, the config and the baseline (no pytest involved); the pytest
session, the command-line gate and every report (terminal, Markdown, JUnit,
JSON, HTML) read it. No report re-derives a verdict from text: the status,
the gate rows and the notes are all here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from enum import StrEnum
from typing import ParamSpec, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from ..core.records import Conversation, JudgeCalls, ValidationStats
from ..core.results import AnswerConversation, Baseline, BaselineAnswers, CustomMetric, SuiteResult
from ..llm.stats import LLMStats
from .diff import BaselineDiff
from .rows import GateRow

P = ParamSpec("P")
R = TypeVar("R")


class GateStatus(StrEnum):
    """What the end of the run decided."""

    PASSED = "passed"  # every gated metric passed
    FAILED = "failed"  # a regression, a gated metric without a value, a fatal error, an errored conversation
    INCONCLUSIVE = "inconclusive"  # the evidence could not tell (see the gate's inconclusive policy)
    NO_DATA = "no_data"  # no gated metric had a value (nothing to compare: fails, never "N of M out of band")
    NOT_GATED = "not_gated"  # no baseline: metrics shown, nothing decided
    SUBSET = "subset"  # only a subset ran (-k, --lf, deselection): reported, not decided
    SHARD = "shard"  # one shard of a split suite: reported, decided by the gate command
    NOTHING_RAN = "nothing_ran"  # no conversation of a gated suite finished: nothing decided (never "passed")
    BASELINE_WRITTEN = "baseline_written"
    BASELINE_REFUSED = "baseline_refused"  # --ragdive-update-baseline from a run that cannot give one

    @property
    def fails(self) -> bool:
        return self in (GateStatus.FAILED, GateStatus.NO_DATA, GateStatus.BASELINE_REFUSED)


class RunInfo(BaseModel):
    """Where a run's numbers come from."""

    model_config = ConfigDict(extra="forbid")

    plugin_version: str = ""
    config_hash: str = ""
    backend: str = "offline"
    judge_models: dict[str, str] = Field(default_factory=dict)
    suites: list[str] = Field(default_factory=list)  # the selected suites
    planned: int = 0  # conversations planned (all runs)
    completed: bool = True  # False when the test loop was interrupted
    subset: bool = False  # a deselection or -k/--lf ran part of the plan
    shard: str | None = None  # "I/N" for one shard of a split run


class RunOutcome(BaseModel):
    """Everything the end of a run decided, and what it was decided on."""

    model_config = ConfigDict(extra="forbid")

    info: RunInfo
    status: GateStatus
    suites: dict[str, SuiteResult] = Field(default_factory=dict)
    gate: list[GateRow] | None = None  # None when nothing was gated
    conversations: list[Conversation] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    fatal: list[str] = Field(default_factory=list)
    not_run: list[str] = Field(default_factory=list)  # planned conversations (keys) an interrupted run did not finish
    baseline: Baseline | None = None  # the baseline to write (update runs)
    baseline_path: str | None = None  # where it was written, once written
    baseline_diff: BaselineDiff | None = None  # the update against the file it replaces (None: no file)
    recorded_answers: BaselineAnswers | None = None  # update runs: the answers file to write beside the baseline
    # failed gates: the baseline's answers of the conversations that pull a failed metric the wrong way ("suite::id")
    baseline_answers: dict[str, AnswerConversation] = Field(default_factory=dict)
    # gated runs against a baseline that kept its answers: a conversation's key (of this session's first run)
    # -> the turns (from 1) answered otherwise than in the baseline's recorded run
    answers_changed: dict[str, list[int]] = Field(default_factory=dict)
    llm: LLMStats | None = None
    judge_calls: JudgeCalls | None = None
    validation: dict[str, ValidationStats] = Field(default_factory=dict)  # generated suites
    diversity: dict[str, dict[str, float]] = Field(default_factory=dict)  # generated suites, by turn index
    custom_metrics: dict[str, CustomMetric] = Field(default_factory=dict)  # the run's metrics that are not built in

    @property
    def failed(self) -> bool:
        """The session fails (exit 1)."""
        return self.status.fails

    @property
    def errored(self) -> list[Conversation]:
        return [c for c in self.conversations if c.error]

    def regressions(self) -> list[GateRow]:
        return [r for r in self.gate or [] if r.failed]

    def improvements(self) -> list[GateRow]:
        return [r for r in self.gate or [] if r.verdict == "improvement"]


def rendering(fn: Callable[P, R]) -> Callable[P, R]:
    """A report renderer that reads the metrics of the outcome it is given: the running
    registry with the outcome's own metrics (``custom_metrics``) adopted, so that a report
    drawn outside the session that decided it (a script, ``ragdive report``) knows their
    direction and dimension."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        outcome = next((a for a in (*args, *kwargs.values()) if isinstance(a, RunOutcome)), None)
        if outcome is None or not outcome.custom_metrics:
            return fn(*args, **kwargs)
        from ..metrics.registry import active_registry

        with active_registry().adopted(cm.spec(n) for n, cm in outcome.custom_metrics.items()).active():
            return fn(*args, **kwargs)

    return wrapper
