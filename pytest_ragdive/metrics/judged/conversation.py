"""The entry point of the builtin judges: every answered turn and the whole
conversation of one :class:`~pytest_ragdive.records.Conversation`, judged
concurrently, scores and verdicts written back."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...prompts import fence
from ...records import Conversation, Document, JudgeCalls, Turn, Verdict
from .cascade import JudgeFactory, JudgeFn, cascade, judge_models, prompt_judge
from .inputs import contexts_block, reference_text, transcript
from .scoring import CONVERSATION_METRICS, TURN_METRICS

if TYPE_CHECKING:
    from ...config import RagdiveConfig
    from ...llm import LLMClient

__all__ = ["judge_conversation"]


def _not_applicable(reason: str) -> Verdict:
    return Verdict(value=None, reason=f"not applicable: {reason}", model=None)


# --------------------------------------------------------------------------
# the entry point


async def judge_conversation(
    conv: Conversation,
    client: LLMClient,
    cfg: RagdiveConfig,
    documents: Mapping[str, Document],
    *,
    backend_judges: Mapping[str, JudgeFactory] | None = None,
) -> None:
    """Judge every answered turn and the conversation; write scores, verdicts and call counts.

    Turn-level metrics go to ``turn.scores``/``turn.verdicts`` (overwriting
    offline values), their means over turns to ``conv.scores``; forgetfulness
    and context_retention to ``conv.scores``/``conv.verdicts``; the call counts
    to ``conv.judge_calls``. ``backend_judges`` (metric -> factory) judges those
turn-level metrics with another backend (ragas) instead of our prompts; this
function never looks at ``cfg.judge_backend`` (:mod:`..backends` decides).
    A client error (LLMError) is raised once every other call has finished and
    its result is written.
    """
    models = judge_models(cfg)
    calls = JudgeCalls()
    backend_judges = backend_judges or {}
    answered = [t for t in conv.turns if t.answer is not None]

    targets: list[tuple[Turn | None, str]] = []
    judges: list[JudgeFn] = []
    for turn in answered:
        for metric, judge in _turn_judges(conv, turn, client, documents, calls, backend_judges).items():
            if isinstance(judge, Verdict):
                turn.scores[metric] = judge.value
                turn.verdicts[metric] = judge
            else:
                targets.append((turn, metric))
                judges.append(judge)
    if len(answered) >= 2:
        values = {"transcript": transcript(answered)}
        for metric in CONVERSATION_METRICS:
            targets.append((None, metric))
            judges.append(prompt_judge(client, metric, values, 0, "conversation", calls))
    else:
        for metric in CONVERSATION_METRICS:
            conv.scores[metric] = None
            conv.verdicts[metric] = _not_applicable("fewer than 2 answered turns")

    results = await asyncio.gather(
        *(cascade(metric, judge, models, calls) for (_, metric), judge in zip(targets, judges, strict=True)),
        return_exceptions=True,
    )
    error: BaseException | None = None
    for (target, metric), res in zip(targets, results, strict=True):
        if isinstance(res, BaseException):
            error = error or res
            continue
        if target is None:
            conv.scores[metric] = res.value
            conv.verdicts[metric] = res
        else:
            target.scores[metric] = res.value
            target.verdicts[metric] = res

    for metric in TURN_METRICS:
        present = [v for v in (t.scores.get(metric) for t in answered) if v is not None]
        conv.scores[metric] = sum(present) / len(present) if present else None
    conv.judge_calls = calls
    if error is not None:
        raise error


def _turn_judges(
    conv: Conversation,
    turn: Turn,
    client: LLMClient,
    documents: Mapping[str, Document],
    calls: JudgeCalls,
    backend_judges: Mapping[str, JudgeFactory],
) -> dict[str, JudgeFn | Verdict]:
    """One judge per turn-level metric, or a not-applicable verdict where the inputs are missing."""
    out: dict[str, JudgeFn | Verdict] = {}
    contexts = list(turn.contexts)
    n = len(contexts)
    question = fence(turn.question, "question")
    answer = fence(turn.answer or "", "answer")
    ground_truth = turn.ground_truth.strip()
    ctx_block = contexts_block(contexts)

    def make(metric: str, values: dict[str, Any]) -> JudgeFn:
        factory = backend_judges.get(metric)
        if factory is not None:
            return factory(client, metric, turn, calls)
        return prompt_judge(client, metric, values, n, "turn", calls)

    if n:
        out["faithfulness"] = make(
            "faithfulness", {"question": question, "answer": answer, "contexts": ctx_block, "n_contexts": n}
        )
    else:
        out["faithfulness"] = _not_applicable("no retrieved contexts")
    if n and ground_truth:
        gt = fence(ground_truth, "ground truth")
        common = {"question": question, "ground_truth": gt, "contexts": ctx_block, "n_contexts": n}
        out["context_precision"] = make("context_precision", common)
        out["context_recall"] = make("context_recall", common)
    else:
        why = "no retrieved contexts" if not n else "no ground truth"
        out["context_precision"] = _not_applicable(why)
        out["context_recall"] = _not_applicable(why)
    reference = reference_text(conv, turn, documents)
    if ground_truth or reference:
        out["correctness"] = make(
            "correctness",
            {
                "question": question,
                "answer": answer,
                "ground_truth": fence(ground_truth, "ground truth") if ground_truth else "(none given)",
                "reference": fence(reference, "document") if reference else "(none available)",
            },
        )
    else:
        out["correctness"] = _not_applicable("no ground truth and no reference document")
    return out
