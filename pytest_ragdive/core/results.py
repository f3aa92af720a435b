"""The records of a run's results: a suite's metrics (:class:`SuiteResult`,
:class:`MetricValue`) and the baseline file (:class:`Baseline`, one
:class:`BaselineMetric` per suite metric, with its band)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from ..sharded.records import ShardedReport
from .records import Direction, Record

if TYPE_CHECKING:
    from ..metrics.registry import MetricRegistry, MetricSpec


class CustomMetric(Record):
    """How a metric that is not built in (a team's own, a rubric judge) is aggregated and
    gated, as results.json and a baseline record it, so that a command reading them back
    (``ragdive gate``, ``ragdive report``, ``baseline show``) knows it without the conftest.py
    or module that computed it."""

    direction: Direction
    level: Literal["turn", "conversation"]
    dimension: Literal["retrieval", "grounding", "answer", "safety", "diagnosis"] = "answer"
    definition: str = ""
    kind: Literal["custom", "rubric"] = "custom"
    origin: str = ""

    @classmethod
    def of(cls, spec: MetricSpec) -> CustomMetric:
        assert spec.level != "suite" and spec.kind != "builtin"
        return cls(direction=spec.direction, level=spec.level, dimension=spec.dimension, definition=spec.definition,
                   kind=spec.kind, origin=spec.origin)

    def spec(self, name: str) -> MetricSpec:
        """The registry entry (without a function: it computes nothing, it aggregates and gates)."""
        from ..metrics.registry import MetricSpec

        return MetricSpec(name, self.direction, self.level, self.definition, self.dimension, kind=self.kind, origin=self.origin)


def custom_metrics(registry: MetricRegistry, names: set[str] | None = None) -> dict[str, CustomMetric]:
    """The records of a registry's metrics that are not built in (those in ``names`` only, when given)."""
    return {s.name: CustomMetric.of(s) for s in registry.custom() if s.level != "suite" and (names is None or s.name in names)}


class MetricValue(Record):
    """A suite-level metric: the value and how sure we are of it."""

    value: float | None
    n: int = 0
    ci_low: float | None = None
    ci_high: float | None = None
    per_run: list[float | None] = Field(default_factory=list)
    per_turn_index: dict[str, float | None] = Field(default_factory=dict)
    per_question_type: dict[str, float | None] = Field(default_factory=dict)


class SuiteResult(Record):
    """The metrics of one suite over all runs of this session."""

    suite: str
    runs: int = 1
    conversations: int = 0
    errors: int = 0
    metrics: dict[str, MetricValue] = Field(default_factory=dict)
    sharded: ShardedReport | None = None  # the sharded diagnosis' decomposition table
    notes: list[str] = Field(default_factory=list)  # what a run outside pytest would have printed (run_suite)

    @model_validator(mode="before")
    @classmethod
    def _old_meta(cls, data: Any) -> Any:
        """results.json files written before ``notes`` had a free-form ``meta``."""
        if isinstance(data, dict) and "meta" in data:
            data = dict(data)
            meta = data.pop("meta") or {}
            data.setdefault("notes", list(meta.get("notes", [])) if isinstance(meta, dict) else [])
        return data

    def value(self, metric: str) -> float | None:
        m = self.metrics.get(metric)
        return None if m is None else m.value


# a baseline number: finite, never a string or a bool (a NaN or a "0.5" would
# switch the gate off or compare as text)
BaselineFloat = Annotated[float, Field(strict=True, allow_inf_nan=False)]


BASELINE_FORMAT = 2  # 2: per-conversation values per gated metric; 1: bands only


BASELINE_FORMATS = (1, 2)


class BaselineMetric(Record):
    """One metric of one suite in a baseline: its spread over the recorded runs
    and (format 2) each conversation's value in each run."""

    mean: BaselineFloat
    std: BaselineFloat = Field(0.0, ge=0)
    min: BaselineFloat
    max: BaselineFloat
    runs: int = Field(1, ge=1, strict=True)
    direction: Direction = "higher"
    tolerance: BaselineFloat = Field(0.0, ge=0)
    # conversation id -> one [value, scored turns] per baseline run (run order);
    # [null, 0] where that run did not score it. Turn-level metrics: the mean
    # over the conversation's scored turns. None in format-1 files.
    conversations: dict[str, list[tuple[BaselineFloat | None, Annotated[int, Field(ge=0, strict=True)]]]] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> BaselineMetric:
        if self.min > self.max:
            raise ValueError(f"min {self.min!r} > max {self.max!r}")
        for cid, runs in (self.conversations or {}).items():
            if len(runs) != self.runs:
                raise ValueError(f"conversation {cid!r} has {len(runs)} run value(s), expected runs = {self.runs}")
        return self

    def band(self, tolerance: float | None = None) -> tuple[float, float]:
        """``[min - tolerance, max + tolerance]``: the band a current value is compared with
        (the one definition; ``tolerance`` defaults to the one stored with the metric)."""
        tol = self.tolerance if tolerance is None else tolerance
        return self.min - tol, self.max + tol


class GoldenFile(Record):
    """One golden data file as a baseline recorded it: its content hash and, per
    case id, a hash of the case (so a later run can say what was added, removed
    or changed)."""

    sha256: str
    cases: dict[str, str] = Field(default_factory=dict)


class AnswerTurn(Record):
    """One turn of a recorded conversation: the answer (clipped) and its gated metrics' values."""

    answer: str | None = None
    scores: dict[str, float | None] = Field(default_factory=dict)


class AnswerConversation(Record):
    """One conversation of the run a baseline kept the answers of."""

    run: int = 0
    turns: list[AnswerTurn] = Field(default_factory=list)
    scores: dict[str, float | None] = Field(default_factory=dict)  # per gated metric: the conversation's value
    flags: dict[str, list[str]] = Field(default_factory=dict)  # turn number (1-based) -> its flags ("forgetful")


class BaselineAnswers(Record):
    """The answers of one recorded run, per suite and conversation id: the sibling file a
    baseline names (gzip-compressed JSON, bounded: :mod:`pytest_ragdive.gate.answers`)."""

    format_version: int = 1
    run: int = 0
    suites: dict[str, dict[str, AnswerConversation]] = Field(default_factory=dict)
    left_out: int = 0  # conversations not kept (the file's bound)


class AnswersRef(Record):
    """Where a baseline keeps the answers of one of its runs."""

    file: str  # relative to the baseline file's folder
    sha256: str  # of the compressed file
    run: int = 0
    conversations: int = 0


class Baseline(Record):
    """The file that ``--ragdive-baseline`` reads and ``--ragdive-update-baseline`` writes."""

    format_version: int = Field(1, strict=True)
    plugin_version: str = ""
    config_hash: str = ""
    backend: str = "offline"
    judge_models: dict[str, str] = Field(default_factory=dict)
    created: str = ""
    suites: dict[str, dict[str, BaselineMetric]] = Field(default_factory=dict)

    @field_validator("format_version")
    @classmethod
    def _known_format(cls, v: int) -> int:
        if v not in BASELINE_FORMATS:
            raise ValueError(
                f"unknown format_version {v} (this pytest-ragdive reads {', '.join(map(str, BASELINE_FORMATS))}: "
                "upgrade it, or re-record the baseline)"
            )
        return v
    # per suite, per golden file (as the config names it): what the baseline was recorded on
    golden: dict[str, dict[str, GoldenFile]] = Field(default_factory=dict)
    # the metrics it holds that are not built in (a team's own, rubric judges); left out of the file when none
    custom_metrics: dict[str, CustomMetric] = Field(default_factory=dict)
    answers: AnswersRef | None = None  # the answers of one recorded run (a sibling file)
