"""Rubric judges (GEval-style): criteria a team writes, judged by the LLM.

Two users: a rubric judge of the config (``[tool.ragdive.judges.NAME]``, the metric
``NAME``; :class:`~.conversation.ConversationJudge` starts its calls beside the other
judges', through the cascade and, with ``judge_mode = "batch"``, the batch API), and the
``rubric`` assertion of golden data (:func:`rubric_check`, binary).

The prompts are data (``judge_rubric_binary``, ``judge_rubric_scale``); the prompt version
of a call is the file's version plus a hash of the criteria (with the scale and level), so
editing one judge's criteria re-judges exactly that judge and every other cache entry stays
valid. The criteria are the team's instructions and are not fenced; what is judged (the
question, the answer, the retrieved contexts, or the transcript) is.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from ...core.records import Conversation, JudgeCalls, Turn, Verdict
from ...llm.prompts import FENCE_NOTE, fence, load_prompt
from .cascade import ROLE, JudgeFn, Outcome, cascade, default_model
from .inputs import contexts_block, transcript
from .schemas import RubricGrade, RubricVerdict
from .scoring import clip

if TYPE_CHECKING:
    from ...core.config_models import JudgeConfig
    from ...llm import LLMClient

__all__ = ["PROMPTS", "rubric_check", "rubric_judge", "turn_inputs"]

PROMPTS = {"binary": "judge_rubric_binary", "1-5": "judge_rubric_scale"}


def turn_inputs(turn: Turn) -> str:
    """One answered turn as the judge reads it: the question, the answer, the contexts (fenced)."""
    parts = [f"Question:\n{fence(turn.question, 'question')}", f"The chatbot's answer:\n{fence(turn.answer or '', 'answer')}"]
    if turn.contexts:
        parts.append(f"Retrieved contexts:\n{contexts_block(turn.contexts)}")
    return "\n\n".join(parts)


def conversation_inputs(conv: Conversation) -> str:
    return transcript([t for t in conv.turns if t.answer is not None])


def rubric_judge(
    client: LLMClient, name: str, criteria: str, scale: str, version: str, inputs: str, level: str, calls: JudgeCalls
) -> JudgeFn:
    """A JudgeFn of one item: ``criteria`` applied to ``inputs`` (:func:`turn_inputs` or a transcript).
    ``version``: the criteria's hash (:meth:`JudgeConfig.criteria_hash`)."""
    prompt = load_prompt(PROMPTS[scale])
    subject = "answer" if level == "turn" else "conversation"
    messages = prompt.render(fence_note=FENCE_NOTE, criteria=criteria.strip(), subject=subject, inputs=inputs)
    schema: Any = RubricVerdict if scale == "binary" else RubricGrade

    async def judge(model: str | None) -> Outcome:
        requested = model or default_model(client)
        res = await client.complete_json(
            ROLE, messages, schema, prompt_id=f"{prompt.id}:{name}", prompt_version=f"{prompt.version}.{version}",
            model=model,
        )
        used = requested or res.model
        calls.add(level, used, res.cached)
        if res.value is None:
            return Outcome(None, f"invalid judge output: {res.error or 'unparseable output'}", used, invalid=True)
        if isinstance(res.value, RubricVerdict):
            head = "criteria met" if res.value.met else "criteria not met"
            score = float(res.value.met)
        else:
            head = f"grade {res.value.grade}/5"
            score = (res.value.grade - 1) / 4
        return Outcome(score, head + (f": {clip(res.value.reason)}" if res.value.reason else ""), used)

    return judge


def judge_item(client: LLMClient, name: str, judge: JudgeConfig, inputs: str, calls: JudgeCalls) -> JudgeFn:
    """The JudgeFn of a config rubric judge for one item (a turn's inputs or a transcript)."""
    return rubric_judge(client, name, judge.criteria, judge.scale, judge.criteria_hash(), inputs, judge.level, calls)


async def rubric_check(
    client: LLMClient, criteria: str, turn: Turn, models: list[str | None], calls: JudgeCalls
) -> Verdict:
    """A ``rubric`` assertion on one answered turn: the binary judge (cascaded), value 1.0 when met."""
    version = hashlib.sha256(" ".join(criteria.split()).encode("utf-8")).hexdigest()[:12]
    fn = rubric_judge(client, "assert", criteria, "binary", version, turn_inputs(turn), "turn", calls)
    return await cascade("rubric", fn, models, calls)
