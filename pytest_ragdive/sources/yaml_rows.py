"""Golden YAML files read fast: each row with its first line, data built straight from the
parser's events (no node tree held), and the line of any key inside a row found again
when a validation error names one (:func:`error_line`, :class:`RowRef`)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import GoldenError, cut, fault
from ..core.memory import paused_gc
from ..core.paths import read_text

__all__ = ["RowRef", "error_line", "yaml_rows"]


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


def yaml_rows(path: Path, text: str, list_keys: tuple[str, ...]) -> list[tuple[int, Any, Any]]:
    """One parse (libyaml's C parser where PyYAML has it), data built from its events
    (:func:`_from_events`), each row with its first line and its :class:`RowRef`; a document
    that reader leaves alone is composed and constructed by PyYAML."""
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
    if data is None:
        raise GoldenError(f"{path}: the file is empty: expected a list of rows")
    if not isinstance(data, list):
        raise GoldenError(f"{path}:1: expected a list of rows")
    if not data:
        raise GoldenError(f"{path}: the list of rows is empty (add rows; golden cases can be drafted from "
                          "your documents: python -m pytest_ragdive draft-golden DOCS_DIR)")
    lines = (item_lines or {}).get(id(data), [])
    if len(lines) != len(data):
        lines = [1] * len(data)
    return [(line, row, RowRef(path, list_keys, i)) for i, (line, row) in enumerate(zip(lines, data, strict=True))]


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


@dataclass(frozen=True)
class RowRef:
    """Where a YAML row stands, to find the line of a key inside it once a validation error
    names one: the file is composed again then (the fast reader keeps no node tree, and an
    error is the rare case)."""

    path: Path
    list_keys: tuple[str, ...]
    index: int

    def node(self) -> Any:
        """The row's composed YAML node (None when the file no longer reads as it did)."""
        items = _composed_items(self.path, self.list_keys)
        return items[self.index] if 0 <= self.index < len(items) else None


def _composed_items(path: Path, list_keys: tuple[str, ...]) -> list[Any]:
    """The item nodes of a YAML file's list of rows (PyYAML's composer)."""
    import yaml

    try:
        loader = _loader_class()(read_text(path, GoldenError))
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except (yaml.YAMLError, GoldenError):
        return []
    if node is not None and isinstance(node.value, list) and node.value and isinstance(node.value[0], tuple):
        node = next((v for k, v in node.value if getattr(k, "value", None) in list_keys), None)
    return list(node.value) if node is not None and isinstance(node.value, list) else []


def error_line(node: Any, loc: tuple[Any, ...], default: int) -> int:
    """The line of the key a validation error points at (``turns.1.ground_truth``):
    the deepest node of ``loc`` the row's YAML node has (an unknown key is a key of
    its mapping; a missing one is reported at the mapping that lacks it). ``node``: the
    row's node, or its :class:`RowRef`."""
    if isinstance(node, RowRef):
        node = node.node()
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
