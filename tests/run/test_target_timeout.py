"""A target that hangs: the turn times out, the run goes on, the process exits,
and Ctrl-C ends a run whose target hangs."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import CONVS, PYPROJECT, SINGLE, TOY_CONFTEST, default_sigint

from pytest_ragdive.core.errors import TargetError, TargetTimeout
from pytest_ragdive.run.target import as_async

pytestmark = pytest.mark.slow  # starts processes of its own

HI = [{"role": "user", "content": "hi"}]

HANG_CONFTEST = TOY_CONFTEST + '''

import threading
from pathlib import Path

_toy_bot = bot

def bot(messages):
    word = os.environ.get("TOY_HANG_ON")
    if word and word in messages[-1]["content"]:
        Path("hanging.flag").write_text("1")
        threading.Event().wait()  # never returns
    return _toy_bot(messages)

@pytest.fixture(scope="session")
def ragdive_target():
    return bot
'''


def test_a_sync_target_that_never_returns_times_out_in_a_daemon_thread() -> None:
    release = threading.Event()

    def hangs(messages: list[dict[str, str]]) -> str:
        release.wait()
        return "late"

    call = as_async(hangs, timeout_s=0.2)
    t0 = time.perf_counter()
    with pytest.raises(TargetTimeout, match=r"did not answer within 0.2 s"):
        asyncio.run(call([{"role": "user", "content": "hi"}]))
    assert time.perf_counter() - t0 < 2
    stuck = [t for t in threading.enumerate() if t.name == "ragdive-target"]
    assert stuck and all(t.daemon for t in stuck)  # abandoned, never joined at exit
    release.set()


def test_an_async_target_times_out_too_and_a_fast_one_does_not() -> None:
    async def slow(messages: list[dict[str, str]]) -> str:
        await asyncio.sleep(30)
        return "late"

    async def fast(messages: list[dict[str, str]]) -> dict[str, object]:
        return {"answer": "ok"}

    with pytest.raises(TargetTimeout):
        asyncio.run(as_async(slow, timeout_s=0.1)([{"role": "user", "content": "hi"}]))
    assert asyncio.run(as_async(fast, timeout_s=5)([{"role": "user", "content": "hi"}])).answer == "ok"
    assert asyncio.run(as_async(lambda m: "sync", timeout_s=5)([{"role": "user", "content": "hi"}])).answer == "sync"


def test_a_sync_target_exception_still_reaches_the_runner() -> None:
    def boom(messages: list[dict[str, str]]) -> str:
        raise ValueError("exploded")

    with pytest.raises(ValueError, match="exploded"):
        asyncio.run(as_async(boom)([{"role": "user", "content": "hi"}]))


def test_systemexit_in_a_target_fails_the_call_not_the_event_loop() -> None:
    def sync_exit(messages: list[dict[str, str]]) -> str:
        raise SystemExit(3)

    async def async_interrupt(messages: list[dict[str, str]]) -> str:
        raise KeyboardInterrupt

    async def both() -> list[BaseException | object]:
        calls = [as_async(sync_exit, 5)(HI), as_async(async_interrupt, 5)(HI)]
        return await asyncio.gather(*calls, return_exceptions=True)

    errors = asyncio.run(both())
    assert [type(e) for e in errors] == [TargetError, TargetError]
    assert "SystemExit(3)" in str(errors[0]) and "KeyboardInterrupt" in str(errors[1])


def _hanging_toy(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, extra: str = "") -> None:
    for var in ("TOY_FORGET", "TOY_RAISE_ON", "TOY_UNSAFE", "GITHUB_STEP_SUMMARY", "TOY_HANG_ON"):
        monkeypatch.delenv(var, raising=False)
    pytester.makeconftest(HANG_CONFTEST)
    data = pytester.mkdir("data")
    (data / "single.jsonl").write_text("\n".join(json.dumps(r) for r in SINGLE) + "\n")
    (data / "convs.yaml").write_text(CONVS)
    pytester.makefile(".toml", pyproject=PYPROJECT.format(extra=extra))


def test_a_hanging_turn_fails_its_conversation_and_the_run_goes_on(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _hanging_toy(pytester, monkeypatch, extra="target_timeout_s = 2")
    monkeypatch.setenv("TOY_HANG_ON", "grass")
    t0 = time.perf_counter()
    res = pytester.runpytest_subprocess("--ragdive-suite=core", "-p", "no:cacheprovider", timeout=90)
    assert time.perf_counter() - t0 < 60  # the process exits: nothing joins the hanging thread
    res.assert_outcomes(passed=3, failed=2)  # q-grass and c-grass
    res.stdout.fnmatch_lines(["*turn 1: TargetTimeout: the target did not answer within 2 s*"])


def test_the_command_line_flag_sets_the_timeout(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    _hanging_toy(pytester, monkeypatch)
    monkeypatch.setenv("TOY_HANG_ON", "snow")
    res = pytester.runpytest_subprocess(
        "--ragdive-suite=core", "--ragdive-target-timeout=1.5", "-p", "no:cacheprovider", timeout=90
    )
    res.assert_outcomes(passed=3, failed=2)  # q-snow and c-colours
    res.stdout.fnmatch_lines(["*did not answer within 1.5 s*"])
    bad = pytester.runpytest("--ragdive-suite=core", "--ragdive-target-timeout=0")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--ragdive-target-timeout*greater than 0*"])


def _interrupt_a_hanging_run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    """Record a baseline, then gate a run whose target hangs on the third
    conversation and press Ctrl-C (SIGINT) while it hangs."""
    _hanging_toy(pytester, monkeypatch)
    # a gate the finished conversations pass: only the interrupt could fail it
    pytester.makefile(".toml", pyproject=PYPROJECT.format(extra="").replace("forgetfulness = 0.0\n", ""))
    assert pytester.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline").ret == 0
    env = {**os.environ, "TOY_HANG_ON": "snow"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "--ragdive-baseline=b.json", "-p", "no:cacheprovider", "-p", "no:xdist"],
        cwd=pytester.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=default_sigint,
    )
    try:
        deadline = time.monotonic() + 60
        while not (pytester.path / "hanging.flag").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the target never started hanging"
            time.sleep(0.05)
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)  # before the fix: the interpreter waited for the thread forever
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out


posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


@posix_only
def test_ctrl_c_while_a_sync_target_hangs_exits(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    rc, out = _interrupt_a_hanging_run(pytester, monkeypatch)
    assert rc != 0
    assert "KeyboardInterrupt" in out


@posix_only
def test_ctrl_c_while_a_sync_target_hangs_passes_no_gate(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    rc, out = _interrupt_a_hanging_run(pytester, monkeypatch)
    assert "gate passed" not in out, out
