"""What each judge prompt asks for: the pydantic schemas of the judges' replies."""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = [
    "AnswerRelevanceJudgment",
    "ClaimVerdict",
    "ContextPrecisionJudgment",
    "ContextRecallJudgment",
    "ContextRetentionJudgment",
    "ContextVerdict",
    "CorrectnessJudgment",
    "FaithfulnessJudgment",
    "ForgetfulnessJudgment",
    "RubricGrade",
    "RubricVerdict",
    "StatementVerdict",
]


class ClaimVerdict(BaseModel):
    claim: str = ""
    supported: bool
    reason: str = ""


class FaithfulnessJudgment(BaseModel):
    claims: list[ClaimVerdict] = Field(default_factory=list)


class ContextVerdict(BaseModel):
    context: int | None = None
    relevant: bool
    reason: str = ""


class ContextPrecisionJudgment(BaseModel):
    verdicts: list[ContextVerdict]


class StatementVerdict(BaseModel):
    statement: str = ""
    attributed: bool
    reason: str = ""


class ContextRecallJudgment(BaseModel):
    statements: list[StatementVerdict] = Field(default_factory=list)


class CorrectnessJudgment(BaseModel):
    correct: bool
    reason: str = ""


class AnswerRelevanceJudgment(BaseModel):
    addresses_question: bool
    missing_essential: bool
    padding: bool
    reason: str = ""


class ForgetfulnessJudgment(BaseModel):
    forgetful: bool
    turns: list[int] = Field(default_factory=list)
    reason: str = ""


class ContextRetentionJudgment(BaseModel):
    retained: bool
    reason: str = ""


class RubricVerdict(BaseModel):
    """A binary rubric judge (``scale = "binary"``) and a ``rubric`` assertion."""

    met: bool
    reason: str = ""


class RubricGrade(BaseModel):
    """A graded rubric judge (``scale = "1-5"``)."""

    grade: int = Field(ge=1, le=5)
    reason: str = ""
