"""Golden YAML read from the parser's events (issue 28): the same data as PyYAML's safe
loader, each row's first line, PyYAML's own composer for what the reader leaves alone,
and no node tree held (a large file's peak memory is a small multiple of its rows)."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import pytest
import yaml

from pytest_ragdive.core.errors import GoldenError
from pytest_ragdive.sources import golden

DOCS = [
    "base: &b {x: 1, y: [1, 2.5, true, null, 2026-01-01, 's', '007', 0x1f, ~, .inf]}\na: *b\nl: &l [a, b]\nm: *l\n'1': one\n",
    "- {1: a, 2.5: b, true: c, null: d, '': e}\n- []\n- {}\n- !!str 12\n",
    "conversations:\n  - id: a\n    turns:\n      - rag_input: |\n          two\n          lines\n        relevant_doc_ids: []\n  - ~\n",
    "base: &b {x: 1}\nc:\n  <<: *b\n  y: 2\n",  # a merge key: PyYAML's composer
    "rows: !!seq [!!map {a: 1}]\n",  # explicit collection tags: PyYAML's composer
    "",
    "---\n",
    "plain scalar\n",
]


@pytest.mark.parametrize("doc", DOCS)
def test_the_event_reader_builds_what_pyyaml_builds(doc: str, tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(doc)
    expected = yaml.safe_load(doc)
    try:
        got = golden._rows(path, ("conversations", "rows"))
    except GoldenError as e:
        assert not isinstance(expected, list | dict) or (isinstance(expected, dict) and not {"conversations", "rows"} & set(expected))
        assert "expected a list of rows" in str(e)
        return
    rows = expected if isinstance(expected, list) else expected.get("conversations", expected.get("rows"))
    assert [r for _, r, _ in got] == rows


def test_aliases_give_the_same_object_and_rows_their_own_lines(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("base: &b {rag_input: hi}\nconversations:\n  - id: a\n    turns: [*b, *b]\n\n  - id: b\n    turns:\n      - *b\n")
    rows = golden._rows(path, ("conversations",))
    assert [line for line, _, _ in rows] == [3, 6]
    first, second = rows[0][1], rows[1][1]
    assert first["turns"][0] is first["turns"][1] is second["turns"][0]


@pytest.mark.parametrize(("doc", "message"), [
    ("conversations:\n  - id: a\n   bad: [\n", r":3:\d+: invalid YAML"),
    ("conversations:\n  - *nope\n", "invalid YAML"),
    ("- a: 1\n---\n- b: 2\n", "invalid YAML: but found another document"),
    ("? [a, b]\n: 1\n", "invalid YAML"),
    ("- {x: !!python/name:os.system x}\n", "invalid YAML"),
])
def test_bad_yaml_is_one_line_naming_the_file(doc: str, message: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(doc)
    with pytest.raises(GoldenError, match=message) as e:
        golden._rows(path, ("conversations",))
    assert str(path) in str(e.value) and "\n" not in str(e.value)


def test_a_large_file_is_read_without_holding_a_node_tree(tmp_path: Path) -> None:
    """2,000 five-turn conversations: PyYAML's node tree (a node and two marks per value)
    took the peak to four times the rows the plans keep; read from events, under two."""
    convs = [{"id": f"c{i:05d}", "category": "billing", "turns": [
        {"rag_input": f"What about item {i} part {t}?", "ground_truth": f"Item {i} is covered by clause {t}.",
         "relevant_doc_ids": [f"doc-{i % 7}"], "standalone_question": f"What about item {i}?"} for t in range(5)]}
        for i in range(2_000)]
    path = tmp_path / "convs.yaml"
    path.write_text(yaml.safe_dump({"conversations": convs}, sort_keys=False))
    gc.collect()
    tracemalloc.start()
    rows = golden.load_conversations(path)
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(rows) == 2_000 and rows[1].turns[4].ground_truth == "Item 1 is covered by clause 4."
    assert peak < 2 * held, (peak / 1e6, held / 1e6)
