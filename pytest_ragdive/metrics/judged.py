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

Multi-turn (per conversation with at least two answered turns, from the
``rag_input``/``answer`` transcript): ``forgetfulness`` (1 = the assistant lost
information from earlier turns; lower is better) and ``context_retention``
(1 = it kept and used it), one binary verdict each.

So with the built-in prompts a conversation costs at most 4 judge calls per
answered turn plus 2 (every call of one conversation runs concurrently). With
``judge_cascade = [cheap, strong]`` every item is judged by ``cheap`` and only
negative (score below the best value) or unparseable verdicts are judged again
by ``strong``, whose verdict then stands. ``conv.judge_calls`` counts
the calls (:class:`JudgeCalls`).

With ``judge_backend = "ragas"`` faithfulness, context_precision and
context_recall come from ragas' own metrics (:mod:`.ragas_backend`), through
our client; correctness and the multi-turn metrics still use our prompts.

Every untrusted text (documents, contexts, answers, questions, ground truths,
transcripts) is put into a prompt through :func:`~pytest_ragdive.prompts.fence`
and the system prompt says that fenced text is data (``FENCE_NOTE``).
An invalid judge output gives the metric None for that item, with the reason
``"invalid judge output: ..."``; client errors (cache miss in replay mode,
budget exceeded, a call that failed after its retries) propagate.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from ..errors import InvalidJudgment
from ..prompts import FENCE_NOTE, fence, load_prompt
from ..records import Context, Conversation, Document, JudgeCalls, Turn, Verdict
from .registry import METRICS

if TYPE_CHECKING:
    from ..config import RagdiveConfig
    from ..llm import LLMClient

__all__ = [
    "CONVERSATION_METRICS",
    "JUDGED_METRICS",
    "MAX_REFERENCE_CHARS",
    "ROLE",
    "TURN_METRICS",
    "ClaimVerdict",
    "ContextPrecisionJudgment",
    "ContextRecallJudgment",
    "ContextRetentionJudgment",
    "ContextVerdict",
    "CorrectnessJudgment",
    "FaithfulnessJudgment",
    "ForgetfulnessJudgment",
    "InvalidJudgment",
    "JudgeCalls",
    "Outcome",
    "StatementVerdict",
    "average_precision",
    "judge_conversation",
    "judge_models",
    "reference_text",
    "total_judge_calls",
    "transcript",
]

ROLE = "judge"
TURN_METRICS: tuple[str, ...] = ("faithfulness", "context_precision", "context_recall", "correctness")
CONVERSATION_METRICS: tuple[str, ...] = ("forgetfulness", "context_retention")
JUDGED_METRICS: tuple[str, ...] = TURN_METRICS + CONVERSATION_METRICS
RAGAS_METRICS: tuple[str, ...] = ("faithfulness", "context_precision", "context_recall")
# a reference document longer than this is cut (the judge sees a note saying so)
MAX_REFERENCE_CHARS = 24_000
_MAX_REASON_CHARS = 1_500


# --------------------------------------------------------------------------
# judge output schemas (what each prompt asks for)


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


class ForgetfulnessJudgment(BaseModel):
    forgetful: bool
    turns: list[int] = Field(default_factory=list)
    reason: str = ""


class ContextRetentionJudgment(BaseModel):
    retained: bool
    reason: str = ""


# --------------------------------------------------------------------------
# scoring


def _yes(b: bool) -> str:
    return "yes" if b else "no"


def _mean(values: Sequence[bool]) -> float | None:
    return sum(values) / len(values) if values else None


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


