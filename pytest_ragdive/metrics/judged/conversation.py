"""The entry point of the builtin judges: every answered turn and the whole
conversation of one :class:`~pytest_ragdive.records.Conversation`, judged
concurrently, scores and verdicts written back.

:class:`ConversationJudge` judges a conversation while it runs: each answered
turn's calls start as soon as the turn is answered (:meth:`~ConversationJudge.turn_answered`,
the turn loop's ``on_turn`` hook), beside the conversation's later turns, and
:meth:`~ConversationJudge.finish` adds the conversation-level calls, waits for
them all and writes what :func:`judge_conversation` writes, in the same order.
The calls, prompts and results are the same whenever the calls start."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...core.errors import CacheMissError
from ...core.records import Conversation, Document, JudgeCalls, Turn, Verdict
from ...llm.prompts import fence
from ..multiturn import has_probe
from .cascade import JudgeFactory, JudgeFn, cascade, judge_models, prompt_judge
from .combined import KEY_TAG, CombinedTurn
from .inputs import contexts_block, reference_text, transcript
from .rubric import judge_item, turn_inputs
from .scoring import CONVERSATION_METRICS, TURN_METRICS

if TYPE_CHECKING:
    from ...core.config import RagdiveConfig
    from ...llm import LLMClient

__all__ = ["NOT_JUDGED", "NO_ELIGIBLE", "ConversationJudge", "judge_conversation", "not_judged"]

NOT_JUDGED = "not judged (no key)"
NO_ELIGIBLE = "no history-dependent turn was answered correctly stand-alone (the probe's eligibility rule)"


def not_judged(miss: CacheMissError) -> Verdict:
    """The verdict of an item whose judge call the cache cannot answer in record mode none:
    no value (the offline twin keeps the offline one), and why."""
    return Verdict(
        value=None,
        reason=f"{NOT_JUDGED}: the {miss.role} call is not cached (record mode none, prompt {miss.prompt_id or '(none)'}, "
        f"key {miss.key[:16]}); the gate falls back to the offline twin",
        model=miss.model or None,
    )


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
    and context_retention to ``conv.scores``/``conv.verdicts`` (not applicable, no call,
    where the stand-alone probe ran and found no eligible turn); the call counts
    to ``conv.judge_calls``. ``backend_judges`` (metric -> factory) judges those
turn-level metrics with another backend (ragas) instead of our prompts; this
function never looks at ``cfg.judge_backend`` (:mod:`..backends` decides).
    A client error (LLMError) is raised once every other call has finished and
    its result is written.
    """
    await ConversationJudge(conv, client, cfg, documents, backend_judges=backend_judges).finish()


# one judged item: the turn it belongs to (None: the conversation), its metric, and its
# verdict (not applicable) or the task judging it
_Item = tuple[Turn | None, str, "Verdict | asyncio.Future[Verdict]"]


