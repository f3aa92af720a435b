"""Issue 22 (4, 5): every report file is written atomically (a run killed while
writing leaves the previous file or none, never truncated JSON; before, kill -9
during the write of results.json left half a file), with the same bytes as a
plain write; a previous run's report files are removed when a run starts, other
files in the report dir are left alone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_ragdive.core.config import RagdiveConfig
from pytest_ragdive.core.records import Context, Conversation, Turn
from pytest_ragdive.gate.conclude import RunFacts, conclude
from pytest_ragdive.gate.outcome import RunOutcome
from pytest_ragdive.reports.results_json import write_results_json

CFG = {"suites": {"core": {"single_turn": ["x.jsonl"]}}, "report_dir": "report"}


def _conv(i: int) -> Conversation:
    return Conversation(id=f"c{i}", suite="core", turns=[Turn(
        rag_input=f"q{i} \u00e9", answer=f"a{i}", ground_truth="g",
        contexts=[Context(id=f"k{k}", text=f"context {k} of {i} " * 20, doc_id="d") for k in range(3)],
        scores={"answer_f1": 0.5})])


def _outcome(n: int) -> RunOutcome:
    cfg = RagdiveConfig.model_validate(CFG)
    return conclude([_conv(i) for i in range(n)], cfg, None, RunFacts(planned=n))


def test_a_write_that_fails_halfway_leaves_the_previous_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "results.json"
    write_results_json(path, _outcome(3))
    before = path.read_bytes()
    calls = {"n": 0}
    real = Conversation.model_dump_json

    def dies_on_the_third(self: Conversation, **kw: object) -> str:
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt  # as a kill would, halfway through the file
        return real(self, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Conversation, "model_dump_json", dies_on_the_third)
    with pytest.raises(KeyboardInterrupt):
        write_results_json(path, _outcome(5))
    assert path.read_bytes() == before  # whole, and the previous run's
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]  # no temporary file left behind


def test_every_report_file_has_the_bytes_a_plain_write_gives(tmp_path: Path) -> None:
    from pytest_ragdive.reports.html import iter_html
    from pytest_ragdive.reports.junit import junit_xml
    from pytest_ragdive.reports.markdown import summary_md
    from pytest_ragdive.reports.pr_comment import pr_comment_md
    from pytest_ragdive.reports.results_json import results_json
    from pytest_ragdive.reports.write import write_reports

    outcome = _outcome(4)
    written = write_reports(tmp_path, outcome)
    assert {p.name for p in written} == {"results.json", "summary.md", "pr-comment.md", "report.html"}
    assert json.loads((tmp_path / "results.json").read_text()) == json.loads(json.dumps(results_json(outcome)))
    assert (tmp_path / "summary.md").read_bytes() == summary_md(outcome).encode()
    assert (tmp_path / "pr-comment.md").read_bytes() == pr_comment_md(outcome).encode()
    assert (tmp_path / "report.html").read_bytes() == "".join(iter_html(outcome)).encode()
    assert junit_xml(outcome)  # (written only when gated)
    mode = (tmp_path / "results.json").stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask  # an ordinary file, not mkstemp's private one


WRITER = """
import sys
sys.path.insert(0, {tests!r})
from pathlib import Path
from test_atomic_reports import _outcome
from pytest_ragdive.reports.results_json import write_results_json
out = _outcome(3000)
path = Path({path!r})
print("ready", flush=True)
while True:
    write_results_json(path, out)
"""


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_kill_9_while_writing_never_leaves_truncated_json(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    script = WRITER.format(tests=str(Path(__file__).parent), path=str(path))
    for delay in (0.05, 0.13, 0.21, 0.34, 0.55):
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        if path.exists():
            data = json.loads(path.read_text(encoding="utf-8"))  # never half a file
            assert len(data["conversations"]) == 3000


def test_a_previous_runs_reports_are_cleared_and_nothing_else(tmp_path: Path) -> None:
    from pytest_ragdive.reports.write import clear_reports

    for name in ("results.json", "ragdive-junit.xml", "summary.md", "report.html", "ragdive_core.json", "ragdive_mine.jsonl",
                 ".results.json.abc123.tmp", "notes.txt", "ragdive.toml", "results.json.bak"):
        (tmp_path / name).write_text("x")
    (tmp_path / "sub").mkdir()
    (tmp_path / ".ragdive-reports.json").write_text('{"files": ["results.json", "report.html", "ragdive_core.json"]}')
    removed = clear_reports(tmp_path)  # what the manifest lists, and a killed write's temporary file
    assert sorted(p.name for p in removed) == sorted([".results.json.abc123.tmp", "ragdive_core.json", "report.html", "results.json"])
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "notes.txt", "ragdive-junit.xml", "ragdive.toml", "ragdive_mine.jsonl", "results.json.bak", "sub", "summary.md"]
    removed = clear_reports(tmp_path)  # no manifest (a dir from before it): the fixed report names only
    assert sorted(p.name for p in removed) == ["ragdive-junit.xml", "summary.md"]
    assert clear_reports(tmp_path / "missing") == []
