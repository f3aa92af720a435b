"""``judge_backend = "ragas"``: faithfulness, context_precision and context_recall
computed by ragas' own metrics, with ragas' LLM calls routed into our client.

ragas (the optional extra ``pytest-ragdive[ragas]``: ragas 0.4.3 with
``langchain-community<0.4.2``) is imported only when this backend is used, with
``RAGAS_DO_NOT_TRACK=true`` set first (no telemetry). Without it,
:func:`require_ragas` raises :class:`RagasNotInstalled` saying how to install it.

The adapter is a ragas ``InstructorBaseRagasLLM`` (the LLM interface of ragas'
``metrics.collections``): ragas asks it for ``agenerate(prompt, response_model)``
and it answers with ``client.complete_json(role="judge", ...)``, so our cache,
retries, structured output and cost accounting apply to every ragas call.
The metrics used are ragas' ``Faithfulness`` (2 calls: statements, then NLI
verdicts), ``ContextPrecisionWithReference`` (1 call per retrieved context) and
``ContextRecall`` (1 call). Untrusted texts are fenced before ragas sees them
and our system message tells the judge that fenced text is data.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ..core.errors import RagasNotInstalled
from ..core.records import Conversation, Document, JudgeCalls, Turn
from ..llm.prompts import FENCE_NOTE, fence
from .judged import ConversationJudge, JudgeFactory, JudgeFn, Outcome
from .judged.cascade import default_model

if TYPE_CHECKING:
    from ..core.config import RagdiveConfig
    from ..llm import LLMClient

__all__ = [
    "INSTALL_HINT",
    "judge_conversation_ragas",
    "ragas_conversation_judge",
    "RAGAS_JUDGES",
    "RAGAS_METRICS",
    "RagasInvalidOutput",
    "RagasNotInstalled",
    "check_judge_backend",
    "make_ragas_llm",
    "ragas_judge",
    "require_ragas",
]

RAGAS_METRICS: tuple[str, ...] = ("faithfulness", "context_precision", "context_recall")
INSTALL_HINT = "pip install 'pytest-ragdive[ragas]'"
_SYSTEM = (
    "You are an impartial evaluator of a retrieval-augmented chatbot, following the evaluation instructions "
    "in the user message. " + FENCE_NOTE
)


class RagasInvalidOutput(ValueError):
    """Our client got no valid structured output for a ragas prompt (after its repair call)."""


@functools.cache  # not a session memo (core/memo.py): an import, done once per process as Python's own import is
def require_ragas() -> Mapping[str, Any]:
    """Import ragas (telemetry off); the classes this backend uses, by name (read-only)."""
    os.environ["RAGAS_DO_NOT_TRACK"] = "true"
    try:
        import ragas
        from ragas.llms.base import InstructorBaseRagasLLM
        from ragas.metrics.collections import ContextPrecisionWithReference, ContextRecall, Faithfulness
    except ImportError as e:
        raise RagasNotInstalled(
            f"judge_backend = 'ragas' needs the ragas extra, which is not importable here ({e}); "
            f"install it with: {INSTALL_HINT}"
        ) from e
    return MappingProxyType(dict(
        version=str(getattr(ragas, "__version__", "unknown")),
        base_llm=InstructorBaseRagasLLM,
        faithfulness=Faithfulness,
        context_precision=ContextPrecisionWithReference,
        context_recall=ContextRecall,
    ))


def ragas_conversation_judge(
    conv: Conversation, client: LLMClient, cfg: RagdiveConfig, documents: Mapping[str, Document]
) -> ConversationJudge:
    """The judge of ``conv`` with the ragas backend (whatever ``cfg.judge_backend`` says):
    faithfulness, context_precision and context_recall come from ragas; correctness,
    forgetfulness and context_retention from our prompts. Raises
    :class:`RagasNotInstalled` when ragas is missing (before any call)."""
    require_ragas()
    return ConversationJudge(conv, client, cfg, documents, backend_judges=RAGAS_JUDGES)


async def judge_conversation_ragas(
    conv: Conversation, client: LLMClient, cfg: RagdiveConfig, documents: Mapping[str, Document]
) -> None:
    """:func:`~.judged.judge_conversation` with the ragas backend (:func:`ragas_conversation_judge`)."""
    await ragas_conversation_judge(conv, client, cfg, documents).finish()


def check_judge_backend(cfg: RagdiveConfig) -> None:
    """Fail early (RagasNotInstalled) when the configured judge backend cannot run."""
    if cfg.judge_backend == "ragas":
        require_ragas()


def make_ragas_llm(
    client: LLMClient,
    model: str | None = None,
    on_result: Callable[[Any], None] | None = None,
) -> Any:
    """A ragas ``InstructorBaseRagasLLM`` that sends every ragas prompt through ``client``.

    ``on_result(res)`` is called with our client's result of every call (for
    counting); an invalid output raises :class:`RagasInvalidOutput`.
    """
    r = require_ragas()
    version = r["version"]
    base: Any = r["base_llm"]

    class ClientRagasLLM(base):  # ragas is an optional import, hence Any
        async def agenerate(self, prompt: str, response_model: type[BaseModel]) -> BaseModel:
            messages = [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": prompt}]
            res = await client.complete_json(
                "judge",
                messages,
                response_model,
                prompt_id=f"ragas_{response_model.__name__}",
                prompt_version=f"ragas-{version}",
                model=model,
            )
            if on_result is not None:
                on_result(res)
            if res.value is None:
                raise RagasInvalidOutput(res.error or "unparseable output")
            return res.value

        def generate(self, prompt: str, response_model: type[BaseModel]) -> BaseModel:
            raise NotImplementedError("the ragdive ragas adapter is async only: use agenerate")

    return ClientRagasLLM()


def _failing_reasons(outputs: list[BaseModel]) -> str:
    """The reasons ragas' judge gave for its negative verdicts (0 verdicts / attributions)."""
    out: list[str] = []
    for o in outputs:
        items = getattr(o, "statements", None) or getattr(o, "classifications", None) or [o]
        for it in items:
            verdict = getattr(it, "verdict", getattr(it, "attributed", None))
            if isinstance(verdict, (int, float)) and not verdict:
                what = getattr(it, "statement", "") or ""
                why = getattr(it, "reason", "") or ""
                out.append((f'"{what[:200]}" ' if what else "") + f"({why[:200]})")
    return "; ".join(out)


