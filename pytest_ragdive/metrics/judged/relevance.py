"""``answer_relevance``, the second judge of the quality-gate practice: does the answer
address the question, is essential information missing, is there needless padding.

One call per turn (prompt ``judge_answer_relevance``, three binary verdicts, cached and
cascaded like every judge); score = share of the three checks passed. Not in the default
set of :func:`.conversation.judge_conversation` (it adds one call per answered turn): a run
asks for it by name, ``judged_metrics = ["faithfulness", "context_precision",
"context_recall", "correctness", "answer_relevance", "forgetfulness", "context_retention"]``;
:func:`judge_answer_relevance` judges one turn on its own. Offline the metric is not
applicable (None): no deterministic proxy tracked people's ratings better than the
shipped ones (``benchmarks/bench_human_agreement.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.records import JudgeCalls, Turn, Verdict
from ...llm.prompts import fence
from .cascade import cascade, judge_models, prompt_judge

if TYPE_CHECKING:
    from ...core.config import RagdiveConfig
    from ...llm import LLMClient

__all__ = ["judge_answer_relevance"]


async def judge_answer_relevance(turn: Turn, client: LLMClient, cfg: RagdiveConfig) -> Verdict:
    """Judge ``answer_relevance`` for one answered turn and record it on the turn
    (``turn.scores`` and ``turn.verdicts``)."""
    calls = JudgeCalls()
    values = {"question": fence(turn.question, "question"), "answer": fence(turn.answer or "", "answer")}
    judge = prompt_judge(client, "answer_relevance", values, len(turn.contexts), "turn", calls)
    verdict = await cascade("answer_relevance", judge, judge_models(cfg), calls)
    turn.scores["answer_relevance"] = verdict.value
    turn.verdicts["answer_relevance"] = verdict
    return verdict
