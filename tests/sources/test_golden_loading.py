"""Golden files: one parse with line numbers, linear planning, clear errors."""

from __future__ import annotations

import gc
import json
import time
from pathlib import Path

import pytest
import yaml
from factories import config

from pytest_ragdive.core import memory
from pytest_ragdive.core.config import RagdiveConfig
from pytest_ragdive.core.errors import GoldenError
from pytest_ragdive.run.planning import plan_all
from pytest_ragdive.sources import golden, yaml_rows


def _cfg(tmp_path: Path, **suite: object) -> RagdiveConfig:
    return config(tmp_path, suites={"core": suite})


def test_yaml_validation_error_names_the_rows_line(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(
        "cases:\n"
        "  - question_id: a\n"
        "    question: one?\n"
        "  - question_id: b\n"
        "    question: two?\n"
        "  - question_id: c\n"
        "    questoin: typo\n"
    )
    with pytest.raises(GoldenError) as e:
        golden.load_single_turn(f)
    msg = str(e.value)
    assert msg.startswith(f"{f}:6: ")
    assert "question: Field required" in msg and "\n" not in msg


def test_yaml_conversation_error_line_in_a_plain_list(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(
        "- id: ok\n  turns:\n    - rag_input: hi\n"
        "- id: empty\n  turns: []\n"
    )
    with pytest.raises(GoldenError, match=r"c\.yaml:5: turns: "):  # the line of the key at fault
        golden.load_conversations(f)


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("- question_id: a\n  question: [unclosed\n- question_id: b\n")
    with pytest.raises(GoldenError, match=r"bad\.yaml:\d+:\d+: invalid YAML"):
        golden.load_single_turn(f)


def test_yaml_duplicate_id_names_both_lines(tmp_path: Path) -> None:
    f = tmp_path / "d.yaml"
    f.write_text("- {question_id: a, question: x}\n- {question_id: b, question: y}\n- {question_id: a, question: z}\n")
    with pytest.raises(GoldenError, match=r"d\.yaml:3: duplicate id 'a' \(first at line 1\)"):
        golden.load_single_turn(f)


def test_yaml_and_jsonl_load_the_same_rows(tmp_path: Path) -> None:
    rows = [{"question_id": f"q{i}", "question": f"q {i}?", "expected_answer": "x: y", "relevant_doc_ids": ["d"]}
            for i in range(20)]
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"cases": rows}))
    (tmp_path / "s.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    assert golden.load_single_turn(tmp_path / "s.yaml") == golden.load_single_turn(tmp_path / "s.jsonl")


@pytest.mark.parametrize("doc", [
    "base: &b {x: 1, y: [1, 2.5, true, null, 2026-01-01, 's', '007', 0x1f]}\na: *b\nl: &l [a, b]\nm: *l\n'1': one\n",
    "base: &b {x: 1}\nc:\n  <<: *b\n  y: 2\n",
    "- question_id: a\n  question: |\n    two\n    lines\n  relevant_doc_ids: []\n- ~\n",
    "? [a, b]\n: unhashable\n",
])
def test_fast_construction_matches_pyyaml(doc: str) -> None:
    loader = yaml_rows._loader_class()(doc)
    try:
        node = loader.get_single_node()
        try:
            expected = yaml.safe_load(doc)
        except yaml.YAMLError:
            with pytest.raises(yaml.YAMLError, match="unhashable"):
                yaml_rows._construct(loader, node)
            return
        got = yaml_rows._construct(loader, node)
    finally:
        loader.dispose()
    assert got == expected
    if isinstance(got, dict) and "a" in got:
        assert got["a"] is got["base"]  # an alias is the same object, as PyYAML makes it


def test_c_loader_used_where_pyyaml_has_it() -> None:
    expected = yaml.CSafeLoader if getattr(yaml, "__with_libyaml__", False) else yaml.SafeLoader
    assert yaml_rows._loader_class() is expected


def test_paused_gc_restores_the_collector() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), memory.paused_gc():
        assert not gc.isenabled()
        raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with memory.paused_gc():
            pass
        assert not gc.isenabled()  # was off before: stays off
    finally:
        gc.enable()


def test_duplicate_ids_across_files_are_reported(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text('{"question_id": "x", "question": "?"}\n{"question_id": "y", "question": "?"}\n')
    (tmp_path / "b.jsonl").write_text('{"question_id": "y", "question": "?"}\n')
    with pytest.raises(GoldenError, match="ids used twice across its files: y"):
        plan_all(_cfg(tmp_path, single_turn=["a.jsonl", "b.jsonl"]), False, [])


def test_planning_is_linear_in_the_number_of_rows(tmp_path: Path) -> None:
    """Doubling the rows at most ~doubles the planning time (it was quadratic)."""

    def plan_time(n: int) -> float:
        f = tmp_path / f"s{n}.jsonl"
        f.write_text("\n".join(json.dumps({"question_id": f"q{i}", "question": "?"}) for i in range(n)))
        best = float("inf")
        for _ in range(3):
            t0 = time.process_time()
            plans = plan_all(_cfg(tmp_path, single_turn=[f.name]), False, [])
            best = min(best, time.process_time() - t0)
        assert len(plans) == n
        return best

    small, big = plan_time(2000), plan_time(8000)
    assert big < 8 * small + 0.05  # quadratic would be ~16x