def ragas_judge(client: LLMClient, metric: str, turn: Turn, calls: JudgeCalls) -> JudgeFn:
    """A JudgeFn (see :mod:`.judged`) computing ``metric`` for ``turn`` with ragas."""
    r = require_ragas()
    question = fence(turn.question, "question")
    answer = fence(turn.answer or "", "answer")
    contexts = [fence(c.text, f"context {i}") for i, c in enumerate(turn.contexts, start=1)]
    reference = fence(turn.ground_truth, "ground truth")

    async def judge(model: str | None) -> Outcome:
        requested = model or default_model(client)
        used: list[str | None] = []
        outputs: list[BaseModel] = []

        def on_result(res: Any) -> None:
            m = requested or res.model
            used.append(m)
            calls.add("turn", m, res.cached)
            if res.value is not None:
                outputs.append(res.value)

        llm = make_ragas_llm(client, model, on_result)
        scorer = r[metric](llm=llm)
        try:
            if metric == "faithfulness":
                result = await scorer.ascore(user_input=question, response=answer, retrieved_contexts=contexts)
            else:
                result = await scorer.ascore(user_input=question, reference=reference, retrieved_contexts=contexts)
        except RagasInvalidOutput as e:
            return Outcome(None, f"invalid judge output: {e}", used[-1] if used else requested, invalid=True)
        except ValueError as e:  # ragas' own input/output checks
            return Outcome(
                None, f"invalid judge output: ragas {metric}: {e}", used[-1] if used else requested, invalid=True
            )
        model_used = used[-1] if used else requested
        value = getattr(result, "value", None)
        if not isinstance(value, (int, float)) or math.isnan(value):
            why = "no statements" if metric != "context_precision" else "no verdicts"
            return Outcome(None, f"ragas {metric}: not applicable ({why})", model_used)
        score = max(0.0, min(1.0, float(value)))
        # ragas' AP divides by (relevant + 1e-10): round that epsilon away
        score = round(score, 9)
        bad = _failing_reasons(outputs)
        reason = f"ragas {metric} = {score:.3f} ({len(used)} calls)" + (f"; negative verdicts: {bad}" if bad else "")
        return Outcome(score, reason, model_used)

    return judge


#: the judges this backend gives :func:`~.judged.judge_conversation` (``backend_judges``)
RAGAS_JUDGES: dict[str, JudgeFactory] = {metric: ragas_judge for metric in RAGAS_METRICS}
