"""Sharded questions (the Lost-in-Conversation diagnosis, RAG variant): format, loader, checks.

A file is JSONL (one question a line) or YAML (a list, or a mapping with the
list under ``questions``). One question::

    {"id": "sq-business-rate-limit",
     "question": "How many API requests per minute does the plan with audit logs allow?",
     "answer": "600 requests per minute", "aliases": ["600"],
     "supporting_doc_ids": ["plans-and-pricing", "api-rate-limits"],
     "shards": [{"shard_id": 1, "shard": "How many API requests per minute does the plan allow?"},
                {"shard_id": 2, "shard": "The plan is the one with audit logs."}],
     "reviewed": true}

The first shard is the *intent*: the answer target and the relations, without
the identifying specifics; each later shard adds one clue, in dependency
order, and may bind an earlier entity ("that plan"). Shards keep the
question's own words. ``reviewed`` is false only in what the sharding helper
(``python -m pytest_ragdive shard``) proposes: such a question is not used
until a person sets it to true.

Checks (:mod:`pytest_ragdive.sharded.properties`: the sharding properties P1-P6 as far
as a rule can check them): :func:`check_question` gives the certain violations, which
make the loader refuse a reviewed question (file, line, question and the first problem);
:func:`flag_question` the likely ones, which the sharding helper writes into a proposal's
``flags`` for the reviewer. ``intermediate_entities`` (optional) names the entities the
question only resolves to while reasoning: no shard may name them (P2).

Question ids are unique within a file (:func:`load_sharded`).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core.errors import ShardedFileError
from ..sources.golden import _rows
from ..sources.yaml_rows import error_line
from .properties import ALLOWED_WORDS, check_question, contains_phrase, content_words, flag_question

__all__ = [
    "ALLOWED_WORDS",
    "Shard",
    "ShardedFileError",
    "ShardedQuestion",
    "check_question",
    "content_words",
    "contains_phrase",
    "flag_question",
    "load_sharded",
    "read_sharded",
]

_LIST_KEYS = ("questions", "sharded")


class Shard(BaseModel):
    model_config = ConfigDict(extra="forbid")

    shard_id: int = Field(ge=1)
    shard: str


class ShardedQuestion(BaseModel):
    """One fully specified question and its shards (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    question: str
    answer: str
    aliases: list[str] = Field(default_factory=list)
    supporting_doc_ids: list[str] = Field(default_factory=list)
    shards: list[Shard]
    reviewed: bool = True
    category: str | None = None
    intermediate_entities: list[str] = Field(default_factory=list)  # P2: no shard may name them
    notes: str = ""
    flags: list[str] = Field(default_factory=list)  # the helper's P1-P6 flags for the reviewer
    # where it was read from (not part of the file format)
    source: str = Field("", exclude=True)
    line: int = Field(0, exclude=True)

    @property
    def references(self) -> list[str]:
        """The answer and its aliases."""
        return [self.answer, *self.aliases]

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}" if self.source else f"question {self.id}"


def read_sharded(path: Path) -> list[ShardedQuestion]:
    """Parse a file (rows validated, ids unique) without the mechanical checks or the review filter."""
    out: list[ShardedQuestion] = []
    seen: dict[str, int] = {}
    for line, row, node in _rows(path, _LIST_KEYS):
        try:
            q = ShardedQuestion.model_validate(row)
        except ValidationError as e:
            err = e.errors()[0]
            loc = ".".join(str(x) for x in err["loc"]) or "row"
            where = error_line(node, tuple(err["loc"]), line) if node is not None else line
            raise ShardedFileError(f"{path}:{where}: {loc}: {err['msg']}") from None
        if q.id in seen:
            raise ShardedFileError(f"{path}:{line}: duplicate question id {q.id!r} (first at line {seen[q.id]})")
        seen[q.id] = line
        q.source, q.line = str(path), line
        out.append(q)
    return out


def load_sharded(path: Path, *, notes: list[str] | None = None) -> list[ShardedQuestion]:
    """The reviewed questions of a file, every one passing the mechanical checks.

    A failing reviewed question raises :class:`ShardedFileError` naming the file, line and
    question (the first problem, and how many more there are in the file).
    Unreviewed questions (``reviewed: false``) are left out unchecked, with a note.
    """
    questions = read_sharded(path)
    kept = [q for q in questions if q.reviewed]
    failures = [(q, p) for q in kept for p in check_question(q)]
    if failures:
        q, problem = failures[0]
        more = len(failures) - 1
        tail = f" (+{more} more problem{'s' if more > 1 else ''} in this file)" if more else ""
        raise ShardedFileError(f"{q.where}: question {q.id!r}: {problem}{tail}")
    if notes is not None and len(kept) < len(questions):
        notes.append(
            f"{path}: {len(questions) - len(kept)} sharded question(s) not reviewed yet (reviewed: false), left out"
        )
    return kept
