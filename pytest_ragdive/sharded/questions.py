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

Mechanical checks (:func:`check_question`), reported per question with file
and line:

- at least two shards; shard ids unique within the question; no empty or
  repeated shard; the question, its answer and its supporting ids non-empty;
- no shard contains the answer or an alias (as a run of normalised tokens);
- every content word of every shard occurs in the question, or is one of the
  connective words in :data:`ALLOWED_WORDS` (words that bind or frame a clue:
  "that", "also", "one"...). Words are compared after SQuAD normalisation and
  a light plural/verb-ending fold, so "plans" matches "plan".

Question ids are unique within a file (:func:`load_sharded`).
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core.errors import ShardedFileError
from ..metrics.lexical import STOPWORDS, normalize_answer, tokens
from ..sources.golden import _rows, error_line

__all__ = [
    "ALLOWED_WORDS",
    "Shard",
    "ShardedFileError",
    "ShardedQuestion",
    "check_question",
    "content_words",
    "contains_phrase",
    "load_sharded",
    "read_sharded",
]

#: words a shard may use although the question does not: they bind an earlier
#: entity or frame the clue ("that one", "it is also", "the other one"), never content
ALLOWED_WORDS: frozenset[str] = frozenset(
    """
    also another any anything both else each either first second third last other others one ones
    same some someone something thing things part question asking ask want wanted know looking
    need about regarding concerning it its is are was were be this that those these they them
    there here called named mean meant kind sort type
    not yes no please thanks ok okay well so now again too still
    """.split()
)

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
    notes: str = ""
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


def _fold(tok: str) -> str:
    """A light fold for comparing words: plural and common verb endings."""
    if tok.isdigit() or len(tok) <= 3:
        return tok
    for suffix in ("ies", "es", "s", "ing", "ed"):
        if tok.endswith(suffix) and len(tok) - len(suffix) >= 3:
            base = tok[: -len(suffix)]
            return base + "y" if suffix == "ies" else base
    return tok


def content_words(text: str) -> list[str]:
    """The folded normalised tokens of ``text`` minus stopwords, in order."""
    return [_fold(t) for t in tokens(text) if t not in STOPWORDS]


def contains_phrase(text: str, phrase: str) -> bool:
    """Whether the normalised tokens of ``phrase`` occur as a contiguous run in ``text``'s."""
    needle = normalize_answer(phrase)
    if not needle:
        return False
    return re.search(rf"(?:^| ){re.escape(needle)}(?: |$)", normalize_answer(text)) is not None


_ALLOWED_FOLDED = frozenset(_fold(w) for w in ALLOWED_WORDS)


def check_question(q: ShardedQuestion) -> list[str]:
    """Every mechanical check the question fails, one message each (empty when it passes)."""
    problems: list[str] = []
    if not tokens(q.question):
        problems.append("question is empty")
    if not tokens(q.answer):
        problems.append("answer is empty")
    if not q.supporting_doc_ids:
        problems.append("supporting_doc_ids is empty")
    if len(q.shards) < 2:
        problems.append(f"needs at least two shards, has {len(q.shards)}")
    ids = [s.shard_id for s in q.shards]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        problems.append(f"shard ids used twice: {', '.join(map(str, dup))}")
    seen: dict[str, int] = {}
    allowed = set(content_words(q.question)) | _ALLOWED_FOLDED
    for s in q.shards:
        norm = normalize_answer(s.shard)
        if not norm:
            problems.append(f"shard {s.shard_id} is empty")
            continue
        if norm in seen:
            problems.append(f"shard {s.shard_id} repeats shard {seen[norm]}")
        seen.setdefault(norm, s.shard_id)
        for ref in q.references:
            if contains_phrase(s.shard, ref):
                problems.append(f"shard {s.shard_id} contains the answer or an alias ({ref!r})")
                break
        foreign = [w for w in dict.fromkeys(content_words(s.shard)) if w not in allowed]
        if foreign:
            problems.append(f"shard {s.shard_id} uses words that are not in the question: {', '.join(foreign)}")
    return problems


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
