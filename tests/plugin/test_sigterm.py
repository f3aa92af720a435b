"""SIGTERM (what a CI cancel sends) is handled like the first Ctrl-C (issue 32, case 6): the
finished conversations are reported, the rest listed as not_run, and the run exits non-zero
with a line that says SIGTERM stopped it. Before, the process died at once with nothing written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from conftest import TOY_CONFTEST, default_sigint

from pytest_ragdive.plugin.interrupts import FORCED_EXIT_TERM, TERMINATED_NOTE, InterruptGuard, Terminated

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

# the toy bot, but a question about grass hangs (in the target's own thread) after leaving a mark
HANGING = TOY_CONFTEST + textwrap.dedent(
    """
    import pathlib
    import time

    _plain_bot = bot

    def bot(messages):
        if "grass" in messages[-1]["content"].lower():
            pathlib.Path("grass-called").touch()
            time.sleep(30)
        return _plain_bot(messages)
    """
)


def _start(pytester: pytest.Pytester) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TOY_FORGET", "TOY_RAISE_ON", "TOY_UNSAFE", "GITHUB_STEP_SUMMARY")}
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "--ragdive-suite=core", "-p", "no:cacheprovider", "-p", "no:xdist"],
        cwd=pytester.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=default_sigint,
    )


def _wait_for(pytester: pytest.Pytester, proc: subprocess.Popen[str], name: str) -> None:
    deadline = time.monotonic() + 90
    while not (pytester.path / name).exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the run never reached the hanging question"
        time.sleep(0.05)


@posix_only
@pytest.mark.slow
def test_sigterm_reports_the_finished_conversations_and_lists_the_rest(toy: pytest.Pytester) -> None:
    toy.makeconftest(HANGING)
    proc = _start(toy)
    try:
        _wait_for(toy, proc, "grass-called")
        time.sleep(2.0)  # the other conversations (a dict lookup each) finish meanwhile
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out  # non-zero, "interrupted"; was -15, nothing written
    assert "SIGTERM" in out, out
    assert "gate passed" not in out
    data = json.loads((toy.path / "report" / "results.json").read_text())
    assert TERMINATED_NOTE in data["notes"]
    reported = {c["id"] for c in data["conversations"]}
    not_run = set(data["not_run"])
    assert {"q-grass", "c-grass"} <= {k.split("::")[1] for k in not_run}, data["not_run"]  # suite::id::run keys
    assert {"q-sky", "q-snow", "c-colours"} <= reported  # the finished ones are reported
    assert len(reported) + len(not_run) == 5


@posix_only
def test_a_second_sigterm_while_shutting_down_quits_at_once() -> None:
    before_term, before_int = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    guard = InterruptGuard()
    exits: list[int] = []
    try:
        guard.install()
        assert signal.getsignal(signal.SIGTERM) == guard._handle
        with pytest.raises(Terminated):  # a KeyboardInterrupt: the first Ctrl-C's path
            guard._handle(signal.SIGTERM, None)
        assert guard.terminated and issubclass(Terminated, KeyboardInterrupt)
        import pytest_ragdive.plugin.interrupts as interrupts

        real = interrupts.os._exit
        interrupts.os._exit = exits.append  # type: ignore[assignment]
        try:
            guard._handle(signal.SIGTERM, None)
        finally:
            interrupts.os._exit = real
        assert exits == [FORCED_EXIT_TERM]
    finally:
        guard.uninstall()
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
        signal.signal(signal.SIGTERM, before_term)
        signal.signal(signal.SIGINT, before_int)


@posix_only
def test_an_ignored_or_users_sigterm_is_left_alone() -> None:
    before = signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        guard = InterruptGuard()
        guard.install()
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
        guard.uninstall()
    finally:
        signal.signal(signal.SIGTERM, before)
