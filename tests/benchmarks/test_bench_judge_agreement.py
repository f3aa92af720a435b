"""The judge-agreement benchmark's plumbing against the fake server: the example's turns
and a tiny synthetic file in the MTRAG format (the project never reads the real data in
tests), judged in both modes; the figures mean nothing with placeholder verdicts."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from test_bench_human_agreement import _file

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_judge_agreement as bench  # noqa: E402

pytestmark = pytest.mark.slow  # runs the example's chatbot and a fake server


def test_both_modes_on_the_example_and_the_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench.main(["--fake", "--data", str(_file(tmp_path))])
    out = capsys.readouterr().out
    assert "## the example's core suite" in out and "## MTRAG" in out
    per_turn = re.findall(r"\| (per_metric|combined) \| ([\d.]+) \| (\d+) \| (\d+) \|", out)
    assert [m for m, *_ in per_turn] == ["per_metric", "combined"] * 2
    for mode, calls, requests, _tokens in per_turn:
        assert (float(calls) == 1.0) if mode == "combined" else (float(calls) > 1.0)
        assert int(requests) > 0
    # every metric has its agreement row in both tables, people's columns on the data only
    rows = re.findall(r"^\| (faithfulness|context_precision|context_recall|correctness) \|.*$", out, re.M)
    assert len(rows) == 8
    assert re.search(r"^\| correctness \| 20 \| [^|]+ \| 1\.000 \| [^|]+\(n=20\) \|", out, re.M)


def test_without_a_model_it_says_what_is_missing(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench.main(["--model", "", "--no-example"])
    assert "--model" in capsys.readouterr().err
