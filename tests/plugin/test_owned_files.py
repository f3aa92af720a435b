"""End to end (issue 32, cases 4 and 11): a run whose report dir holds the golden data keeps
it; a baseline path that is a link to .git/config replaces the link and leaves the config; a
report dir inside .git is one usage error before anything runs."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


def test_report_dir_data_keeps_the_golden_files_and_a_linked_baseline_leaves_git_config(toy: pytest.Pytester) -> None:
    data = toy.path / "data"
    (data / "ragdive_extra.jsonl").write_text('{"question": "q"}\n')  # a golden file of the user's
    golden = {p.name: p.read_text() for p in data.iterdir()}
    git = toy.mkdir(".git")
    (git / "config").write_text("[core]\n\tbare = false\n")
    (toy.path / "b.json").symlink_to(git / "config")
    args = ("--ragdive-report-dir=data", "--ragdive-baseline=b.json", "--ragdive-update-baseline", "-p", "no:cacheprovider")
    for _ in range(2):  # the second run clears the first one's reports
        res = toy.runpytest(*args)
        assert res.ret == 0, res.stdout.str()
    for name, text in golden.items():
        assert (data / name).read_text() == text
    assert (data / "results.json").is_file()
    assert (git / "config").read_text() == "[core]\n\tbare = false\n"
    assert not (toy.path / "b.json").is_symlink()
    assert "baseline written" in res.stdout.str()


def test_a_report_dir_inside_git_is_a_usage_error(toy: pytest.Pytester) -> None:
    toy.mkdir(".git")
    res = toy.runpytest("--ragdive-suite=core", "--ragdive-report-dir=.git/reports", "-p", "no:cacheprovider")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*cannot write reports to *.git/reports*inside a .git folder, which the plugin never writes*"])
    assert not (toy.path / ".git" / "reports").exists()