class ConversationJudge:
    """The judge calls of one conversation, started turn by turn (see the module docstring).

    ``turn_answered(turn)`` starts an answered turn's calls on the running loop
    (once per turn; it never raises: an error is raised by ``finish``).
    ``finish()`` starts the calls of answered turns not seen yet and the
    conversation-level calls, then writes every result as
    :func:`judge_conversation` documents (call it after the offline scores are
    written: judged values overwrite them). ``discard()`` cancels what is not
    finished and writes nothing (a conversation that failed is not judged)."""

    def __init__(
        self,
        conv: Conversation,
        client: LLMClient,
        cfg: RagdiveConfig,
        documents: Mapping[str, Document],
        *,
        backend_judges: Mapping[str, JudgeFactory] | None = None,
    ) -> None:
        self.conv = conv
        self.client = client
        self.documents = documents
        self.models = judge_models(cfg)
        self.selected: frozenset[str] = frozenset(cfg.judged_metrics)  # judged_metrics: which metrics the judge scores
        self.fallback = cfg.judge_fallback()  # a call not cached in record mode none: "not judged (no key)"
        self.calls = JudgeCalls()
        self.backend_judges = backend_judges or {}
        self.rubrics = dict(cfg.judges)  # the config's rubric judges (metrics of their own)
        self.band = cfg.judge_band
        self.lexical = cfg.faithfulness_backend == "lexical"
        self.combined = cfg.judge_prompts == "combined"  # one request per answered turn (.combined)
        self._items: dict[int, list[_Item]] = {}  # by id() of the answered turn, in the order seen
        self._error: BaseException | None = None  # building a turn's judges failed

    def turn_answered(self, turn: Turn) -> None:
        if turn.answer is None or id(turn) in self._items or self._error is not None:
            return
        items: list[_Item] = []
        self._items[id(turn)] = items
        try:
            tag = KEY_TAG if self.combined else None
            judges, values = _turn_judges(
                self.conv, turn, self.client, self.documents, self.calls, self.backend_judges, tag
            )
            if self.band is not None and not isinstance(judges.get("faithfulness"), Verdict):
                if not _in_band(self.conv, turn, self.band, self.lexical):
                    del judges["faithfulness"]  # the offline figure stands (its verdict says so)
            if self.combined:
                self._combine(judges, values, len(turn.contexts))
            for metric, judge in ((m, j) for m, j in judges.items() if m in self.selected):
                items.append((turn, metric, judge if isinstance(judge, Verdict) else self._start(metric, judge)))
            for name, rj in self.rubrics.items():
                if rj.level == "turn":
                    items.append((turn, name, self._start(name, judge_item(self.client, name, rj, turn_inputs(turn), self.calls))))
        except Exception as exc:  # noqa: BLE001 - raised by finish(), as a judging error
            self._error = exc

    def _combine(self, judges: dict[str, JudgeFn | Verdict], values: dict[str, Any], n_contexts: int) -> None:
        """The turn's prompt-judged single-turn metrics, two or more of them, through one
        combined request (their own judges stay as the fallbacks of malformed parts)."""
        own: dict[str, JudgeFn] = {}
        for m in TURN_METRICS:
            judge = judges.get(m)
            if m in self.selected and m not in self.backend_judges and judge is not None and not isinstance(judge, Verdict):
                own[m] = judge
        if len(own) < 2:
            return
        group = CombinedTurn(self.client, values, list(own), n_contexts, self.calls, own)
        for m in own:
            judges[m] = group.judge(m)

    def _start(self, metric: str, judge: JudgeFn) -> asyncio.Future[Verdict]:
        return asyncio.ensure_future(cascade(metric, judge, self.models, self.calls))

    def _tasks(self) -> list[asyncio.Future[Verdict]]:
        return [v for items in self._items.values() for *_, v in items if not isinstance(v, Verdict)]

    def cancel(self) -> None:
        """Cancel every call not finished; nothing is written."""
        for t in self._tasks():
            t.cancel()

    async def discard(self) -> None:
        """:meth:`cancel`, and wait for the calls to end."""
        self.cancel()
        await asyncio.gather(*self._tasks(), return_exceptions=True)

    async def finish(self) -> None:
        conv = self.conv
        answered = [t for t in conv.turns if t.answer is not None]
        for turn in answered:
            self.turn_answered(turn)  # turns answered before the loop, or with no hook
        if self._error is not None:
            await self.discard()
            raise self._error
        items = [it for t in answered for it in self._items[id(t)]]
        conversation_metrics = [m for m in CONVERSATION_METRICS if m in self.selected]
        # the probe's eligibility rule holds for the judge too: where the stand-alone probe ran
        # and no history-dependent turn was answered correctly stand-alone, there is nothing
        # the target knew and could forget, so the conversation is not scored (no call)
        no_eligible = has_probe(conv) and conv.scores.get("forgotten_turn_share") is None
        if len(answered) >= 2 and no_eligible:
            for metric in conversation_metrics:
                conv.scores[metric] = None
                conv.verdicts[metric] = _not_applicable(NO_ELIGIBLE)
        elif len(answered) >= 2:
            values = {"transcript": transcript(answered)}
            for metric in conversation_metrics:
                judge = prompt_judge(self.client, metric, values, 0, "conversation", self.calls)
                items.append((None, metric, self._start(metric, judge)))
        whole = [(n, rj) for n, rj in self.rubrics.items() if rj.level == "conversation"]
        for name, rj in whole:  # a rubric over the whole conversation: any answered one
            if answered:
                item = judge_item(self.client, name, rj, transcript(answered), self.calls)
                items.append((None, name, self._start(name, item)))
            else:
                conv.scores[name] = None
        # written in the order judge_conversation always wrote them: the not-applicable
        # verdicts turn by turn, then the judged results in turn and metric order
        for target, metric, v in items:
            if isinstance(v, Verdict) and target is not None:
                target.scores[metric] = v.value
                target.verdicts[metric] = v
        if len(answered) < 2:
            for metric in conversation_metrics:
                conv.scores[metric] = None
                conv.verdicts[metric] = _not_applicable("fewer than 2 answered turns")
        judged = [(target, metric, v) for target, metric, v in items if not isinstance(v, Verdict)]
        results = await asyncio.gather(*(v for *_, v in judged), return_exceptions=True)
        error: BaseException | None = None
        for (target, metric, _), res in zip(judged, results, strict=True):
            if self.fallback and isinstance(res, CacheMissError):
                res = not_judged(res)
                self.calls.not_judged += 1
            elif isinstance(res, BaseException):
                error = error or res
                continue
            if target is None:
                conv.scores[metric] = res.value
                conv.verdicts[metric] = res
            else:
                target.scores[metric] = res.value
                target.verdicts[metric] = res

        for metric in (
            *(m for m in (*TURN_METRICS, "answer_relevance") if m in self.selected),
            *(n for n, rj in self.rubrics.items() if rj.level == "turn"),
        ):
            present = [v for v in (t.scores.get(metric) for t in answered) if v is not None]
            conv.scores[metric] = sum(present) / len(present) if present else None
        conv.judge_calls = self.calls
        if error is not None:
            raise error


