"""The LLM parts of the sharded diagnosis: the shard simulator (role ``simulator``),
the response classifier (role ``classifier``) and the optional correctness judge (role ``judge``).

Each call goes through :class:`pytest_ragdive.llm.LLMClient` with a versioned
prompt (``simulator_shard``, ``classifier_response``, ``judge_answer_match``),
so it is cached: a rerun with the same inputs makes no request. The simulator's
seed is fixed per question and run (:func:`pytest_ragdive.target.call_seed`), so
SHARDED and RECAP share their calls (the same conversation prefix) and another
run draws anew. Untrusted text (the chatbot's replies) is fenced.

The simulator sees what the study's simulator sees: the dialogue so far and the shards
not revealed yet, never the full question (which would let it say more than one shard);
it runs at temperature 1.0 with a 200-token cap by default (``sharded_simulator_temperature``,
``sharded_simulator_max_tokens``). The classifier runs at the classifier role's temperature
(0 by default, as in the study); the judge sees the original question, the answer and its
aliases, and the extracted candidate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from ..core.records import Conversation, Turn
from ..llm.prompts import FENCE_NOTE, fence, load_prompt
from ..run.target import call_seed
from .questions import Shard, ShardedQuestion
from .records import ResponseClass

if TYPE_CHECKING:
    from ..llm import LLMClient

__all__ = ["LLMClassifier", "LLMJudge", "ShardSimulator", "transcript"]


def transcript(turns: list[Turn]) -> str:
    """The answered turns as ``User: ...`` / ``Assistant: ...`` lines."""
    lines: list[str] = []
    for t in turns:
        lines.append(f"User: {t.rag_input}")
        if t.answer is not None:
            lines.append(f"Assistant: {t.answer}")
    return "\n".join(lines) or "(nothing yet)"


class SimulatorReply(BaseModel):
    response: str = Field(min_length=1)
    shard_id: int = -1


class ClassifierReply(BaseModel):
    response_class: ResponseClass
    reason: str = ""


class JudgeReply(BaseModel):
    correct: bool
    reason: str = ""


class ShardSimulator:
    """The LLM user: the next message and the shard it reveals (None for none)."""

    def __init__(
        self, client: LLMClient, run: int, *, temperature: float | None = 1.0, max_tokens: int | None = 200
    ) -> None:
        self.client = client
        self.run = run
        self.temperature = temperature  # None: the simulator role's
        self.max_tokens = max_tokens

    async def next_message(
        self, q: ShardedQuestion, conv: Conversation, unrevealed: list[Shard]
    ) -> tuple[str, int | None]:
        """The next user message: from the dialogue so far and the unrevealed shards only."""
        prompt = load_prompt("simulator_shard")
        shown = {s.shard_id for s in unrevealed}
        messages = prompt.render(
            fence_note=FENCE_NOTE,
            unrevealed="\n".join(f"{s.shard_id}: {s.shard}" for s in unrevealed),
            conversation=fence(transcript(conv.turns), "conversation"),
        )
        res = await self.client.complete_json(
            "simulator", messages, SimulatorReply, prompt_id=prompt.id, prompt_version=prompt.version,
            seed=call_seed("sharded", q.id, self.run) + len(conv.turns),
            temperature=self.temperature, max_tokens=self.max_tokens,
        )
        if res.value is None:  # unusable output: reveal the next shard verbatim
            return unrevealed[0].shard, unrevealed[0].shard_id
        sid = res.value.shard_id
        return res.value.response.strip(), (sid if sid in shown else None)


class LLMClassifier:
    """The response class of one reply, from the ``classifier`` role (None when unusable)."""

    def __init__(self, client: LLMClient) -> None:
        self.client = client

    async def classify(self, conv: Conversation, turn: Turn) -> str | None:
        prompt = load_prompt("classifier_response")
        before = [t for t in conv.turns if t is not turn]
        messages = prompt.render(
            fence_note=FENCE_NOTE,
            conversation=fence(transcript(before) + f"\nUser: {turn.rag_input}", "conversation"),
            reply=fence(turn.answer or "", "reply"),
        )
        res = await self.client.complete_json(
            "classifier", messages, ClassifierReply, prompt_id=prompt.id, prompt_version=prompt.version
        )
        return None if res.value is None else res.value.response_class


class LLMJudge:
    """Binary semantic correctness of an extracted answer against the answer and aliases."""

    def __init__(self, client: LLMClient) -> None:
        self.client = client

    async def judge(self, q: ShardedQuestion, extracted: str) -> float | None:
        prompt = load_prompt("judge_answer_match")
        messages = prompt.render(
            fence_note=FENCE_NOTE,
            question=q.question,
            references="\n".join(f"- {r}" for r in q.references),
            candidate=fence(extracted, "candidate"),
        )
        res = await self.client.complete_json(  # the sharded turn waits for it
            "judge", messages, JudgeReply, prompt_id=prompt.id, prompt_version=prompt.version, turn_loop=True
        )
        return None if res.value is None else float(res.value.correct)
