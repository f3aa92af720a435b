"""LLM-judged metrics: the RAG-DIVE Conversation Evaluator.

Single-turn (per answered turn, from the stand-alone question, the answer, the
retrieved contexts, the ground truth and the reference document):

``faithfulness``
    one call; the judge splits the answer into claims and gives each a binary
    "supported by the retrieved contexts?" verdict; score = share supported.
``context_precision``
    one call for *all* retrieved contexts; the judge gives one binary
    "relevant?" verdict per context, in rank order; score = rank-aware
    average precision of those verdicts (:func:`average_precision`).
``context_recall``
    one call; one binary "attributable to the contexts?" verdict per
    ground-truth statement; score = share attributable.
``correctness``
    one call; one binary "is the answer correct?" verdict against the ground
    truth and the reference document (the RAG-DIVE custom metric).

``answer_relevance`` (:mod:`.relevance`; not in the default set: ``judged_metrics`` names it)
    one call; three binary verdicts: addresses the question, misses nothing
    essential, no needless padding; score = share of the checks passed.

Multi-turn (per conversation with at least two answered turns, from the
``rag_input``/``answer`` transcript): ``forgetfulness`` (1 = the assistant lost
information from earlier turns; lower is better) and ``context_retention``
(1 = it kept and used it), one binary verdict each.

So with the built-in prompts a conversation costs at most 4 judge calls per
answered turn plus 2 (every call of one conversation runs concurrently; in a
run, a turn's calls start as soon as it is answered, beside the conversation's
later turns: :class:`ConversationJudge`). With
``judge_cascade = [cheap, strong]`` every item is judged by ``cheap`` and only
negative (score below the best value) or unparseable verdicts are judged again
by ``strong``, whose verdict then stands. ``conv.judge_calls`` counts
the calls (:class:`~pytest_ragdive.records.JudgeCalls`).

With ``judge_backend = "ragas"`` faithfulness, context_precision and
context_recall come from ragas' own metrics (:mod:`..ragas_backend`, which
passes its judges in as ``backend_judges``; this package never imports it),
through our client; correctness and the multi-turn metrics still use our
prompts. :mod:`pytest_ragdive.metrics.backends` (``conversation_judge``,
``judge_conversation``) is the one place that picks the backend from the config.

Every untrusted text (documents, contexts, answers, questions, ground truths,
transcripts) is put into a prompt through :func:`~pytest_ragdive.llm.prompts.fence`
and the system prompt says that fenced text is data (``FENCE_NOTE``).
An invalid judge output gives the metric None for that item, with the reason
``"invalid judge output: ..."``; client errors (cache miss in replay mode,
budget exceeded, a call that failed after its retries) propagate.

Modules: :mod:`.schemas` (what each prompt asks for), :mod:`.scoring` (verdicts
to scores), :mod:`.cascade` (one judged item, the cascade), :mod:`.inputs`
(contexts, reference document, transcript), :mod:`.conversation` (the entry
point, :class:`ConversationJudge`), :mod:`.relevance` (answer_relevance).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...core.errors import InvalidJudgment
from ...core.records import Conversation, JudgeCalls
from .cascade import ROLE, JudgeFactory, JudgeFn, Outcome, judge_models
from .conversation import ConversationJudge, judge_conversation
from .inputs import MAX_REFERENCE_CHARS, reference_text, transcript
from .relevance import judge_answer_relevance
from .schemas import (
    AnswerRelevanceJudgment,
    ClaimVerdict,
    ContextPrecisionJudgment,
    ContextRecallJudgment,
    ContextRetentionJudgment,
    ContextVerdict,
    CorrectnessJudgment,
    FaithfulnessJudgment,
    ForgetfulnessJudgment,
    StatementVerdict,
)
from .scoring import CONVERSATION_METRICS, JUDGED_METRICS, TURN_METRICS, average_precision

__all__ = [
    "CONVERSATION_METRICS",
    "JUDGED_METRICS",
    "MAX_REFERENCE_CHARS",
    "ROLE",
    "TURN_METRICS",
    "AnswerRelevanceJudgment",
    "ClaimVerdict",
    "ConversationJudge",
    "ContextPrecisionJudgment",
    "ContextRecallJudgment",
    "ContextRetentionJudgment",
    "ContextVerdict",
    "CorrectnessJudgment",
    "FaithfulnessJudgment",
    "ForgetfulnessJudgment",
    "InvalidJudgment",
    "JudgeCalls",
    "JudgeFactory",
    "JudgeFn",
    "Outcome",
    "StatementVerdict",
    "average_precision",
    "judge_answer_relevance",
    "judge_conversation",
    "judge_models",
    "reference_text",
    "total_judge_calls",
    "transcript",
]


def total_judge_calls(conversations: Iterable[Conversation]) -> dict[str, Any]:
    """Sum of ``conv.judge_calls`` over conversations (for the summary)."""
    return JudgeCalls.total(conversations).model_dump(mode="json")
