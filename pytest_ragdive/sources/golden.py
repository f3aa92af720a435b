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
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core.errors import GoldenError, one_line
from ..core.paths import read_text
from ..core.records import Conversation, Document, QuestionType, Turn


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SingleTurnCase(_Row):
    question_id: str
    question: str
    expected_answer: str = ""
    relevant_doc_ids: list[str] = Field(default_factory=list)
    category: str | None = None
    difficulty: str | None = None
    expected_citations: list[str] = Field(default_factory=list)
    negative_assertions: list[str] = Field(default_factory=list)


class ScriptedTurn(_Row):
    rag_input: str
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


def _rows(path: Path, list_keys: tuple[str, ...]) -> list[tuple[int, Any]]:
    """(line, row) pairs; line is 1-based (YAML: the row's first line)."""
    if not path.is_file():
        raise GoldenError(f"{path}: file not found")
    text = read_text(path, GoldenError)
    if path.suffix == ".jsonl":
        out: list[tuple[int, Any]] = []
        for no, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("//"):
                continue
            try:
                out.append((no, json.loads(line)))
            except json.JSONDecodeError as e:
                raise GoldenError(f"{path}:{no}: invalid JSON: {e.msg}") from None
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


class _Unusual(Exception):
    """A document the event reader leaves to PyYAML's own composer (merge keys, explicit
    tags, a key that is not a plain value, more than one document)."""


def _from_events(loader: Any) -> tuple[Any, dict[int, list[int]]]:
    """The data of a single YAML document built straight from the parser's events, with
    no node tree: libyaml's composed tree (a Python node and two marks per value) held
    some 20 KB a conversation at once, most of a large run's peak memory, where the
    events come and go one at a time. Returns the data and, for the document's top-level
    sequence and every sequence directly under its top-level mapping (by ``id``), the
    1-based first line of each item. Plain strings are taken as they are; every other
    scalar goes through the safe constructor; an alias gives the same object."""
    import yaml

    ev_t = yaml.events
    scalar_node = yaml.nodes.ScalarNode
    anchors: dict[str, Any] = {}
    lines: dict[int, list[int]] = {}
    # open containers: [container, the key waiting for its value (a mapping's), depth]
    stack: list[list[Any]] = []
    root: list[Any] = []
    no_key = object()

    def put(value: Any, start_line: int) -> None:
        if not stack:
            root.append(value)
            return
        top = stack[-1]
        container, depth = top[0], top[2]
        if type(container) is list:
            container.append(value)
            if depth <= 1:
                lines.setdefault(id(container), []).append(start_line)
        elif top[1] is no_key:
            if not isinstance(value, (str, int, float, bool)) and value is not None:
                raise _Unusual  # a key that is a mapping, a sequence or a date: PyYAML says what it makes of it
            top[1] = value
        else:
            container[top[1]] = value
            top[1] = no_key

    def tag_of(event: Any, kind: Any, value: Any) -> str:
        tag = event.tag
        if tag is None or tag == "!":
            return str(loader.resolve(kind, value, event.implicit))
        raise _Unusual

    documents = 0
    while True:
        event = loader.get_event()
        t = type(event)
        if t is ev_t.ScalarEvent:
            tag = tag_of(event, scalar_node, event.value)
            if tag == _MERGE_TAG:
                raise _Unusual
            if tag == _STR_TAG:
                value = event.value
            else:
                value = loader.construct_object(scalar_node(tag, event.value, event.start_mark, event.end_mark,
                                                            event.style), deep=True)
                loader.constructed_objects.clear()
            if event.anchor is not None:
                anchors[event.anchor] = value
            put(value, event.start_mark.line + 1)
        elif t is ev_t.MappingStartEvent or t is ev_t.SequenceStartEvent:
            mapping = t is ev_t.MappingStartEvent
            tag_of(event, yaml.nodes.MappingNode if mapping else yaml.nodes.SequenceNode, None)
            container: Any = {} if mapping else []
            if event.anchor is not None:
                anchors[event.anchor] = container
            put(container, event.start_mark.line + 1)
            stack.append([container, no_key, len(stack)])
        elif t is ev_t.MappingEndEvent or t is ev_t.SequenceEndEvent:
            stack.pop()
        elif t is ev_t.AliasEvent:
            if event.anchor not in anchors:
                raise _Unusual  # PyYAML names the unknown alias
            put(anchors[event.anchor], event.start_mark.line + 1)
        elif t is ev_t.DocumentStartEvent:
            documents += 1
            if documents > 1:
                raise _Unusual  # PyYAML says it expected a single document
        elif t is ev_t.StreamEndEvent:
            break
    return (root[0] if root else None), lines


def _yaml_rows(path: Path, text: str, list_keys: tuple[str, ...]) -> list[tuple[int, Any]]:
    """One parse (libyaml's C parser where PyYAML has it), data built from its events
    (:func:`_from_events`), each row with its first line; a document that reader leaves
    alone is composed and constructed by PyYAML."""
    import yaml

    item_lines: dict[int, list[int]] | None = None
    loader = _loader_class()(text)
    try:
        with paused_gc():
            try:
                data, item_lines = _from_events(loader)
            except _Unusual:
                loader.dispose()
                loader = _loader_class()(text)
                node = loader.get_single_node()
                data = _construct(loader, node) if node is not None else None
                item_lines = _node_lines(node, data) if node is not None else {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise GoldenError(f"{path}{line}: invalid YAML: {getattr(e, 'problem', None) or e}") from None
    finally:
        loader.dispose()
    if isinstance(data, dict):
        key = next((k for k in list_keys if k in data), None)
        if key is None:
            raise GoldenError(f"{path}:1: expected a list of rows or a mapping with one of {list_keys}")
        data = data[key]
    if not isinstance(data, list):
        raise GoldenError(f"{path}:1: expected a list of rows")
    lines = (item_lines or {}).get(id(data), [])
    if len(lines) != len(data):
        lines = [1] * len(data)
    return list(zip(lines, data, strict=True))


def _node_lines(root: Any, data: Any) -> dict[int, list[int]]:
    """:func:`_from_events`'s lines from a composed node tree: each item's first line, for
    the top-level sequence and the sequences directly under the top-level mapping."""
    out: dict[int, list[int]] = {}
    pairs = [(root, data)]
    if isinstance(data, dict) and isinstance(root.value, list):
        pairs += [(v, data.get(k.value)) for k, v in root.value if isinstance(k.value, str)]
    for node, value in pairs:
        if isinstance(value, list) and isinstance(node.value, list):
            out[id(value)] = [n.start_mark.line + 1 for n in node.value]
    return out


def _each(path: Path, model: type[_Row], list_keys: tuple[str, ...]) -> Iterator[Any]:
    """The file's rows, validated one at a time."""
    seen: dict[str, int] = {}
    for line, row in _rows(path, list_keys):
        try:
            rec = model.model_validate(row)
        except ValidationError as e:
            raise GoldenError(f"{path}:{line}: {one_line(e)}") from None
        rid = getattr(rec, "question_id", None) or getattr(rec, "id", None)
        if rid in seen:
            raise GoldenError(f"{path}:{line}: duplicate id {rid!r} (first at line {seen[rid]})")
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
