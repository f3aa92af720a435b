"""The records of a run's results: a suite's metrics (:class:`SuiteResult`,
:class:`MetricValue`) and the baseline file (:class:`Baseline`, one
:class:`BaselineMetric` per suite metric, with its band)."""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, GetCoreSchemaHandler, field_validator, model_validator
from pydantic_core import core_schema

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


MAX_TURN = 10_000  # the largest turn index a baseline's eligible turns may name
BASELINE_FORMAT = 2  # 2: per-conversation values per gated metric; 1: bands only


BASELINE_FORMATS = (1, 2)


RunValue = tuple[float | None, int]  # one run's value of a conversation (None where it did not score it) and its scored turns


class RunValues(Mapping[str, list[RunValue]]):
    """A baseline metric's per-conversation values, held compactly: the conversation ids
    (sorted) and two flat arrays of ``len(ids) x runs`` cells, run order within each
    conversation: ``numbers``, the value (NaN where that run did not score it), and ``counts``, the scored
    turns (0 there). About 12 bytes a cell against some 200 as records of tuples. Reads as the
    file's mapping ``id -> [(value or None, turns), ...]`` (the file format is unchanged)."""

    __slots__ = ("counts", "ids", "numbers", "runs")

    def __init__(self, ids: Sequence[str], runs: int, numbers: array[float], counts: array[int]) -> None:
        self.ids = tuple(ids)
        self.runs = runs
        self.numbers = numbers  # the values (a Mapping has a method named values)
        self.counts = counts

    @classmethod
    def from_mapping(cls, data: Mapping[str, Sequence[RunValue]]) -> RunValues:
        """From ``id -> one (value or None, turns) per run``; every conversation has as many runs."""
        ids = sorted(data)
        rows = [data[cid] for cid in ids]
        runs = len(rows[0]) if rows else 0
        for cid, row in zip(ids, rows, strict=True):
            if len(row) != runs:
                raise ValueError(f"conversation {cid!r} has {len(row)} run value(s), conversation {ids[0]!r} {runs}")
        nan = math.nan
        numbers = array("d", [nan if v is None else v for row in rows for v, _ in row])
        counts = array("i", [n for row in rows for _, n in row])
        return cls(ids, runs, numbers, counts)

    def row(self, i: int) -> list[RunValue]:
        """The ``i``-th conversation's runs."""
        r = self.runs
        return [(None if math.isnan(v) else v, n)
                for v, n in zip(self.numbers[i * r:(i + 1) * r], self.counts[i * r:(i + 1) * r], strict=True)]

    def __getitem__(self, cid: str) -> list[RunValue]:
        i = bisect_left(self.ids, cid)
        if i == len(self.ids) or self.ids[i] != cid:
            raise KeyError(cid)
        return self.row(i)

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RunValues):
            return (self.ids, self.runs, self.counts) == (other.ids, other.runs, other.counts) and (
                self.numbers.tobytes() == other.numbers.tobytes())
        return super().__eq__(other)  # a mapping of the file's form

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RunValues({len(self.ids)} conversation(s) x {self.runs} run(s))"

    def as_dict(self) -> dict[str, list[RunValue]]:
        """The file's form."""
        return {cid: self.row(i) for i, cid in enumerate(self.ids)}

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        # validated in the file's form (each error names its conversation and run), then compacted
        form = handler.generate_schema(dict[str, list[tuple[BaselineFloat | None, Annotated[int, Field(ge=0, strict=True)]]]])

        def compact(value: Any, validate: core_schema.ValidatorFunctionWrapHandler) -> RunValues:
            return value if isinstance(value, RunValues) else cls.from_mapping(validate(value))

        return core_schema.no_info_wrap_validator_function(
            compact, form, serialization=core_schema.plain_serializer_function_ser_schema(lambda v: v.as_dict()),
        )


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
    # Held compactly (:class:`RunValues`).
    conversations: RunValues | None = None
    # the forgetfulness probe's metrics: conversation id -> one list per baseline run of the
    # turns (0-based) the value was taken over (answered correctly stand-alone); left out of
    # the file elsewhere, None in files recorded before (:mod:`pytest_ragdive.gate.comparable`)
    eligible: dict[str, list[list[Annotated[int, Field(ge=0, le=MAX_TURN, strict=True)]]]] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> BaselineMetric:
        if self.min > self.max:
            raise ValueError(f"min {self.min!r} > max {self.max!r}")
        cv = self.conversations
        if cv and cv.runs != self.runs:
            raise ValueError(f"conversation {cv.ids[0]!r} has {cv.runs} run value(s), expected runs = {self.runs}")
        for cid, runs in (self.eligible or {}).items():
            if len(runs) != self.runs:
                raise ValueError(f"eligible turns of conversation {cid!r}: {len(runs)} run(s), expected runs = {self.runs}")
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

    @model_validator(mode="after")
    def _ids_once(self) -> Baseline:
        """The metrics of a suite mostly pair the same conversations: they share one tuple of ids."""
        for metrics in self.suites.values():
            seen: list[tuple[str, ...]] = []
            for bm in metrics.values():
                cv = bm.conversations
                if cv:
                    cv.ids = next((ids for ids in seen if ids == cv.ids), cv.ids)
                    if not any(ids is cv.ids for ids in seen):
                        seen.append(cv.ids)
        return self
