"""The RAG-DIVE simulator as a user: proposes each next turn, validated.

An LLM (client role ``simulator``) plays a user who has read one document and
talks with the chatbot in a role (see :mod:`pytest_ragdive.sources.generator`
for planning, windows and seeds). Each candidate turn is checked by the
validator (:mod:`pytest_ragdive.sources.validator`) and regenerated with its
reason up to ``max_regenerations``; a turn still invalid is dropped (the
simulator is asked for a different next turn; the budget counts slots) or
kept flagged ``invalid``, per ``on_invalid``. The runner sends the accepted
turn to the target and calls :meth:`SimulatorUser.next_turn` again with the
answer on the conversation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ...core.config_models import GeneratedConfig
from ...core.errors import GenerationError
from ...core.records import (
    Conversation,
    Document,
    DocWindow,
    RejectedCandidate,
    Turn,
    TurnGeneration,
    TurnVerdict,
    ValidationCounts,
    ValidationStats,
)
from ...llm.prompts import FENCE_NOTE, Prompt, fence, load_prompt
from ...metrics.text import is_unanswerable
from ...sources.generator import GeneratedSpec, conversation_seed, document_window, window_note
from ...sources.roles import Role
from ...sources.validator import MALFORMED_OUTPUT, GeneratedTurn, position_note, validate_turn
from ..target import AsyncTarget
from ..turn_loop import run_conversation

if TYPE_CHECKING:
    from ...llm import LLMClient


def _render_user(prompt: Prompt, **values: Any) -> list[dict[str, str]]:
    return [m for m in prompt.render(**values) if m["role"] == "user"]


class _Candidate(BaseModel):
    turn: GeneratedTurn | None
    verdict: TurnVerdict
    regenerations: int
    rejected: list[RejectedCandidate]


class SimulatorUser:
    """One generated conversation's user side (one chat with the simulator)."""

    def __init__(
        self,
        spec: GeneratedSpec,
        document: Document,
        role: Role,
        client: LLMClient,
        settings: GeneratedConfig,
        run: int,
    ) -> None:
        if document.id != spec.document_id:
            raise GenerationError(f"{spec.id}: planned for document {spec.document_id!r}, got {document.id!r}")
        self.spec = spec
        self.role = role
        self.client = client
        self.settings = settings
        self.seed = conversation_seed(spec, run)
        self.start, self.end = document_window(document.text, settings.window_chars, spec.seed)
        self.length = len(document.text)
        self.excerpt = document.text[self.start : self.end]
        self.window_note = window_note(self.start, self.end, self.length)
        self.title = document.title or document.id
        self.counts = ValidationCounts()
        attack = role.attack is not None  # an adversarial role: the red-team prompts (docs/safety.md)
        self._first_prompt = load_prompt("attack_generator_first" if attack else "generator_first")
        self._next_prompt = load_prompt("attack_generator_next" if attack else "generator_next")
        self._skip_prompt = load_prompt("generator_skip")
        self._feedback = load_prompt("generator_feedback")
        self.chat: list[dict[str, str]] = self._first_prompt.render(
            role_name=role.name,
            role_instructions=role.instructions,
            fence_note=FENCE_NOTE,
            title=fence(self.title, "title"),
            window_note=self.window_note,
            document=fence(self.excerpt, "document"),
        )
        self._slot = 0
        self._last_dropped = False

    def conversation(self, run: int) -> Conversation:
        """The empty conversation record this user fills."""
        return Conversation(
            id=self.spec.id,
            suite=self.spec.suite,
            run=run,
            role=self.role.name,
            source="generated",
            document_id=self.spec.document_id,
            seed=self.seed,
            planned_turns=self.spec.turns,
            window=DocWindow(start=self.start, end=self.end, of=self.length),
        )

    async def next_turn(self, conv: Conversation) -> Turn | None:
        kept = conv.turns
        while self._slot < self.spec.turns:
            slot = self._slot
            self._slot += 1
            first = not kept
            prompt = self._first_prompt
            if slot > 0:
                if self._last_dropped:
                    prompt = self._skip_prompt
                    self.chat.extend(
                        _render_user(self._skip_prompt, turn_number=len(kept) + 1, position=position_note(first))
                    )
                else:
                    prompt = self._next_prompt
                    self.chat.extend(
                        _render_user(
                            self._next_prompt,
                            answer=fence(kept[-1].answer or "", "chatbot answer"),
                            turn_number=len(kept) + 1,
                        )
                    )
            cand = await self._candidate(prompt, first, kept)
            flags: list[str] = []
            counts = self.counts
            if cand.verdict.valid:
                counts.accepted += 1
                if cand.regenerations:
                    counts.recovered += 1
                    flags.append("regenerated")
                else:
                    counts.first_try += 1
            elif self.settings.on_invalid == "flag" and cand.turn is not None:
                counts.flagged += 1
                flags.append("invalid")
            else:
                counts.dropped += 1
                self._last_dropped = True
                continue
            self._last_dropped = False
            gt = cand.turn
            assert gt is not None  # a valid verdict always has a parsed candidate
            unanswerable = is_unanswerable(gt.ground_truth)
            if unanswerable:
                counts.unanswerable += 1
                flags.append("unanswerable")
            return Turn(
                index=len(kept),
                rag_input=gt.rag_input,
                standalone_question=gt.standalone_question,
                ground_truth=gt.ground_truth,
                question_type=gt.question_type,
                relevant_doc_ids=[] if unanswerable else [self.spec.document_id],
                flags=flags,
                attack=self.role.attack.turn() if self.role.attack is not None else None,
                generation=TurnGeneration(
                    slot=slot, regenerations=cand.regenerations, validation=cand.verdict, rejected=cand.rejected
                ),
            )
        return None

    def finish(self, conv: Conversation) -> None:
        self.counts.turns = len(conv.turns)
        conv.validation = ValidationStats.for_role(self.role.name, self.counts)

    async def _candidate(self, prompt: Prompt, first: bool, kept: list[Turn]) -> _Candidate:
        """Generate, validate and regenerate one turn in the simulator chat (which it extends)."""
        rejected: list[RejectedCandidate] = []
        regenerations = 0
        while True:
            res = await self.client.complete_json(
                "simulator", list(self.chat), GeneratedTurn, prompt_id=prompt.id,
                prompt_version=self.role.prompt_version(prompt.version), seed=self.seed,
            )
            cand: GeneratedTurn | None = res.value
            if cand is None:
                self.chat.append({"role": "assistant", "content": res.raw or "{}"})
                verdict = TurnVerdict(
                    valid=False,
                    reason=f"the reply was not one JSON object with the required keys ({res.error or 'invalid'})",
                    failed_checks=[MALFORMED_OUTPUT],
                    source="parse",
                )
            else:
                if first:
                    cand = cand.model_copy(update={"question_type": "Initial", "standalone_question": cand.rag_input})
                self.chat.append({"role": "assistant", "content": cand.model_dump_json()})
                verdict = await validate_turn(
                    self.client,
                    title=self.title,
                    document=self.excerpt,
                    window_note=self.window_note,
                    history=kept,
                    candidate=cand,
                    first=first,
                    seed=self.seed,
                    role=self.role,
                )
            self.counts.record(verdict)
            if verdict.valid:
                return _Candidate(turn=cand, verdict=verdict, regenerations=regenerations, rejected=rejected)
            rejected.append(
                RejectedCandidate(
                    candidate=None if cand is None else cand.model_dump(),
                    reason=verdict.reason,
                    failed_checks=list(verdict.failed_checks),
                    source=verdict.source,
                )
            )
            if regenerations >= self.settings.max_regenerations:
                return _Candidate(turn=cand, verdict=verdict, regenerations=regenerations, rejected=rejected)
            regenerations += 1
            self.counts.regenerations += 1
            self.chat.extend(
                _render_user(
                    self._feedback,
                    checks=", ".join(verdict.failed_checks) or "unspecified",
                    reason=fence(verdict.reason, "validator feedback"),
                    turn_number=len(kept) + 1,
                    position=position_note(first),
                )
            )
            prompt = self._feedback


async def run_generated(
    spec: GeneratedSpec,
    document: Document,
    role: Role,
    target: AsyncTarget,
    client: LLMClient,
    settings: GeneratedConfig,
    run: int,
    probe: bool = False,
) -> Conversation:
    """Generate one conversation against the target, turn by turn.

    Target exceptions are recorded on the conversation (the finished turns
    are kept); LLM errors (``CacheMissError``, ``BudgetExceeded``,
    ``LLMCallError``) propagate.
    """
    user = SimulatorUser(spec, document, role, client, settings, run)
    return await run_conversation(user.conversation(run), user, target, probe=probe)
