"""export-review writes bot text into review.csv as text (issue 32, case 11): a cell that a
spreadsheet would read as a formula starts with ``'``."""

from __future__ import annotations

import csv
from pathlib import Path

from pytest_ragdive.cli.review_export import COLUMNS, write_review
from pytest_ragdive.reports.csv_inert import inert_cell


def test_formula_like_cells_are_neutralised(tmp_path: Path) -> None:
    evil = ['=HYPERLINK("https://evil.example","x")', "+1+1", "-2+3", "@SUM(A1)", "\t=1", "plain = text"]
    rows = [{c: "" for c in COLUMNS} | {"item": f"core::c{i}#1", "level": "turn", "answer": a} for i, a in enumerate(evil)]
    path = tmp_path / "review.csv"
    write_review(path, rows)
    with path.open(encoding="utf-8", newline="") as fh:
        got = [r["answer"] for r in csv.DictReader(fh)]
    assert got == ["'" + a for a in evil[:-1]] + ["plain = text"]
    assert inert_cell("turn") == "turn" and inert_cell("") == ""
    assert inert_cell("-3") == "-3" and inert_cell("-0.25") == "-0.25"  # a plain number stays a number
