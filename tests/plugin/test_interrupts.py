"""Ctrl-C on the LLM path (issue 10): one press stops the run cleanly (no
asyncio warnings, no gate passed), a second press during the shutdown quits at
once with one line (it used to print hundreds of lines of pytest traceback
ending in a SystemError)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import default_sigint, llm_project
from test_plugin_llm import CORPUS, scripted

from pytest_ragdive.plugin.interrupts import FORCED_EXIT, InterruptGuard
from pytest_ragdive.testing import FAKE_KEY_ENV, FakeLLMServer

pytestmark = pytest.mark.slow  # starts processes of its own

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _project(pytester: pytest.Pytester, server: FakeLLMServer, transport: str) -> None:
    llm_project(
        pytester, CORPUS, top="concurrency = 4",
        llm=f'api_base = "{server.url}"\napi_key_env = "{FAKE_KEY_ENV}"\ntransport = "{transport}"\ntimeout_s = 30',
        rest='[tool.ragdive.suites.core]\n'
        'generated = { conversations = 12, turns = 3, roles = ["default", "referrer"], seed = 1 }\n',
    )


def _interrupt(pytester: pytest.Pytester, transport: str, presses: int, gap_s: float = 0.3) -> tuple[int, str]:
    """Start a generated suite against a slow server, press Ctrl-C ``presses``
    times (``gap_s`` apart) once requests are in flight; the exit code and output."""
    server = FakeLLMServer(scripted, latency_s=1.0).start()
    try:
        _project(pytester, server, transport)
        env = {**os.environ, FAKE_KEY_ENV: "sk-test-secret-4242"}
        for var in ("TOY_FORGET", "TOY_RAISE_ON", "TOY_UNSAFE", "GITHUB_STEP_SUMMARY"):
            env.pop(var, None)
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", "--ragdive-suite=core", "-p", "no:cacheprovider", "-p", "no:xdist"],
            cwd=pytester.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            preexec_fn=default_sigint,
        )
        try:
            deadline = time.monotonic() + 90
            while server.request_count < 4:
                assert proc.poll() is None and time.monotonic() < deadline, "the run never reached the LLM"
                time.sleep(0.05)
            for _ in range(presses):
                proc.send_signal(signal.SIGINT)
                time.sleep(gap_s)
            out, _ = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        return proc.returncode, out
    finally:
        server.stop()


ASYNC_LEFTOVERS = ("never awaited", "Task was destroyed", "Exception ignored", "Event loop is closed")


@posix_only
@pytest.mark.parametrize("transport", ["openai_http", "litellm"])
def test_one_ctrl_c_stops_the_llm_run_cleanly(pytester: pytest.Pytester, transport: str) -> None:
    rc, out = _interrupt(pytester, transport, presses=1)
    assert rc == pytest.ExitCode.INTERRUPTED, out
    assert "KeyboardInterrupt" in out
    assert not [w for w in ASYNC_LEFTOVERS if w in out], out
    assert "gate passed" not in out


@posix_only
def test_a_second_ctrl_c_while_shutting_down_quits_with_one_line(pytester: pytest.Pytester) -> None:
    # litellm's shutdown is the slow one (pytest formats the interrupt over its thousands of modules)
    # the second press comes while the first one's shutdown runs (it takes well over 0.05 s:
    # the interrupt is formatted, the loop's calls are cancelled, the reports are written)
    rc, out = _interrupt(pytester, "litellm", presses=2, gap_s=0.05)
    assert rc == FORCED_EXIT, out
    assert "Ctrl-C again while shutting down: exiting now" in out
    assert "Traceback" not in out and "SystemError" not in out, out
    assert len(out.splitlines()) < 30, out


def test_the_guard_only_replaces_pythons_default_handler() -> None:
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a foreground run
    guard = InterruptGuard()
    try:
        assert guard.install()
        assert signal.getsignal(signal.SIGINT) == guard._handle
        with pytest.raises(KeyboardInterrupt):
            guard._handle(signal.SIGINT, None)  # the first press: the usual KeyboardInterrupt
        assert guard.presses == 1
    finally:
        guard.uninstall()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    signal.signal(signal.SIGINT, before)

    def own(signum: int, frame: object) -> None:  # a handler the user installed is left alone
        pass

    signal.signal(signal.SIGINT, own)
    guard = InterruptGuard()
    try:
        assert not guard.install()
        assert signal.getsignal(signal.SIGINT) is own
    finally:
        guard.uninstall()
        signal.signal(signal.SIGINT, before)


def test_the_guard_is_not_installed_outside_the_main_thread() -> None:
    got: list[bool] = []
    worker = threading.Thread(target=lambda: got.append(InterruptGuard().install()))
    worker.start()
    worker.join()
    assert got == [False]


def test_a_coroutine_sent_to_a_stopped_loop_is_closed_not_left_unawaited(recwarn: pytest.WarningsRecorder) -> None:
    import gc

    from pytest_ragdive.run.turn_loop import BackgroundLoop

    loop = BackgroundLoop(concurrency=1)
    loop.close()

    async def finalise() -> None:
        pass

    with pytest.raises(RuntimeError, match="has stopped"):
        loop.run(finalise(), timeout=1)
    gc.collect()
    assert not [w for w in recwarn if "never awaited" in str(w.message)]


# -- an executor call abandoned by a cancel (litellm's acompletion) ------------------------------


def test_an_abandoned_executor_call_closes_the_coroutine_it_returns() -> None:
    import asyncio
    import inspect

    from pytest_ragdive.run.loop_executor import ClosingExecutor

    made: list[object] = []
    release = threading.Event()

    async def inner() -> str:
        return "never run"

    def build() -> object:  # what litellm's completion() does for an async provider
        release.wait(5)
        coro = inner()
        made.append(coro)
        return coro

    async def caller(executor: ClosingExecutor) -> None:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(executor)
        task = asyncio.ensure_future(loop.run_in_executor(None, build))
        await asyncio.sleep(0.01)
        task.cancel()  # while build() runs: asyncio will drop what it returns
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    executor = ClosingExecutor(max_workers=1)
    asyncio.run(caller(executor))
    executor.shutdown(wait=True)
    assert len(made) == 1 and inspect.getcoroutinestate(made[0]) == inspect.CORO_CLOSED  # type: ignore[arg-type]

    # the cancel after the call returned (before asyncio copied the result): closed too
    made.clear()
    with ClosingExecutor(max_workers=1) as executor:
        fut = executor.submit(build)
        fut.result(timeout=5)
        assert not fut.cancel()
    assert len(made) == 1 and inspect.getcoroutinestate(made[0]) == inspect.CORO_CLOSED  # type: ignore[arg-type]


def test_a_litellm_call_cancelled_early_leaves_no_unawaited_coroutine(recwarn: pytest.WarningsRecorder) -> None:
    import asyncio
    import gc

    pytest.importorskip("litellm")
    from pytest_ragdive.llm.transport import LiteLLMTransport, Request
    from pytest_ragdive.run.turn_loop import BackgroundLoop

    with FakeLLMServer(latency_s=0.5) as server:
        transport = LiteLLMTransport(server.url)
        loop = BackgroundLoop(concurrency=4)

        async def cancelled_calls() -> None:
            for delay in (0.0, 0.001, 0.005, 0.02, 0.05):
                req = Request(messages=[{"role": "user", "content": "hi"}], params={}, mode=None)
                task = asyncio.ensure_future(transport.send("openai/fake-model", req, "sk-x", 5))
                await asyncio.sleep(delay)
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            await asyncio.sleep(0.3)
            await transport.aclose()

        try:
            loop.run(cancelled_calls(), timeout=30)
        finally:
            loop.close()
    gc.collect()
    assert not [str(w.message) for w in recwarn if "never awaited" in str(w.message)]
