"""Offline sources: golden single-turn cases, scripted conversations, a corpus.

Each format is JSONL (one object a line) or YAML (a list of mappings, or a
mapping with one list under ``cases``/``conversations``/``documents``).
A malformed row raises :class:`GoldenError` naming the file and line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
)

from ..core.errors import GoldenError, fault, one_line, quote
from ..core.paths import read_text
from ..core.records import Conversation, Document, QuestionType, Turn
from ..metrics.assertions import Assertion, normalise
from .yaml_rows import error_line, yaml_rows


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank (the message sent to the chatbot)")
    return value


class _Asserted(_Row):
    """A row that may carry ``assert:``, the per-case checks of :mod:`pytest_ragdive.metrics.assertions`."""

    assertions: list[Assertion] = Field(default_factory=list, alias="assert")

    @field_validator("assertions", mode="before")
    @classmethod
    def _short_forms(cls, v: Any) -> Any:
        return normalise(v)

    @model_serializer(mode="wrap")
    def _without_empty_checks(self, handler: SerializerFunctionWrapHandler) -> Any:
        """A row without checks dumps as it did before ``assert:`` existed (its case hash in a
        baseline's golden fingerprint stays the same)."""
        data = handler(self)
        if not self.assertions and isinstance(data, dict):
            data.pop("assertions", None)
        return data


class SingleTurnCase(_Asserted):
    question_id: str
    question: Annotated[str, AfterValidator(_not_blank)]
    expected_answer: str = ""
    relevant_doc_ids: list[str] = Field(default_factory=list)
    category: str | None = None
    difficulty: str | None = None
    expected_citations: list[str] = Field(default_factory=list)
    negative_assertions: list[str] = Field(default_factory=list)


class ScriptedTurn(_Asserted):
    rag_input: Annotated[str, AfterValidator(_not_blank)]
    standalone_question: str = ""
    ground_truth: str = ""
    question_type: QuestionType = "Follow-up"
    relevant_doc_ids: list[str] = Field(default_factory=list)
    expected_citations: list[str] = Field(default_factory=list)
    negative_assertions: list[str] = Field(default_factory=list)


class ScriptedConversation(_Row):
    id: str
    title: str | None = None
    role: str | None = None
    document_id: str | None = None
    category: str | None = None
    difficulty: str | None = None
    # drafts written by `logs-to-suite` and `draft-golden` carry reviewed: false until a person checks them
    reviewed: bool = True
    turns: list[ScriptedTurn] = Field(min_length=1)


#: the largest golden (or corpus) file read: a file is read whole and parsed, several times its size
#: in memory; a larger one is refused with one line (split it)
MAX_GOLDEN_BYTES = 64 * 2**20


def _rows(path: Path, list_keys: tuple[str, ...]) -> list[tuple[int, Any, Any]]:
    """(line, row, where) triples; line is 1-based (YAML: the row's first line; where: the
    row's :class:`RowRef`, which finds the line of every key inside it; None for JSONL)."""
    if not path.is_file():
        raise GoldenError(f"{path}: file not found")
    size = path.stat().st_size
    if size > MAX_GOLDEN_BYTES:
        raise GoldenError(
            f"{path}: {size / 2**20:,.0f} MiB, more than the {MAX_GOLDEN_BYTES // 2**20} MiB a golden or corpus file "
            "may hold (it is read whole): split it into several files listed in the suite"
        )
    text = read_text(path, GoldenError)
    if path.suffix == ".jsonl":
        out: list[tuple[int, Any, Any]] = []
        for no, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("//"):
                continue
            try:
                out.append((no, json.loads(line), None))
            except json.JSONDecodeError as e:
                raise GoldenError(fault(path, f"invalid JSON: {e.msg}", line=no, col=e.colno)) from None
        if not out:
            what = "is empty" if not text else "has only blank lines" if not text.strip() else "has no rows (only comments)"
            raise GoldenError(f"{path}: the file {what}: expected one JSON object a line")
        return out
    if path.suffix in (".yaml", ".yml", ".json"):
        return yaml_rows(path, text, list_keys)
    raise GoldenError(f"{path}: unsupported format {path.suffix!r} (expected .jsonl, .yaml or .yml)")


def _each(path: Path, model: type[_Row], list_keys: tuple[str, ...]) -> Iterator[Any]:
    """The file's rows, validated one at a time."""
    seen: dict[str, int] = {}
    for line, row, node in _rows(path, list_keys):
        try:
            rec = model.model_validate(row)
        except ValidationError as e:
            where = error_line(node, tuple(e.errors()[0]["loc"]), line) if node is not None else line
            raise GoldenError(f"{path}:{where}: {one_line(e)}") from None
        rid = getattr(rec, "question_id", None) or getattr(rec, "id", None)
        if rid in seen:
            raise GoldenError(f"{path}:{line}: duplicate id {quote(rid)} (first at line {seen[rid]})")
        seen[str(rid)] = line
        yield rec


def _parse(path: Path, model: type[_Row], list_keys: tuple[str, ...]) -> list[Any]:
    return list(_each(path, model, list_keys))


def each_single_turn(path: Path) -> Iterator[SingleTurnCase]:
    """:func:`load_single_turn`'s rows one at a time (a caller that keeps none of them)."""
    return _each(path, SingleTurnCase, ("cases", "questions"))


def each_conversation(path: Path) -> Iterator[ScriptedConversation]:
    """The scripted conversations one at a time, unchecked for ``reviewed`` (a caller that keeps none of them)."""
    return _each(path, ScriptedConversation, ("conversations",))


def load_single_turn(path: Path) -> list[SingleTurnCase]:
    return _parse(path, SingleTurnCase, ("cases", "questions"))


def load_conversations(path: Path) -> list[ScriptedConversation]:
    convs: list[ScriptedConversation] = _parse(path, ScriptedConversation, ("conversations",))
    for c in convs:
        if not c.reviewed:
            raise GoldenError(
                f"{path}: conversation {c.id!r} is marked reviewed: false (a draft of logs-to-suite or draft-golden): "
                "check its ground truths, then set reviewed: true"
            )
    return convs


class _DocRow(_Row):
    id: str
    title: str = ""
    text: str


def load_corpus(path: Path) -> list[Document]:
    return [Document(id=d.id, title=d.title, text=d.text) for d in _parse(path, _DocRow, ("documents", "corpus"))]


def single_turn_conversation(case: SingleTurnCase, suite: str, run: int) -> Conversation:
    turn = Turn(
        index=0,
        rag_input=case.question,
        standalone_question=case.question,
        ground_truth=case.expected_answer,
        question_type="Single",
        relevant_doc_ids=case.relevant_doc_ids,
        expected_citations=case.expected_citations,
        negative_assertions=case.negative_assertions,
    )
    return Conversation(
        id=case.question_id,
        suite=suite,
        run=run,
        source="golden_single",
        category=case.category,
        difficulty=case.difficulty,
        turns=[turn],
    )


def scripted_conversation(conv: ScriptedConversation, suite: str, run: int, max_turns: int | None = None) -> Conversation:
    turns = []
    for i, t in enumerate(conv.turns[:max_turns] if max_turns else conv.turns):
        turns.append(
            Turn(
                index=i,
                rag_input=t.rag_input,
                standalone_question=t.standalone_question or (t.rag_input if i == 0 else ""),
                ground_truth=t.ground_truth,
                question_type="Initial" if i == 0 else t.question_type,
                relevant_doc_ids=t.relevant_doc_ids,
                expected_citations=t.expected_citations,
                negative_assertions=t.negative_assertions,
            )
        )
    return Conversation(
        id=conv.id,
        suite=suite,
        run=run,
        role=conv.role,
        source="golden",
        document_id=conv.document_id,
        category=conv.category,
        difficulty=conv.difficulty,
        turns=turns,
        meta={"title": conv.title} if conv.title else {},
    )