def _in_band(conv: Conversation, turn: Turn, band: tuple[float, float], lexical: bool) -> bool:
    """Whether the turn's offline faithfulness (the lexical or semantic rule, the conversation
    so far) falls in ``judge_band``; when it does not, the turn gets a verdict saying so."""
    from ..grounding import LEXICAL_SUPPORT, SUPPORT_RULE
    from ..offline import Grounding, conversation_support, grounded_faithfulness

    rule = LEXICAL_SUPPORT if lexical else SUPPORT_RULE
    index = next(i for i, t in enumerate(conv.turns) if t is turn)
    support = conversation_support(conv.turns, index, rule)
    offline = grounded_faithfulness(turn.answer, turn.contexts, support, Grounding(support=rule))
    lo, hi = band
    if offline is not None and (lo <= offline < hi or offline == hi == 1.0):
        return True
    shown = "no answer" if offline is None else f"{offline:.3f}"
    turn.verdicts["faithfulness"] = Verdict(
        value=offline, reason=f"offline faithfulness {shown} outside judge_band [{lo:g}, {hi:g}): not judged", model=None
    )
    return False


def _turn_judges(
    conv: Conversation,
    turn: Turn,
    client: LLMClient,
    documents: Mapping[str, Document],
    calls: JudgeCalls,
    backend_judges: Mapping[str, JudgeFactory],
    key_tag: str | None = None,
) -> tuple[dict[str, JudgeFn | Verdict], dict[str, Any]]:
    """One judge per turn-level metric, or a not-applicable verdict where the inputs are missing;
    and the values of the combined prompt (:mod:`.combined`). ``key_tag``: the judge mode's tag
    of the calls' cache keys."""
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
        return prompt_judge(client, metric, values, n, "turn", calls, key_tag)

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
    shared = {
        "question": question,
        "answer": answer,
        "ground_truth": fence(ground_truth, "ground truth") if ground_truth else "(none given)",
        "reference": fence(reference, "document") if reference else "(none available)",
    }
    if ground_truth or reference:
        out["correctness"] = make("correctness", dict(shared))
    else:
        out["correctness"] = _not_applicable("no ground truth and no reference document")
    # seed 001's relevance judge (judged_metrics = [..., "answer_relevance"]): question and answer only
    out["answer_relevance"] = make("answer_relevance", {"question": question, "answer": answer})
    return out, {**shared, "contexts": ctx_block or "(none retrieved)", "n_contexts": n}
