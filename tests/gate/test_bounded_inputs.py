"""Files read back are bounded (issue 32, case 3): a gzip bomb as the baseline's answers file
costs its cap and gives a note, never a crash; a baseline or results file over the input cap is
one error line."""

from __future__ import annotations

import gzip
import hashlib
import tracemalloc
import zlib
from pathlib import Path

import pytest

from pytest_ragdive.core import paths
from pytest_ragdive.core.errors import BaselineError, ResultsError
from pytest_ragdive.core.results import AnswersRef, Baseline, BaselineAnswers
from pytest_ragdive.gate import answers as answers_mod
from pytest_ragdive.gate.baseline import load_baseline
from pytest_ragdive.reports.result_files import read_conversations


def _bomb(path: Path, expanded: int) -> bytes:
    """A gzip file of ``expanded`` zero bytes (a few kB on disk)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\0" * 2**20
    raw = b"".join(z.compress(block) for _ in range(expanded // len(block))) + z.flush()
    path.write_bytes(raw)
    return raw


def _baseline_naming(raw: bytes) -> Baseline:
    return Baseline(answers=AnswersRef(file="baseline.answers.json.gz", sha256=hashlib.sha256(raw).hexdigest(), run=0))


def test_a_gzip_bomb_as_the_answers_file_costs_its_cap_and_gives_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(answers_mod, "MAX_FILE_BYTES", 2**20, raising=False)
    raw = _bomb(tmp_path / "baseline.answers.json.gz", 48 * 2**20)
    assert len(raw) < 2**20  # small on disk, its sha256 entered in the baseline
    tracemalloc.start()
    try:
        got, note = answers_mod.load_answers(_baseline_naming(raw), tmp_path / "baseline.json")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got is None and note is not None and "over 1 MB" in note and "\n" not in note
    assert peak < 8 * 2**20  # never the 48 MB it expands to


def test_answers_within_the_cap_still_read(tmp_path: Path) -> None:
    data = gzip.compress(BaselineAnswers(run=0).model_dump_json().encode(), mtime=0)
    (tmp_path / "baseline.answers.json.gz").write_bytes(data)
    got, note = answers_mod.load_answers(_baseline_naming(data), tmp_path / "baseline.json")
    assert got is not None and note is None


def test_a_baseline_or_results_file_over_the_input_cap_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(paths, "MAX_INPUT_BYTES", 1000, raising=False)
    big = tmp_path / "baseline.json"
    big.write_text('{"suites": {}, "pad": "' + "x" * 5000 + '"}')
    with pytest.raises(BaselineError, match=r"^ragdive baseline .* is 0 MB, over the 0 MB an input file may hold") as e:
        load_baseline(big)
    assert "\n" not in str(e.value)
    results = tmp_path / "results.json"
    results.write_text('{"conversations": [], "pad": "' + "x" * 5000 + '"}')
    with pytest.raises(ResultsError, match="over the 0 MB an input file may hold"):
        read_conversations(results)


def test_a_log_line_without_an_end_is_never_held_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_ragdive.core.errors import LogFormatError
    from pytest_ragdive.online import logs

    monkeypatch.setattr(logs, "MAX_LINE_CHARS", 2**20, raising=False)
    log = tmp_path / "bot.jsonl"
    log.write_text("\n" + "x" * (3 * 2**20))
    with pytest.raises(LogFormatError, match=r"bot.jsonl:2: a line over 1 M characters"):
        logs.read_logs([log])


def test_a_review_cell_over_the_csv_field_limit_is_one_error_line(tmp_path: Path) -> None:
    from pytest_ragdive.cli.review_import import read_ratings
    from pytest_ragdive.core.errors import ReviewError

    f = tmp_path / "review.csv"
    f.write_text("item,level,correct,answerable,plausible,diverse,coherent,answer\n1,turn,,,,,," + "x" * 200_000 + "\n")
    with pytest.raises(ReviewError, match="is not a review CSV: field larger than field limit"):
        read_ratings([f])
