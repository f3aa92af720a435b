"""Offline sources: golden single-turn cases, scripted conversations, a corpus.

Each format is JSONL (one object a line) or YAML (a list of mappings, or a
mapping with one list under ``cases``/``conversations``/``documents``).
A malformed row raises :class:`GoldenError` naming the file and line.
"""

from __future__ import annotations

import gc
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
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

from ..core.errors import GoldenError, cut, fault, one_line, quote
from ..core.paths import read_text
from ..core.records import Conversation, Document, QuestionType, Turn
from ..metrics.assertions import Assertion, normalise


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
    # drafts written by `logs-to-suite` carry reviewed: false until a person checks them
    reviewed: bool = True
    turns: list[ScriptedTurn] = Field(min_length=1)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while a loader builds many small
    objects none of which is garbage: each collection walks the whole young
    heap, so a 100k-row file spends most of its time in the collector
    (13 MB of YAML: 8.5 s composing with it, 1.4 s without)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _rows(path: Path, list_keys: tuple[str, ...]) -> list[tuple[int, Any, Any]]:
    """(line, row, node) triples; line is 1-based (YAML: the row's first line; node: the
    row's composed YAML node, which knows the line of every key inside it; None for JSONL)."""
    if not path.is_file():
        raise GoldenError(f"{path}: file not found")
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
        return _yaml_rows(path, text, list_keys)
    raise GoldenError(f"{path}: unsupported format {path.suffix!r} (expected .jsonl, .yaml or .yml)")


def _loader_class() -> Any:
    """libyaml's CSafeLoader where PyYAML was built with it, else SafeLoader.

    The C extension is imported once per process; when ``yaml`` itself was
    imported again (pytester's in-process runs restore ``sys.modules``), the
    nodes it builds are of the old module's classes, which the new
    constructor does not recognise: fall back to the pure-Python loader then.
    """
    import yaml

    cyaml = sys.modules.get("yaml._yaml")
    if getattr(yaml, "CSafeLoader", None) is None or getattr(cyaml, "ScalarNode", None) is not yaml.nodes.ScalarNode:
        return yaml.SafeLoader
    return yaml.CSafeLoader


_STR_TAG = "tag:yaml.org,2002:str"
_MERGE_TAG = "tag:yaml.org,2002:merge"


def _construct(loader: Any, root: Any) -> Any:
    """The data of a composed YAML document: what ``loader.construct_document``
    builds, faster. Plain strings (most of a golden file) are taken from the
    nodes as they are; every other scalar goes through the safe constructor;
    an alias gives the same object, as PyYAML does. A document with merge keys
    (``<<``) is left to the loader itself."""
    import yaml

    scalar_t, seq_t = yaml.nodes.ScalarNode, yaml.nodes.SequenceNode
    built: dict[int, Any] = {}
    merges = False

    def build(node: Any) -> Any:
        nonlocal merges
        if type(node) is scalar_t:
            return node.value if node.tag == _STR_TAG else loader.construct_object(node, deep=True)
        done = built.get(id(node))
        if done is not None:
            return done
        if type(node) is seq_t:
            out_list: list[Any] = []
            built[id(node)] = out_list
            out_list.extend(build(n) for n in node.value)
            return out_list
        out: dict[Any, Any] = {}
        built[id(node)] = out
        for k, v in node.value:
            if k.tag == _MERGE_TAG:
                merges = True
                return out
            out[build(k)] = build(v)
        return out

    try:
        data = build(root)
    except TypeError:  # an unhashable key: the loader says so in its own words
        merges = True
    return loader.construct_document(root) if merges else data


def _yaml_rows(path: Path, text: str, list_keys: tuple[str, ...]) -> list[tuple[int, Any, Any]]:
    """One parse (libyaml's C parser where PyYAML has it): the composed node
    tree gives each row's line, the constructor builds the data from it."""
    import yaml

    loader = _loader_class()(text)
    try:
        with paused_gc():
            node = loader.get_single_node()
            data = _construct(loader, node) if node is not None else None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = str(getattr(e, "problem", None) or e)
        raise GoldenError(fault(
            path, f"invalid YAML: {cut(problem)}",
            line=mark.line + 1 if mark is not None else None, col=mark.column + 1 if mark is not None else None,
        )) from None
    finally:
        loader.dispose()
    if isinstance(data, dict):
        key = next((k for k in list_keys if k in data), None)
        if key is None:
            raise GoldenError(f"{path}:1: expected a list of rows or a mapping with one of {list_keys}")
        data = data[key]
        node = next((v for k, v in node.value if k.value == key), None) if node is not None else None
    if node is None and data is None:
        raise GoldenError(f"{path}: the file is empty: expected a list of rows")
    if not isinstance(data, list):
        raise GoldenError(f"{path}:1: expected a list of rows")
    if not data:
        raise GoldenError(f"{path}: the list of rows is empty")
    items = node.value if node is not None and isinstance(node.value, list) else []
    if len(items) != len(data):
        return [(1, row, None) for row in data]
    return [(n.start_mark.line + 1, row, n) for n, row in zip(items, data, strict=True)]


def error_line(node: Any, loc: tuple[Any, ...], default: int) -> int:
    """The line of the key a validation error points at (``turns.1.ground_truth``):
    the deepest node of ``loc`` the row's YAML node has (an unknown key is a key of
    its mapping; a missing one is reported at the mapping that lacks it)."""
    line = default
    for part in loc:
        value = getattr(node, "value", None)
        if isinstance(value, list) and value and isinstance(value[0], tuple):  # a mapping: (key, value) pairs
            hit = next(((k, v) for k, v in value if getattr(k, "value", None) == str(part)), None)
            if hit is None:
                return line
            line = hit[0].start_mark.line + 1
            node = hit[1]
        elif isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
            node = value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _parse(path: Path, model: type[_Row], list_keys: tuple[str, ...]) -> list[Any]:
    out = []
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
        out.append(rec)
    return out


def load_single_turn(path: Path) -> list[SingleTurnCase]:
    return _parse(path, SingleTurnCase, ("cases", "questions"))


def load_conversations(path: Path) -> list[ScriptedConversation]:
    convs: list[ScriptedConversation] = _parse(path, ScriptedConversation, ("conversations",))
    for c in convs:
        if not c.reviewed:
            raise GoldenError(
                f"{path}: conversation {c.id!r} is marked reviewed: false (a logs-to-suite draft): "
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
