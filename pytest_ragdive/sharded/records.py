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
    ``new_shard``: the shard first revealed by this message; ``utterance``: the user's own
    words on this turn (without what SNOWBALL restates before them); ``recap``: RECAP's
    final turn, which restates every shard. The rest describes the
    chatbot's reply: its response class (``class_source`` rule or llm), the answer
    extracted from it and that answer's scores (answer attempts only), and which
    supporting documents its contexts held."""

    shard_ids: list[int] = Field(default_factory=list)
    new_shard: int | None = None
    utterance: str | None = None
    recap: bool = False
    response_class: ResponseClass | None = None
    class_source: Literal["rule", "llm"] = "rule"
    extracted_answer: str | None = None
    answer_f1: float | None = None
    exact_match: float | None = None
    judged_correct: float | None = None
    retrieved_supporting: list[str] = Field(default_factory=list)


class ShardedInfo(_Record):
    """The sharded-diagnosis identity and outcome of one conversation (one condition of one question).

    ``best_*``: BEST, the maximum over the conversation's answer attempts (0 without any);
    ``final_*``: the score of the last answered turn (0 when it is not an answer attempt;
    None before any turn is answered). A condition's defined score is BEST, except RECAP's:
    its recap turn, the final one (:attr:`score_f1`)."""

    question_id: str
    condition: Condition
    supporting_doc_ids: list[str] = Field(default_factory=list)
    shards_total: int = 0
    stop_reason: Literal["correct", "all_shards", "max_turns", "single_turn"] | None = None
    best_f1: float = 0.0
    best_em: float = 0.0
    best_judged: float | None = None
    final_f1: float | None = None
    final_em: float | None = None
    final_judged: float | None = None

    @property
    def score_f1(self) -> float:
        """The condition's defined answer-F1 score: RECAP's recap turn, else BEST."""
        return (self.final_f1 or 0.0) if self.condition == "recap" else self.best_f1

    @property
    def score_judged(self) -> float | None:
        """The correctness judge's score on the same definition (None where it did not judge)."""
        return self.final_judged if self.condition == "recap" else self.best_judged


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
    mean_score: float | None = None  # mean of the condition's defined score (RECAP: its recap turn; else BEST)
    mean_score_judged: float | None = None  # the same on the correctness judge, when run
    mean_best: float | None = None  # mean BEST answer F1 over conversations (RECAP: a second figure)
    mean_best_em: float | None = None
    mean_best_judged: float | None = None  # the semantic-correctness judge's BEST, when run
    aptitude: QuestionEstimate | None = None  # of the defined score: mean over questions of the p90 over runs
    unreliability: QuestionEstimate | None = None  # of the defined score: mean over questions of p90 - p10
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
    # recap/snowball: share of the gap won back, on the defined score (RECAP: its recap turn)
    recovery: dict[str, QuestionEstimate] = Field(default_factory=dict)
    recovery_best: dict[str, QuestionEstimate] = Field(default_factory=dict)  # RECAP on BEST over the conversation
    concat_preservation: QuestionEstimate | None = None  # CONCAT / FULL (the source's criterion: at least 80%)
    gap_full_coverage: QuestionEstimate | None = None  # FULL - SHARDED over pairs that retrieved every supporting doc
    gap_judged: QuestionEstimate | None = None  # FULL - SHARDED on the correctness judge's BEST (when it ran on every pair)
    # the judge robustness check: F1 gap minus judged gap (paired CI), and the Pearson correlation of the
    # two gaps over questions (each question's mean over its runs)
    judge_gap_difference: QuestionEstimate | None = None
    judge_gap_correlation: float | None = None
    full_coverage_share: float | None = None  # share of FULL/SHARDED pairs in that subset
