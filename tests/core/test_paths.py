"""check_writable: report dirs and baseline paths that cannot be written, found
before the first conversation (one line, a usage error)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from pytest_ragdive.core.errors import PathError, UsageError
from pytest_ragdive.core.paths import check_writable


def test_writable_places_pass_and_nothing_is_created(tmp_path: Path) -> None:
    check_writable(tmp_path / "new" / "report", tmp_path / "new" / "b.json")
    (tmp_path / "b.json").write_text("{}")
    check_writable(tmp_path, tmp_path / "b.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.json"]  # no probe file, no directory left
    assert (tmp_path / "b.json").read_text() == "{}"


@pytest.mark.parametrize(
    ("report", "baseline", "expected"),
    [
        ("afile", None, r"cannot write reports to .*afile \(--ragdive-report-dir / report_dir\): it is a file"),
        ("afile/reports", None, r"reports to .*afile/reports .*: .*afile is a file, not a directory"),
        ("afile/a/b", None, r"reports to .*afile/a/b .*: .*afile is a file, not a directory"),
        (None, "adir", r"cannot write the baseline .*adir \(--ragdive-baseline / baseline\): it is a directory"),
        (None, "afile/b.json", r"baseline .*afile/b.json .*: .*afile is a file, not a directory"),
    ],
)
def test_files_and_directories_in_the_wrong_place(tmp_path: Path, report: str | None, baseline: str | None, expected: str) -> None:
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir").mkdir()
    with pytest.raises(PathError, match=expected) as e:
        check_writable(tmp_path / report if report else None, tmp_path / baseline if baseline else None)
    assert isinstance(e.value, UsageError) and "\n" not in str(e.value)


@pytest.mark.skipif(not Path("/sys/kernel").is_dir(), reason="needs Linux sysfs")
def test_a_directory_nobody_can_write_even_root() -> None:
    # sysfs refuses new files even to root: the one unwritable directory a root test can honestly use
    with pytest.raises(PathError, match=r"reports to /sys/ragdive-report .*: /sys is not writable"):
        check_writable(Path("/sys/ragdive-report"))
    with pytest.raises(PathError, match=r"baseline /sys/b.json .*: /sys is not writable"):
        check_writable(None, Path("/sys/b.json"))


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_directory_and_file(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    (ro / "b.json").write_text("{}")
    (ro / "b.json").chmod(0o444)
    ro.chmod(0o555)
    try:
        with pytest.raises(PathError, match="is not writable"):
            check_writable(ro / "report")
        with pytest.raises(PathError, match="read-only"):
            check_writable(None, ro / "b.json")
    finally:
        ro.chmod(0o755)
