"""The RAG-DIVE Conversation Generator (CG): dynamic conversations with the target.

An LLM (client role ``simulator``) plays a user who has read one document of
the chatbot's knowledge base and talks with the chatbot in a given role
(persona). One chat per conversation: the first message carries the role and
the document (a long document: a window of chunks of at most
``window_chars``, stated in the prompt); each later message carries the
chatbot's actual last answer, so a wrong answer can draw a Correction turn and
a changed answer makes the rest of the conversation diverge.

Each turn is validated (:mod:`.validator`) before it is sent; an invalid turn
is regenerated in the same chat with the validator's reason, up to
``max_regenerations``; a turn still invalid is dropped (the generator is
asked for a different next turn; the turn budget counts slots, so the
conversation ends with fewer turns) or kept with the ``invalid`` flag,
per ``on_invalid``.

Determinism: documents are sampled with ``random.Random(settings.seed)`` and
roles assigned round robin (:func:`plan_generated`); every LLM call of one
conversation in run ``r`` uses ``seed = spec.seed + RUN_SEED_STRIDE * r``
(``spec.seed = settings.seed + i``), so runs differ and every call is a
cache key of its own: a rerun against an unchanged chatbot replays from the
cache with no LLM call.
"""

from __future__ import annotations

import random
import re
import time
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from ..config import GeneratedConfig
from ..errors import GenerationError
from ..prompts import FENCE_NOTE, Prompt, fence, load_prompt
from ..records import (
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
from ..target import AsyncTarget
from .roles import Role
from .validator import (
    MALFORMED_OUTPUT,
    UNANSWERABLE,
    GeneratedTurn,
    is_unanswerable,
    position_note,
    validate_turn,
)

if TYPE_CHECKING:
    from ..llm import LLMClient

__all__ = [
    "RUN_SEED_STRIDE",
    "UNANSWERABLE",
    "GeneratedSpec",
    "GeneratedTurn",
    "GenerationError",
    "conversation_seed",
    "document_window",
    "plan_generated",
    "run_generated",
]

RUN_SEED_STRIDE = 1000


class GeneratedSpec(BaseModel):
    """One planned generated conversation: which document, which role, how many turns."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    suite: str
    document_id: str
    role: str
    turns: int = Field(ge=1)
    seed: int


def _id_part(value: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", value).strip("_") or "doc"


def plan_generated(settings: GeneratedConfig, corpus: list[Document], suite: str) -> list[GeneratedSpec]:
    """Plan ``settings.conversations`` conversations: seeded document sampling, roles round robin.

    Documents are drawn without replacement (a seeded shuffle of the corpus;
    when more conversations than documents are asked for, further shuffles
    follow). Documents with blank text are skipped. The plan depends only on
    the settings and the corpus order, never on the run.
    """
    docs = [d for d in corpus if d.text.strip()]
    if not docs:
        raise GenerationError(f"generated part of suite {suite!r}: the corpus has no document with text")
    if not settings.roles:
        raise GenerationError(f"generated part of suite {suite!r}: no roles selected")
    rng = random.Random(settings.seed)
    order: list[int] = []
    while len(order) < settings.conversations:
        perm = list(range(len(docs)))
        rng.shuffle(perm)
        order.extend(perm)
    specs: list[GeneratedSpec] = []
    for i in range(settings.conversations):
        doc = docs[order[i]]
        role = settings.roles[i % len(settings.roles)]
        specs.append(
            GeneratedSpec(
                id=f"gen-{i:03d}-{_id_part(doc.id)}-{role}",
                suite=suite,
                document_id=doc.id,
                role=role,
                turns=settings.turns,
                seed=settings.seed + i,
            )
        )
    return specs


def conversation_seed(spec: GeneratedSpec, run: int) -> int:
    """The seed of every LLM call of this conversation in this run."""
    return spec.seed + RUN_SEED_STRIDE * run


# --------------------------------------------------------------------------
# document windows


def _chunk_spans(text: str, chunk_max: int) -> list[tuple[int, int]]:
    """(start, end) spans of paragraphs, split at sentences, then at spaces, to at most chunk_max chars."""
    spans: list[tuple[int, int]] = []
    for para in re.finditer(r"\S(?:.*?\S)?(?=\s*\n\s*\n|\s*$)", text, re.DOTALL):
        pieces = [(para.start(), para.end())]
        if para.end() - para.start() > chunk_max:
            pieces = []
            for sent in re.finditer(r"\S.*?(?:[.!?](?=\s)|$)", text[para.start() : para.end()], re.DOTALL):
                pieces.append((para.start() + sent.start(), para.start() + sent.end()))
        for a, b in pieces:
            while b - a > chunk_max:
                cut = text.rfind(" ", a + 1, a + chunk_max)
                if cut <= a:
                    cut = a + chunk_max
                spans.append((a, cut))
                a = cut
                while a < b and text[a].isspace():
                    a += 1
            if b > a:
                spans.append((a, b))
    return spans


def document_window(text: str, max_chars: int, seed: int) -> tuple[int, int]:
    """(start, end) of the part of the document the generator sees.

    A document of at most ``max_chars`` is seen whole. A longer one is cut
    into chunks (paragraphs, sentences, at most ``max_chars // 4`` each) and
    a window of consecutive chunks of at most ``max_chars`` characters is
    chosen: the first chunk at a seeded random position, extended forward,
    then backward. The same seed gives the same window (runs of one planned
    conversation share it).
    """
    if len(text) <= max_chars:
        return 0, len(text)
    spans = _chunk_spans(text, max(50, max_chars // 4))
    if not spans:
        return 0, min(len(text), max_chars)
    rng = random.Random(seed)
    i = j = rng.randrange(len(spans))
    while j + 1 < len(spans) and spans[j + 1][1] - spans[i][0] <= max_chars:
        j += 1
    while i > 0 and spans[j][1] - spans[i - 1][0] <= max_chars:
        i -= 1
    return spans[i][0], spans[j][1]


def _window_note(start: int, end: int, total: int) -> str:
    if start == 0 and end == total:
        return ""
    return (
        f" (an excerpt: characters {start}-{end} of a {total}-character document; "
        "ask only about what this excerpt says)"
    )


# --------------------------------------------------------------------------
# the conversation loop


def _render_user(prompt: Prompt, **values: Any) -> list[dict[str, str]]:
    return [m for m in prompt.render(**values) if m["role"] == "user"]


class _Candidate(BaseModel):
    turn: GeneratedTurn | None
    verdict: TurnVerdict
    regenerations: int
    rejected: list[dict[str, Any]]


async def _next_turn(
    *,
    chat: list[dict[str, str]],
    prompt: Prompt,
    client: LLMClient,
    settings: GeneratedConfig,
    counts: ValidationCounts,
    seed: int,
    first: bool,
    kept: list[Turn],
    title: str,
    excerpt: str,
    window_note: str,
) -> _Candidate:
    """Generate, validate and regenerate one turn in the generator chat (which it extends)."""
    feedback = load_prompt("generator_feedback")
    rejected: list[dict[str, Any]] = []
    regenerations = 0
    while True:
        res = await client.complete_json(
            "simulator", list(chat), GeneratedTurn, prompt_id=prompt.id, prompt_version=prompt.version, seed=seed
        )
        cand: GeneratedTurn | None = res.value
        if cand is None:
            chat.append({"role": "assistant", "content": res.raw or "{}"})
            verdict = TurnVerdict(
                valid=False,
                reason=f"the reply was not one JSON object with the required keys ({res.error or 'invalid'})",
                failed_checks=[MALFORMED_OUTPUT],
                source="parse",
            )
        else:
            if first:
                cand = cand.model_copy(update={"question_type": "Initial", "standalone_question": cand.rag_input})
            chat.append({"role": "assistant", "content": cand.model_dump_json()})
            verdict = await validate_turn(
                client,
                title=title,
                document=excerpt,
                window_note=window_note,
                history=kept,
                candidate=cand,
                first=first,
                seed=seed,
            )
        counts.record(verdict)
        if verdict.valid:
            return _Candidate(turn=cand, verdict=verdict, regenerations=regenerations, rejected=rejected)
        rejected.append(
            {
                "candidate": None if cand is None else cand.model_dump(),
                "reason": verdict.reason,
                "failed_checks": list(verdict.failed_checks),
                "source": verdict.source,
            }
        )
        if regenerations >= settings.max_regenerations:
            return _Candidate(turn=cand, verdict=verdict, regenerations=regenerations, rejected=rejected)
        regenerations += 1
        counts.regenerations += 1
        chat.extend(
            _render_user(
                feedback,
                checks=", ".join(verdict.failed_checks) or "unspecified",
                reason=fence(verdict.reason, "validator feedback"),
                turn_number=len(kept) + 1,
                position=position_note(first),
            )
        )
        prompt = feedback


async def run_generated(
    spec: GeneratedSpec,
    document: Document,
    role: Role,
    target: AsyncTarget,
    client: LLMClient,
    settings: GeneratedConfig,
    run: int,
) -> Conversation:
    """Generate one conversation against the target, turn by turn (see the module doc).

    Target exceptions propagate; LLM errors (``CacheMissError``,
    ``BudgetExceeded``, ``LLMCallError``) propagate too.
    """
    if document.id != spec.document_id:
        raise GenerationError(f"{spec.id}: planned for document {spec.document_id!r}, got {document.id!r}")
    seed = conversation_seed(spec, run)
    start, end = document_window(document.text, settings.window_chars, spec.seed)
    excerpt = document.text[start:end]
    window_note = _window_note(start, end, len(document.text))
    title = document.title or document.id

    first_prompt = load_prompt("generator_first")
    next_prompt = load_prompt("generator_next")
    skip_prompt = load_prompt("generator_skip")
    chat: list[dict[str, str]] = first_prompt.render(
        role_name=role.name,
        role_instructions=role.instructions,
        fence_note=FENCE_NOTE,
        title=title,
        window_note=window_note,
        document=fence(excerpt, "document"),
    )
    prompt = first_prompt
    counts = ValidationCounts()
    kept: list[Turn] = []
    target_error: tuple[BaseException, int] | None = None
    history: list[dict[str, str]] = []
    last_dropped = False

    for slot in range(spec.turns):
        first = not kept
        if slot > 0:
            if last_dropped:
                prompt = skip_prompt
                chat.extend(_render_user(skip_prompt, turn_number=len(kept) + 1, position=position_note(first)))
            else:
                prompt = next_prompt
                chat.extend(
                    _render_user(
                        next_prompt,
                        answer=fence(kept[-1].answer or "", "chatbot answer"),
                        turn_number=len(kept) + 1,
                    )
                )
        cand = await _next_turn(
            chat=chat,
            prompt=prompt,
            client=client,
            settings=settings,
            counts=counts,
            seed=seed,
            first=first,
            kept=kept,
            title=title,
            excerpt=excerpt,
            window_note=window_note,
        )
        flags: list[str] = []
        if cand.verdict.valid:
            counts.accepted += 1
            if cand.regenerations:
                counts.recovered += 1
                flags.append("regenerated")
            else:
                counts.first_try += 1
            if cand.verdict.source == "validator_error":
                flags.append("unvalidated")
        elif settings.on_invalid == "flag" and cand.turn is not None:
            counts.flagged += 1
            flags.append("invalid")
        else:
            counts.dropped += 1
            last_dropped = True
            continue
        last_dropped = False
        gt = cand.turn
        assert gt is not None  # a valid verdict always has a parsed candidate
        unanswerable = is_unanswerable(gt.ground_truth)
        if unanswerable:
            counts.unanswerable += 1
            flags.append("unanswerable")
        turn = Turn(
            index=len(kept),
            rag_input=gt.rag_input,
            standalone_question=gt.standalone_question,
            ground_truth=gt.ground_truth,
            question_type=gt.question_type,
            relevant_doc_ids=[] if unanswerable else [document.id],
            flags=flags,
            generation=TurnGeneration(
                slot=slot,
                regenerations=cand.regenerations,
                validation=cand.verdict,
                rejected=[RejectedCandidate.model_validate(r) for r in cand.rejected],
            ),
        )
        history.append({"role": "user", "content": turn.rag_input})
        t0 = time.perf_counter()
        try:
            resp = await target([dict(m) for m in history])
        except (Exception, SystemExit, KeyboardInterrupt) as exc:  # noqa: BLE001 - keep the finished turns
            target_error = (exc, len(kept) + 1)
            break
        turn.latency_s = round(time.perf_counter() - t0, 6)
        turn.answer = resp.answer
        turn.contexts = list(resp.contexts)
        turn.citations = list(resp.citations)
        history.append({"role": "assistant", "content": resp.answer})
        kept.append(turn)
        counts.turns += 1

    stats = ValidationStats.for_role(role.name, counts)
    conv = Conversation(
        id=spec.id,
        suite=spec.suite,
        run=run,
        role=role.name,
        source="generated",
        document_id=document.id,
        turns=kept,
        validation=stats,
        window=DocWindow(start=start, end=end, of=len(document.text)),
        seed=seed,
        planned_turns=spec.turns,
    )
    if target_error is not None:
        from ..runner import record_error

        record_error(conv, target_error[0], f"turn {target_error[1]}")
    return conv
