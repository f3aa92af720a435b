"""Issue 22 (9): every command maps bad input (not UTF-8, not JSON, a missing file,
a directory, the wrong kind of file) to one line and exit 4, with no traceback
unless ``ragdive --debug``; a closed standard output (``| head``) ends the command
quietly with 141. Before, ``gate`` and ``score-logs`` on a non-UTF-8 file printed a
Python traceback and exited 1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_ragdive.cli import EXIT_BROKEN_PIPE, describe, main

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "example_project" / "baseline.json"


def _inputs(tmp: Path) -> dict[str, Path]:
    (tmp / "latin.json").write_bytes(b'{"caf\xe9": 1}\n')
    (tmp / "trunc.json").write_text('{"status": ')
    (tmp / "adir").mkdir()
    (tmp / "pyproject.toml").write_text('[project]\nname = "x"\n')
    (tmp / "latin.csv").write_bytes(b"item,level\n\xff\xfe,turn\n")
    return {"not-utf8": tmp / "latin.json", "not-json": tmp / "trunc.json", "missing": tmp / "missing.json",
            "directory": tmp / "adir", "wrong-kind": tmp / "pyproject.toml"}


COMMANDS = [
    ["gate", "{f}"],
    ["report", "{f}", "-o", "{tmp}/out"],
    ["baseline", "show", "{f}"],
    ["baseline", "diff", "{f}", str(BASELINE)],
    ["score-logs", "{f}"],
    ["logs-to-suite", "{f}", "-o", "{tmp}/cand.yaml"],
    ["export-review", "{f}", "-o", "{tmp}/r.csv"],
    ["import-review", "{f}"],
    ["shard", "{f}", "-o", "{tmp}/s.jsonl", "--model", "openai/x", "--record-mode", "none"],
]


@pytest.mark.parametrize("kind", ["not-utf8", "not-json", "missing", "directory", "wrong-kind"])
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]).replace(" {f}", ""))
def test_bad_input_is_one_line_and_exit_4(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str],
                                          kind: str) -> None:
    f = _inputs(tmp_path)[kind]
    argv = [a.format(f=f, tmp=tmp_path) for a in command]
    os.chdir(tmp_path)
    assert main(argv) == 4, argv
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragdive: error: "), err
    assert "Traceback" not in out + err and len(lines[0]) < 600
    if kind == "not-utf8" and command[0] not in ("import-review",):
        assert "latin.json:1: not UTF-8 text (byte 0xe9" in lines[0], lines[0]


def test_a_non_utf8_csv_names_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _inputs(tmp_path)
    assert main(["import-review", str(tmp_path / "latin.csv")]) == 4
    assert f"{tmp_path / 'latin.csv'}:2: not UTF-8 text (byte 0xff" in capsys.readouterr().err


def test_an_unexpected_error_is_one_line_and_debug_shows_the_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_ragdive.cli import baseline as baseline_cmd

    def broken(args: object) -> int:
        raise RuntimeError("a bug, not your input")

    monkeypatch.setattr(baseline_cmd, "run", broken)
    assert main(["baseline", "show", str(BASELINE)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: RuntimeError: a bug, not your input" in err and "--debug" in err
    with pytest.raises(RuntimeError):
        main(["--debug", "baseline", "show", str(BASELINE)])
    assert describe(ValueError("x" * 10_000))[0] == 4 and len(describe(ValueError("x" * 10_000))[1]) < 400


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes")
def test_a_closed_stdout_exits_quietly_with_141() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "pytest_ragdive", "baseline", "show", str(BASELINE)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # as `| head` does once it has its lines
    err = proc.stderr.read().decode()
    assert proc.wait(60) == EXIT_BROKEN_PIPE == 141
    assert err == "", err  # no BrokenPipeError, no "Exception ignored"
