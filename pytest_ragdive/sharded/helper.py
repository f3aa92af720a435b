"""Proposing shards for fully specified questions (the ``shard`` command, :mod:`pytest_ragdive.cli.shard`).

The study's two-step procedure, each step one LLM call (role ``simulator`` at
temperature 0, versioned prompts ``shard_segment`` and ``shard_intent``, cached
like every call):

1. segment the question into non-overlapping information units;
2. pick the segment that states the objective and rewrite it as the opening
   turn (the intent shard); the other segments, in order, are the later shards.

Every proposal is checked against the sharding properties P1-P6
(:mod:`pytest_ragdive.sharded.properties`): the certain violations
(:func:`~pytest_ragdive.sharded.properties.check_question`) are summed up in ``notes``; the
likely ones (:func:`~pytest_ragdive.sharded.properties.flag_question`) and a third,
judged step (prompt ``shard_review``, role ``judge``: information dropped or added, an
intermediate entity named, two clues packed into one shard) go to ``flags``, each naming
its property; ``notes`` also lists what only a person can check
(:data:`~pytest_ragdive.sharded.properties.REVIEW_ONLY`). It is written with ``reviewed: false``.
Nothing it writes is used until a person edits the shards where needed and
sets ``reviewed: true``; rows of the output file that are already reviewed are
kept as they are (their questions are not sharded again).

Input rows: ``id``/``question``/``answer``/``aliases``/``supporting_doc_ids``,
or the golden single-turn fields ``question_id``/``expected_answer``/``relevant_doc_ids``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core.errors import GoldenError, ShardInputError
from ..llm.prompts import FENCE_NOTE, fence, load_prompt
from ..sources.golden import _rows
from ..sources.yaml_rows import error_line
from .properties import REVIEW_ONLY, check_question, flag_question
from .questions import Shard, ShardedQuestion

__all__ = ["propose", "read_inputs"]


class _Input(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str | None = None
    question_id: str | None = None
    question: str
    answer: str | None = None
    expected_answer: str | None = None
    aliases: list[str] = Field(default_factory=list)
    supporting_doc_ids: list[str] = Field(default_factory=list)
    relevant_doc_ids: list[str] = Field(default_factory=list)
    category: str | None = None


class _Segments(BaseModel):
    segments: list[str] = Field(min_length=1)


class _Intent(BaseModel):
    intent_index: int
    opening: str = Field(min_length=1)


class _Review(BaseModel):
    dropped: list[str] = Field(default_factory=list)
    added: list[str] = Field(default_factory=list)
    intermediate: list[str] = Field(default_factory=list)
    packed: list[int] = Field(default_factory=list)
    reason: str = ""


async def review(client: Any, q: ShardedQuestion) -> list[str]:
    """The judged check of a proposal (prompt ``shard_review``): one flag per finding, each
    naming its property; a flag saying so when the judge's output is unusable."""
    p = load_prompt("shard_review")
    listing = "\n".join(f"{s.shard_id}: {s.shard}" for s in q.shards)
    res = await client.complete_json(
        "judge",
        p.render(fence_note=FENCE_NOTE, question=fence(q.question, "question"), answer=fence(q.answer, "answer"),
                 shards=fence(listing, "shards")),
        _Review, prompt_id=p.id, prompt_version=p.version,
    )
    if res.value is None:
        return [f"judged: the review was unusable ({res.error}); check P1, P2 and P5 by hand"]
    r = res.value
    ids = {s.shard_id for s in q.shards[1:]}
    flags = [f"judged P1: no shard carries {x!r}" for x in r.dropped]
    flags += [f"judged P1: a shard adds {x!r}, which the question does not state" for x in r.added]
    flags += [f"judged P2: a shard names the intermediate entity {x!r}" for x in r.intermediate]
    flags += [f"judged P5: shard {i} packs more than one clue" for i in r.packed if i in ids]
    return flags


def read_inputs(path: Path) -> list[tuple[int, _Input]]:
    out: list[tuple[int, _Input]] = []
    try:
        rows = _rows(path, ("questions", "cases"))
    except GoldenError as e:
        raise ShardInputError(str(e)) from None
    for line, row, node in rows:
        try:
            item = _Input.model_validate(row)
        except ValidationError as e:
            err = e.errors()[0]
            where = error_line(node, tuple(err["loc"]), line) if node is not None else line
            raise ShardInputError(f"{path}:{where}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
        if not (item.id or item.question_id) or not (item.answer or item.expected_answer):
            raise ShardInputError(f"{path}:{line}: a question needs an id and an answer")
        out.append((line, item))
    return out


async def propose(client: Any, item: _Input) -> ShardedQuestion:
    """One question's proposal (``reviewed: false``; ``notes`` says what the checks found)."""
    qid = item.id or item.question_id or ""
    base = ShardedQuestion(
        id=qid,
        question=item.question,
        answer=item.answer or item.expected_answer or "",
        aliases=item.aliases,
        supporting_doc_ids=item.supporting_doc_ids or item.relevant_doc_ids,
        shards=[],
        reviewed=False,
        category=item.category,
    )
    seg_p = load_prompt("shard_segment")
    res = await client.complete_json(
        "simulator", seg_p.render(fence_note=FENCE_NOTE, question=fence(item.question, "question")), _Segments,
        prompt_id=seg_p.id, prompt_version=seg_p.version,
    )
    if res.value is None:
        base.notes = f"segmentation failed: {res.error}"
        return base
    segments = [s.strip() for s in res.value.segments if s.strip()]
    int_p = load_prompt("shard_intent")
    listing = "\n".join(f"{i}: {s}" for i, s in enumerate(segments))
    res2 = await client.complete_json(
        "simulator",
        int_p.render(fence_note=FENCE_NOTE, question=fence(item.question, "question"), segments=fence(listing, "segments")),
        _Intent, prompt_id=int_p.id, prompt_version=int_p.version,
    )
    if res2.value is None or not 0 <= res2.value.intent_index < len(segments):
        base.notes = f"intent selection failed: {res2.error or 'index out of range'}"
        return base
    rest = [s for i, s in enumerate(segments) if i != res2.value.intent_index]
    texts = [res2.value.opening.strip(), *rest]
    base.shards = [Shard(shard_id=i, shard=t) for i, t in enumerate(texts, 1)]
    problems = check_question(base)
    base.flags = [*flag_question(base), *await review(client, base)]
    head = ("fails the mechanical checks: " + "; ".join(problems)) if problems else "passes the mechanical checks"
    flagged = f"; {len(base.flags)} flag(s) to look at (flags)" if base.flags else ""
    base.notes = f"{head}{flagged}; a person checks: " + " ".join(REVIEW_ONLY) + "; then set reviewed: true"
    return base