def _clip(text: str, limit: int = _MAX_REASON_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _failing(items: Iterable[tuple[bool, str, str]]) -> str:
    """'"claim" (reason); ...' for the items whose verdict is no."""
    parts = [f'"{_clip(what, 200)}"' + (f" ({_clip(why, 200)})" if why else "") for ok, what, why in items if not ok]
    return "; ".join(parts)


def _score_faithfulness(j: FaithfulnessJudgment, n_contexts: int) -> tuple[float | None, str]:
    flags = [c.supported for c in j.claims]
    if not flags:
        return None, "no factual claims in the answer"
    reason = f"{sum(flags)}/{len(flags)} answer claims supported by the contexts"
    bad = _failing((c.supported, c.claim, c.reason) for c in j.claims)
    return _mean(flags), reason + (f"; unsupported: {bad}" if bad else "")


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
        f"context {i} ({_clip(v.reason, 200)})" if v.reason else f"context {i}"
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
    return _mean(flags), reason + (f"; not attributable: {bad}" if bad else "")


def _score_correctness(j: CorrectnessJudgment, n_contexts: int) -> tuple[float | None, str]:
    return float(j.correct), ("correct" if j.correct else "not correct") + (f": {j.reason}" if j.reason else "")


def _score_forgetfulness(j: ForgetfulnessJudgment, n_contexts: int) -> tuple[float | None, str]:
    head = "forgetful" if j.forgetful else "not forgetful"
    if j.forgetful and j.turns:
        head += f" (turns {', '.join(str(t) for t in j.turns)})"
    return float(j.forgetful), head + (f": {j.reason}" if j.reason else "")


def _score_context_retention(j: ContextRetentionJudgment, n_contexts: int) -> tuple[float | None, str]:
    head = "context retained" if j.retained else "context not retained"
    return float(j.retained), head + (f": {j.reason}" if j.reason else "")


@dataclass(frozen=True)
class _Spec:
    schema: type[BaseModel]
    score: Callable[[Any, int], tuple[float | None, str]]


_SPECS: dict[str, _Spec] = {
    "faithfulness": _Spec(FaithfulnessJudgment, _score_faithfulness),
    "context_precision": _Spec(ContextPrecisionJudgment, _score_context_precision),
    "context_recall": _Spec(ContextRecallJudgment, _score_context_recall),
    "correctness": _Spec(CorrectnessJudgment, _score_correctness),
    "forgetfulness": _Spec(ForgetfulnessJudgment, _score_forgetfulness),
    "context_retention": _Spec(ContextRetentionJudgment, _score_context_retention),
}


# --------------------------------------------------------------------------
# call accounting


def total_judge_calls(conversations: Iterable[Conversation]) -> dict[str, Any]:
    """Sum of ``conv.judge_calls`` over conversations (for the summary)."""
    return JudgeCalls.total(conversations).model_dump(mode="json")


# --------------------------------------------------------------------------
# one judged item (with the cascade)


@dataclass
class Outcome:
    """One judgment of one item by one model."""

    score: float | None
    reason: str
    model: str | None
    invalid: bool = False


# a judge of one item: model override (None = the judge role's model) -> outcome
JudgeFn = Callable[[str | None], Awaitable[Outcome]]


def judge_models(cfg: RagdiveConfig) -> list[str | None]:
    """The models one item goes through: the cascade, else the judge role's model."""
    return list(cfg.judge_cascade) or [None]


def _negative(metric: str, o: Outcome) -> bool:
    """Worth a second opinion: unparseable, or any score short of the best one."""
    if o.invalid:
        return True
    if o.score is None:  # valid but not applicable (e.g. no claims)
        return False
    return o.score > 0.0 if METRICS[metric].direction == "lower" else o.score < 1.0


async def _cascade(metric: str, judge: JudgeFn, models: Sequence[str | None], calls: JudgeCalls) -> Verdict:
    outcome: Outcome | None = None
    for i, model in enumerate(models):
        if i > 0:
            calls.rejudged += 1
        outcome = await judge(model)
        if not _negative(metric, outcome):
            break
    assert outcome is not None
    return Verdict(value=outcome.score, reason=_clip(outcome.reason), model=outcome.model)


def _prompt_judge(
    client: LLMClient, metric: str, values: dict[str, Any], n_contexts: int, level: str, calls: JudgeCalls
) -> JudgeFn:
    """A JudgeFn that asks our prompt ``judge_<metric>`` for one item."""
    spec = _SPECS[metric]
    prompt = load_prompt(f"judge_{metric}")
    messages = prompt.render(fence_note=FENCE_NOTE, **values)

    async def judge(model: str | None) -> Outcome:
        requested = model or _default_model(client)
        res = await client.complete_json(
            ROLE, messages, spec.schema, prompt_id=prompt.id, prompt_version=prompt.version, model=model
        )
        # counted under the configured name (the one judge_cascade lists), not the server's echo
        used = requested or res.model
        calls.add(level, used, res.cached)
        if res.value is None:
            err = res.error or "unparseable output"
            return Outcome(None, f"invalid judge output: {err}", used, invalid=True)
        try:
            score, reason = spec.score(res.value, n_contexts)
        except InvalidJudgment as e:
            return Outcome(None, f"invalid judge output: {e}", used, invalid=True)
        return Outcome(score, reason, used)

    return judge


def _default_model(client: LLMClient) -> str | None:
    try:
        return client.model_for(ROLE)
    except Exception:  # no model configured: the call itself will say so
        return None


# --------------------------------------------------------------------------
# prompt inputs


def _contexts_block(contexts: Sequence[Context]) -> str:
    return "\n\n".join(f"Context {i}:\n{fence(c.text, f'context {i}')}" for i, c in enumerate(contexts, start=1))


def reference_text(conv: Conversation, turn: Turn, documents: Mapping[str, Document]) -> str:
    """The reference document: the conversation's document, else the turn's relevant documents."""
    doc = documents.get(conv.document_id) if conv.document_id else None
    if doc is not None:
        window = conv.window
        if window is not None and len(doc.text) > MAX_REFERENCE_CHARS:
            # a generated conversation about a long document: the part the
            # simulator saw (and took its ground truths from)
            start, end = window.start, window.end
            mid = (start + end) // 2
            lo = max(0, min(mid - MAX_REFERENCE_CHARS // 2, len(doc.text) - MAX_REFERENCE_CHARS))
            texts = [doc.text[lo : lo + MAX_REFERENCE_CHARS]]
        else:
            texts = [doc.text]
    else:
        texts = [documents[d].text for d in dict.fromkeys(turn.relevant_doc_ids) if d in documents]
    text = "\n\n".join(t for t in texts if t)
    if len(text) > MAX_REFERENCE_CHARS:
        text = text[:MAX_REFERENCE_CHARS] + "\n[... document cut here ...]"
    return text


def transcript(turns: Sequence[Turn]) -> str:
    """The rag_input/answer transcript, each message fenced (labels stay outside the fences)."""
    parts = []
    for n, t in enumerate(turns, start=1):
        parts.append(f"Turn {n}, user:\n{fence(t.rag_input, f'user {n}')}")
        parts.append(f"Turn {n}, chatbot:\n{fence(t.answer or '', f'chatbot {n}')}")
    return "\n\n".join(parts)


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
    backend: str | None = None,
) -> None:
    """Judge every answered turn and the conversation; write scores, verdicts and call counts.

    Turn-level metrics go to ``turn.scores``/``turn.verdicts`` (overwriting
    offline values), their means over turns to ``conv.scores``; forgetfulness
    and context_retention to ``conv.scores``/``conv.verdicts``; the call counts
    to ``conv.judge_calls``. ``backend`` overrides ``cfg.judge_backend``.
    A client error (LLMError) is raised once every other call has finished and
    its result is written.
    """
    models = judge_models(cfg)
    calls = JudgeCalls()
    ragas_judge: Callable[..., JudgeFn] | None = None
    if (backend or cfg.judge_backend) == "ragas":
        from .ragas_backend import ragas_judge as _rj
        from .ragas_backend import require_ragas

        require_ragas()  # RagasNotInstalled, with the pip command, when the extra is missing
        ragas_judge = _rj
    answered = [t for t in conv.turns if t.answer is not None]

    targets: list[tuple[Turn | None, str]] = []
    judges: list[JudgeFn] = []
    for turn in answered:
        for metric, judge in _turn_judges(conv, turn, client, documents, calls, ragas_judge).items():
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
            judges.append(_prompt_judge(client, metric, values, 0, "conversation", calls))
    else:
        for metric in CONVERSATION_METRICS:
            conv.scores[metric] = None
            conv.verdicts[metric] = _not_applicable("fewer than 2 answered turns")

    results = await asyncio.gather(
        *(_cascade(metric, judge, models, calls) for (_, metric), judge in zip(targets, judges, strict=True)),
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
    ragas_judge: Callable[..., JudgeFn] | None,
) -> dict[str, JudgeFn | Verdict]:
    """One judge per turn-level metric, or a not-applicable verdict where the inputs are missing."""
    out: dict[str, JudgeFn | Verdict] = {}
    contexts = list(turn.contexts)
    n = len(contexts)
    question = fence(turn.question, "question")
    answer = fence(turn.answer or "", "answer")
    ground_truth = turn.ground_truth.strip()
    ctx_block = _contexts_block(contexts)

    def make(metric: str, values: dict[str, Any]) -> JudgeFn:
        if ragas_judge is not None and metric in RAGAS_METRICS:
            return ragas_judge(client, metric, turn, calls)
        return _prompt_judge(client, metric, values, n, "turn", calls)

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
