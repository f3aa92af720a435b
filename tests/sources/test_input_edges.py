"""Issue 22 (6, 7, 8): empty inputs and bounded error lines.

- An empty golden JSONL (0 bytes, or only blank lines) is a usage error like an
  empty YAML file (before: zero rows, and a gate that passed on nothing).
- A blank ``rag_input`` or single-turn ``question`` is a file:line error (before:
  sent to the bot, and the item passed).
- An error line that quotes input cuts it at ~200 characters with its length and
  names file:line:col (before: a truncated baseline gave a 48 KB line, a BOM
  baseline 94 KB, a 1 MB string in a golden list field a 1 MB line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import PYPROJECT

from pytest_ragdive.core.config import load_config
from pytest_ragdive.core.errors import BaselineError, ConfigError, GoldenError, fault, quote
from pytest_ragdive.gate.baseline import load_baseline
from pytest_ragdive.sources import golden

ROOT = Path(__file__).resolve().parents[2]
BASELINE = (ROOT / "example_project" / "baseline.json").read_text(encoding="utf-8")
MAX_LINE = 600  # an error line is at most about this long, whatever the input


@pytest.mark.parametrize("content", ["", "\n\n   \n", "// only a comment\n\n"], ids=["0-bytes", "blank-lines", "comments"])
def test_an_empty_jsonl_is_an_error(tmp_path: Path, content: str) -> None:
    f = tmp_path / "single.jsonl"
    f.write_text(content)
    with pytest.raises(GoldenError, match=r"single\.jsonl: the file (is empty|has only blank lines|has no rows)"):
        golden.load_single_turn(f)
    with pytest.raises(GoldenError):
        golden.load_conversations(f)
    with pytest.raises(GoldenError):
        golden.load_corpus(f)


@pytest.mark.parametrize("content", ["", "[]\n", "cases: []\n"])
def test_an_empty_yaml_is_an_error(tmp_path: Path, content: str) -> None:
    f = tmp_path / "single.yaml"
    f.write_text(content)
    with pytest.raises(GoldenError, match=r"single\.yaml: the (file is empty|list of rows is empty)"):
        golden.load_single_turn(f)


@pytest.mark.parametrize("blank", ["", "   ", "\n\t"])
def test_a_blank_question_or_rag_input_names_file_and_line(tmp_path: Path, blank: str) -> None:
    f = tmp_path / "single.jsonl"
    f.write_text(json.dumps({"question_id": "a", "question": "fine?"}) + "\n"
                 + json.dumps({"question_id": "b", "question": blank}) + "\n")
    with pytest.raises(GoldenError, match=r"single\.jsonl:2: question: must not be blank"):
        golden.load_single_turn(f)
    c = tmp_path / "convs.yaml"
    c.write_text(f"- id: c1\n  turns:\n    - rag_input: hi\n    - rag_input: {json.dumps(blank)}\n")
    with pytest.raises(GoldenError, match=r"convs\.yaml:4: turns\.1\.rag_input: must not be blank"):  # the key's line
        golden.load_conversations(c)


def test_the_run_refuses_an_empty_golden_file_and_a_blank_question(toy: pytest.Pytester) -> None:
    single = toy.path / "data" / "single.jsonl"
    single.write_text("\n\n")
    res = toy.runpytest("--ragdive-suite=core")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines([f"*{single}: the file has only blank lines*"])
    single.write_text(json.dumps({"question_id": "q", "question": " "}) + "\n")
    res = toy.runpytest("--ragdive-suite=core")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines([f"*{single}:1: question: must not be blank*"])
    assert "Traceback" not in res.stdout.str() + res.stderr.str()


def test_quote_cuts_long_input_with_its_length() -> None:
    assert quote("short") == "'short'"
    big = quote("x" * 1_000_000)
    assert len(big) < 250 and big.endswith("... (1000000 characters)")
    assert fault("f.json", "bad", line=3, col=7, got=b"y" * 5000).startswith("f.json:3:7: bad, got b'yyy")
    assert fault("f.json", "bad") == "f.json: bad"


def _baseline_error(path: Path) -> str:
    with pytest.raises(BaselineError) as e:
        load_baseline(path)
    msg = str(e.value)
    assert "\n" not in msg and len(msg) < MAX_LINE, (len(msg), msg[:300])
    return msg


def test_a_truncated_baseline_is_one_short_line_with_line_and_column(tmp_path: Path) -> None:
    f = tmp_path / "b.json"
    f.write_text(BASELINE[: len(BASELINE) // 2])
    msg = _baseline_error(f)
    assert msg.startswith(f"ragdive baseline {f}:") and "invalid JSON" in msg and "truncated?" in msg
    line, col = msg.split(f"{f}:", 1)[1].split(":")[:2]
    assert int(line) > 1 and int(col) >= 1


def test_a_bom_baseline_is_one_short_line(tmp_path: Path) -> None:
    f = tmp_path / "b.json"
    f.write_bytes(b"\xef\xbb\xbf" + BASELINE.encode())
    assert _baseline_error(f) == f"ragdive baseline {f}:1:1: starts with a byte order mark (U+FEFF): save it as UTF-8 without one"


def test_a_megabyte_value_in_a_baseline_is_cut(tmp_path: Path) -> None:
    data = json.loads(BASELINE)
    data["format_version"] = "9" * 1_000_000
    f = tmp_path / "b.json"
    f.write_text(json.dumps(data))
    assert "(1000000 characters)" in _baseline_error(f)


def test_a_megabyte_string_in_a_golden_list_field_is_cut(tmp_path: Path) -> None:
    f = tmp_path / "single.jsonl"
    f.write_text(json.dumps({"question_id": "q", "question": "ok?", "relevant_doc_ids": "d" * 1_000_000}) + "\n")
    with pytest.raises(GoldenError) as e:
        golden.load_single_turn(f)
    msg = str(e.value)
    assert len(msg) < MAX_LINE and msg.startswith(f"{f}:1: relevant_doc_ids:") and "(1000000 characters)" in msg
    y = tmp_path / "c.yaml"
    y.write_text("- id: c\n  turns:\n    - rag_input: hi\n      relevant_doc_ids: " + "e" * 1_000_000 + "\n")
    with pytest.raises(GoldenError) as e:
        golden.load_conversations(y)
    assert len(str(e.value)) < MAX_LINE and "(1000000 characters)" in str(e.value)


def test_a_jsonl_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    f = tmp_path / "single.jsonl"
    f.write_text(json.dumps({"question_id": "a", "question": "fine?"}) + "\n" + '{"question_id": "b", ' + "x" * 100_000 + "\n")
    with pytest.raises(GoldenError, match=r"single\.jsonl:2:22: invalid JSON: ") as e:
        golden.load_single_turn(f)
    assert len(str(e.value)) < MAX_LINE


def test_a_megabyte_config_value_or_key_is_cut(tmp_path: Path) -> None:
    f = tmp_path / "pyproject.toml"
    f.write_text(PYPROJECT.format(extra=f'concurrency = "{"7" * 1_000_000}"'))
    with pytest.raises(ConfigError) as e:
        load_config(f)
    assert len(str(e.value)) < MAX_LINE and "key 'concurrency'" in str(e.value) and "(1000000 characters)" in str(e.value)
    f.write_text(PYPROJECT.format(extra=f'{"k" * 100_000} = 1'))
    with pytest.raises(ConfigError) as e:
        load_config(f)
    assert len(str(e.value)) < 2000 and "unknown key 'kkk" in str(e.value)
