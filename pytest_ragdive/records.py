"""The pydantic records that every step of the pipeline reads and writes.

A record survives a JSON round trip unchanged (``Model.model_validate_json(
m.model_dump_json()) == m``); that is what travels between xdist workers and
what ``results.json`` holds.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

QuestionType = Literal[
    "Initial", "Follow-up", "Clarification", "Correction", "Comparative", "Single"
]
Direction = Literal["higher", "lower"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Document(_Record):
    """One document of the knowledge base."""

    id: str
    title: str = ""
    text: str


class Message(_Record):
    """One chat message, OpenAI style."""

    role: Literal["system", "user", "assistant"]
    content: str


class Context(_Record):
    """One retrieved context (a chunk), ranked as the target returned it.

    ``doc_id`` names the source document; retrieval metrics compare it with a
    turn's ``relevant_doc_ids``. When the target does not chunk, leave it empty
    and ``id`` is used.
    """

    id: str
    text: str
    doc_id: str | None = None
    score: float | None = None

    @property
    def source_id(self) -> str:
        return self.doc_id or self.id


class TargetResponse(_Record):
    """What the chatbot under test returns for one user message."""

    answer: str
    contexts: list[Context] = Field(default_factory=list)
    citations: list[str] = Field(default_factory=list)


class Verdict(_Record):
    """One judged (or rule-based) decision with the reason behind it."""

    value: float | None
    reason: str = ""
    model: str | None = None


class Turn(_Record):
    """One user turn and, once run, the target's answer and the turn's scores."""

    index: int = 0
    rag_input: str
    standalone_question: str = ""
    ground_truth: str = ""
    question_type: QuestionType = "Initial"
    relevant_doc_ids: list[str] = Field(default_factory=list)
    expected_citations: list[str] = Field(default_factory=list)
    negative_assertions: list[str] = Field(default_factory=list)
    # filled by the runner
    answer: str | None = None
    contexts: list[Context] = Field(default_factory=list)
    citations: list[str] = Field(default_factory=list)
    standalone_answer: str | None = None
    standalone_contexts: list[Context] = Field(default_factory=list)
    latency_s: float | None = None
    scores: dict[str, float | None] = Field(default_factory=dict)
    verdicts: dict[str, Verdict] = Field(default_factory=dict)
    flags: list[str] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)

    @property
    def question(self) -> str:
        return self.standalone_question or self.rag_input


class Conversation(_Record):
    """One conversation of one suite in one run, with its scores once scored."""

    id: str
    suite: str = "core"
    run: int = 0
    role: str | None = None
    source: str = "golden"
    document_id: str | None = None
    category: str | None = None
    difficulty: str | None = None
    turns: list[Turn] = Field(default_factory=list)
    scores: dict[str, float | None] = Field(default_factory=dict)
    verdicts: dict[str, Verdict] = Field(default_factory=dict)
    error: str | None = None
    failures: list[str] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.suite}::{self.id}::run{self.run}"


class MetricValue(_Record):
    """A suite-level metric: the value and how sure we are of it."""

    value: float | None
    n: int = 0
    ci_low: float | None = None
    ci_high: float | None = None
    per_run: list[float | None] = Field(default_factory=list)
    per_turn_index: dict[str, float | None] = Field(default_factory=dict)
    per_question_type: dict[str, float | None] = Field(default_factory=dict)


class SuiteResult(_Record):
    """The metrics of one suite over all runs of this session."""

    suite: str
    runs: int = 1
    conversations: int = 0
    errors: int = 0
    metrics: dict[str, MetricValue] = Field(default_factory=dict)
    meta: dict[str, Any] = Field(default_factory=dict)

    def value(self, metric: str) -> float | None:
        m = self.metrics.get(metric)
        return None if m is None else m.value


class BaselineMetric(_Record):
    """One metric of one suite in a baseline: its spread over the recorded runs."""

    mean: float
    std: float = 0.0
    min: float
    max: float
    runs: int = 1
    direction: Direction = "higher"
    tolerance: float = 0.0


class Baseline(_Record):
    """The file that ``--ragdive-baseline`` reads and ``--ragdive-update-baseline`` writes."""

    format_version: int = 1
    plugin_version: str = ""
    config_hash: str = ""
    backend: str = "offline"
    judge_models: dict[str, str] = Field(default_factory=dict)
    created: str = ""
    suites: dict[str, dict[str, BaselineMetric]] = Field(default_factory=dict)
