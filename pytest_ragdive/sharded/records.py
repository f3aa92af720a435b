"""The sharded diagnosis' records: per-turn and per-conversation data, the decomposition table.

Referenced by the records of :mod:`pytest_ragdive.core.records` (``Turn.sharded``, ``Conversation.sharded``)
and :mod:`pytest_ragdive.core.results` (``SuiteResult.sharded``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Condition", "ConditionStats", "QuestionEstimate", "ResponseClass", "ShardedInfo", "ShardedReport", "ShardedTurn"]

# the conditions and the response classes of Lost in Conversation
Condition = Literal["full", "concat", "sharded", "recap", "snowball"]
ResponseClass = Literal[
    "answer_attempt", "clarification", "interrogation", "discussion", "hedge", "refusal", "missing"
]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ShardedTurn(_Record):
    """What the sharded diagnosis records on one turn.

    ``shard_ids``: every shard the user message states (CONCAT, SNOWBALL and RECAP
    restate several; an answer to a clarification question may state none);
    ``new_shard``: the shard first revealed by this message. The rest describes the
    chatbot's reply: its response class (``class_source`` rule or llm), the answer
    extracted from it and that answer's scores (answer attempts only), and which
    supporting documents its contexts held."""

    shard_ids: list[int] = Field(default_factory=list)
    new_shard: int | None = None
    response_class: ResponseClass | None = None
    class_source: Literal["rule", "llm"] = "rule"
    extracted_answer: str | None = None
    answer_f1: float | None = None
    exact_match: float | None = None
    judged_correct: float | None = None
    retrieved_supporting: list[str] = Field(default_factory=list)


class ShardedInfo(_Record):
    """The sharded-diagnosis identity and outcome of one conversation (one condition of one question)."""

    question_id: str
    condition: Condition
    supporting_doc_ids: list[str] = Field(default_factory=list)
    shards_total: int = 0
    stop_reason: Literal["correct", "all_shards", "max_turns", "single_turn"] | None = None
    best_f1: float = 0.0
    best_em: float = 0.0
    best_judged: float | None = None


class QuestionEstimate(_Record):
    """A statistic with its paired bootstrap 95% interval (None with fewer than two questions)."""

    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    questions: int = 0
    pairs: int = 0


class ConditionStats(_Record):
    """One condition of the sharded diagnosis over all questions and runs."""

    condition: Condition
    conversations: int = 0
    questions: int = 0
    mean_best: float | None = None  # mean BEST answer F1 over conversations
    mean_best_em: float | None = None
    mean_best_judged: float | None = None  # the semantic-correctness judge's BEST, when run
    aptitude: QuestionEstimate | None = None  # mean over questions of the 90th percentile over runs
    unreliability: QuestionEstimate | None = None  # mean over questions of p90 - p10 over runs
    answer_attempt_rate: float | None = None  # share of turns classified answer_attempt
    classes: dict[str, int] = Field(default_factory=dict)  # response class -> turns
    recall_final: float | None = None  # supporting-document recall at the last turn
    recall_cumulative: float | None = None  # over the union of every turn's contexts
    recall_per_turn: dict[str, float | None] = Field(default_factory=dict)  # "1", "2"...


class ShardedReport(_Record):
    """The decomposition table of one suite's sharded diagnosis."""

    suite: str
    runs: int = 0
    conditions: dict[str, ConditionStats] = Field(default_factory=dict)
    gap: QuestionEstimate | None = None  # FULL - SHARDED, mean BEST F1
    gap_per_run: list[float | None] = Field(default_factory=list)  # the gap within each run, by run
    wording: QuestionEstimate | None = None  # FULL - CONCAT
    delivery: QuestionEstimate | None = None  # CONCAT - SHARDED
    recovery: dict[str, QuestionEstimate] = Field(default_factory=dict)  # recap/snowball: share of the gap won back
    gap_full_coverage: QuestionEstimate | None = None  # FULL - SHARDED over pairs that retrieved every supporting doc
    gap_judged: QuestionEstimate | None = None  # FULL - SHARDED on the correctness judge's BEST (when it ran on every pair)
    full_coverage_share: float | None = None  # share of FULL/SHARDED pairs in that subset
