"""The plugin deletes and overwrites only what it wrote (issue 32, cases 4 and 11): the report
dir's manifest says which report files an earlier run wrote; a symbolic link is replaced, never
written through (the baseline too); nothing is written inside ``.git``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from example_outcome import EXAMPLE, example_outcome

from pytest_ragdive.core.config import RagdiveConfig
from pytest_ragdive.core.errors import PathError
from pytest_ragdive.core.paths import check_writable
from pytest_ragdive.gate.baseline import load_baseline, write_baseline
from pytest_ragdive.reports.manifest import MANIFEST, owned
from pytest_ragdive.reports.write import clear_reports, write_reports

GOLDEN = '{"question": "q", "answer": "a"}\n'


def test_a_report_dir_holding_golden_data_keeps_it(tmp_path: Path) -> None:
    data = tmp_path / "data"  # report_dir = "data", beside the golden files
    data.mkdir()
    mine = {"ragdive_golden.jsonl": GOLDEN, "ragdive_core.json": "[]", "report-conversations-1.html": "mine",
            "notes.md": "x"}
    for name, text in mine.items():
        (data / name).write_text(text)
    clear_reports(data)  # the first run: no manifest yet
    written = write_reports(data, example_outcome())
    assert {p.name for p in written} <= (owned(data) or set())
    clear_reports(data)  # the next run
    for name, text in mine.items():
        assert (data / name).read_text() == text
    assert not any((data / n).exists() for n in ("results.json", "summary.md", "report.html", MANIFEST))


def test_the_manifest_is_data_only_names_of_report_files_are_deleted(tmp_path: Path) -> None:
    (tmp_path / "victim.txt").write_text("keep")
    rd = tmp_path / "reports"
    rd.mkdir()
    (rd / "golden.jsonl").write_text(GOLDEN)
    (rd / "summary.md").write_text("old")
    files = ["../victim.txt", str(tmp_path / "victim.txt"), "golden.jsonl", "summary.md", "sub/ragdive_x.json", 3]
    (rd / MANIFEST).write_text(json.dumps({"files": files}))
    removed = clear_reports(rd)
    assert [p.name for p in removed] == ["summary.md"]
    assert (tmp_path / "victim.txt").read_text() == "keep" and (rd / "golden.jsonl").read_text() == GOLDEN


def test_a_link_in_the_report_dir_is_replaced_never_written_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("keep")
    rd = tmp_path / "reports"
    rd.mkdir()
    (rd / "summary.md").symlink_to(outside)
    (rd / "report.html").symlink_to(outside)
    write_reports(rd, example_outcome())
    assert outside.read_text() == "keep"
    assert not (rd / "summary.md").is_symlink() and "ragdive" in (rd / "summary.md").read_text()
    (rd / "results.json").unlink()
    (rd / "results.json").symlink_to(outside)
    clear_reports(rd)  # removes the link, never its target
    assert outside.read_text() == "keep" and not (rd / "results.json").is_symlink()


def test_the_baseline_write_replaces_a_link_to_git_config(tmp_path: Path) -> None:
    git = tmp_path / ".git"
    git.mkdir()
    (git / "config").write_text("[core]\n")
    (tmp_path / "baseline.json").symlink_to(git / "config")
    cfg = RagdiveConfig(base_dir=str(tmp_path), baseline="baseline.json")
    path = cfg.path("baseline.json")
    assert path == tmp_path / "baseline.json"  # the link's own path, not where it points
    check_writable(tmp_path / "report", path)  # the link is replaced: fine
    write_baseline(path, load_baseline(EXAMPLE / "baseline.json"))
    assert (git / "config").read_text() == "[core]\n"
    assert not path.is_symlink() and load_baseline(path).suites


@pytest.mark.parametrize("where", ["report_dir", "baseline", "linked_report_dir"])
def test_a_path_inside_git_is_one_usage_error(tmp_path: Path, where: str) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "in-git").symlink_to(tmp_path / ".git")
    with pytest.raises(PathError, match=r"inside a \.git folder, which the plugin never writes") as e:
        if where == "report_dir":
            check_writable(report_dir=tmp_path / ".git" / "reports")
        elif where == "baseline":
            check_writable(baseline=tmp_path / ".git" / "config")
        else:
            check_writable(report_dir=tmp_path / "in-git" / "reports")
    assert "\n" not in str(e.value)
