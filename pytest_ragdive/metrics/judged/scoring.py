"""From a judge's verdicts to a score and a reason, per metric (:data:`SPECS`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ...core.errors import InvalidJudgment
from ...core.stats import mean
from .schemas import (
    AnswerRelevanceJudgment,
    ContextPrecisionJudgment,
    ContextRecallJudgment,
    ContextRetentionJudgment,
    CorrectnessJudgment,
    FaithfulnessJudgment,
    ForgetfulnessJudgment,
)

__all__ = [
    "CONVERSATION_METRICS",
    "JUDGED_METRICS",
    "SPECS",
    "TURN_METRICS",
    "Spec",
    "average_precision",
    "clip",
]

TURN_METRICS: tuple[str, ...] = ("faithfulness", "context_precision", "context_recall", "correctness")
CONVERSATION_METRICS: tuple[str, ...] = ("forgetfulness", "context_retention")
JUDGED_METRICS: tuple[str, ...] = TURN_METRICS + CONVERSATION_METRICS
_MAX_REASON_CHARS = 1_500


def _yes(b: bool) -> str:
    return "yes" if b else "no"


def average_precision(relevant: Sequence[bool]) -> float:
    """Rank-aware precision of binary relevance verdicts in rank order.

    AP = sum over the relevant ranks k of precision@k, divided by the number
    of relevant contexts; 0 when none is relevant. ``[yes, no, yes]`` gives
    ``(1/1 + 2/3) / 2 = 0.8333``.
    """
    hits = 0
    total = 0.0
    for k, rel in enumerate(relevant, start=1):
        if rel:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def clip(text: str, limit: int = _MAX_REASON_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _failing(items: Iterable[tuple[bool, str, str]]) -> str:
    """'"claim" (reason); ...' for the items whose verdict is no."""
    parts = [f'"{clip(what, 200)}"' + (f" ({clip(why, 200)})" if why else "") for ok, what, why in items if not ok]
    return "; ".join(parts)


def _score_faithfulness(j: FaithfulnessJudgment, n_contexts: int) -> tuple[float | None, str]:
    flags = [c.supported for c in j.claims]
    if not flags:
        return None, "no factual claims in the answer"
    reason = f"{sum(flags)}/{len(flags)} answer claims supported by the contexts"
    bad = _failing((c.supported, c.claim, c.reason) for c in j.claims)
    return mean(flags), reason + (f"; unsupported: {bad}" if bad else "")


def _score_context_precision(j: ContextPrecisionJudgment, n_contexts: int) -> tuple[float | None, str]:
    verdicts = list(j.verdicts)
    numbers = [v.context for v in verdicts]
    if len(verdicts) == n_contexts and sorted(n for n in numbers if n is not None) == list(range(1, n_contexts + 1)):
        verdicts.sort(key=lambda v: v.context or 0)  # numbered 1..n: use the numbers
    elif len(verdicts) != n_contexts:
        raise InvalidJudgment(f"expected {n_contexts} context verdicts, got {len(verdicts)}")
    flags = [v.relevant for v in verdicts]
    reason = f"relevant by rank: [{', '.join(_yes(f) for f in flags)}]"
    bad = "; ".join(
        f"context {i} ({clip(v.reason, 200)})" if v.reason else f"context {i}"
        for i, v in enumerate(verdicts, start=1)
        if not v.relevant
    )
    return average_precision(flags), reason + (f"; not relevant: {bad}" if bad else "")


def _score_context_recall(j: ContextRecallJudgment, n_contexts: int) -> tuple[float | None, str]:
    flags = [s.attributed for s in j.statements]
    if not flags:
        return None, "no statements in the ground truth"
    reason = f"{sum(flags)}/{len(flags)} ground-truth statements attributable to the contexts"
    bad = _failing((s.attributed, s.statement, s.reason) for s in j.statements)
    return mean(flags), reason + (f"; not attributable: {bad}" if bad else "")


def _score_correctness(j: CorrectnessJudgment, n_contexts: int) -> tuple[float | None, str]:
    return float(j.correct), ("correct" if j.correct else "not correct") + (f": {j.reason}" if j.reason else "")


def _score_answer_relevance(j: AnswerRelevanceJudgment, n_contexts: int) -> tuple[float | None, str]:
    checks = [
        (j.addresses_question, "does not address the question"),
        (not j.missing_essential, "misses essential information"),
        (not j.padding, "carries needless padding"),
    ]
    failed = [why for ok, why in checks if not ok]
    head = f"{3 - len(failed)}/3 relevance checks passed" + (f" ({'; '.join(failed)})" if failed else "")
    return sum(ok for ok, _ in checks) / 3, head + (f": {clip(j.reason)}" if j.reason else "")


def _score_forgetfulness(j: ForgetfulnessJudgment, n_contexts: int) -> tuple[float | None, str]:
    head = "forgetful" if j.forgetful else "not forgetful"
    if j.forgetful and j.turns:
        head += f" (turns {', '.join(str(t) for t in j.turns)})"
    return float(j.forgetful), head + (f": {j.reason}" if j.reason else "")


def _score_context_retention(j: ContextRetentionJudgment, n_contexts: int) -> tuple[float | None, str]:
    head = "context retained" if j.retained else "context not retained"
    return float(j.retained), head + (f": {j.reason}" if j.reason else "")


@dataclass(frozen=True)
class Spec:
    schema: type[BaseModel]
    score: Callable[[Any, int], tuple[float | None, str]]


SPECS: dict[str, Spec] = {
    "faithfulness": Spec(FaithfulnessJudgment, _score_faithfulness),
    "context_precision": Spec(ContextPrecisionJudgment, _score_context_precision),
    "context_recall": Spec(ContextRecallJudgment, _score_context_recall),
    "correctness": Spec(CorrectnessJudgment, _score_correctness),
    "answer_relevance": Spec(AnswerRelevanceJudgment, _score_answer_relevance),
    "forgetfulness": Spec(ForgetfulnessJudgment, _score_forgetfulness),
    "context_retention": Spec(ContextRetentionJudgment, _score_context_retention),
}
