"""Issue 22 (10): a target that leaks a non-daemon thread. pytest prints "N passed"
and Python then waits for the thread; the plugin now says so in one line naming the
thread and what it runs (before: no hint at all, the process just did not exit)."""

from __future__ import annotations

import time

import pytest
from conftest import TOY_CONFTEST

from pytest_ragdive.plugin.threads import ThreadCensus, started_where

LEAKY = TOY_CONFTEST + '''
import threading
import time

_toy_bot = bot

def poll_forever(stop):
    stop.wait(float(os.environ.get("TOY_LEAK_S", "3")))  # (the test's stand-in for "forever")

@pytest.fixture(scope="session")
def ragdive_target():
    # a client library's background poller, started with the bot and never stopped
    threading.Thread(target=poll_forever, args=(threading.Event(),), name="metrics-poller").start()
    return _toy_bot
'''


def test_a_leaked_thread_is_named_before_python_waits_for_it(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOY_LEAK_S", "4")
    toy.makeconftest(LEAKY)
    t0 = time.perf_counter()
    res = toy.runpytest_subprocess("--ragdive-suite=core", "-p", "no:cacheprovider", timeout=60)
    assert res.ret == 0
    assert time.perf_counter() - t0 >= 3  # Python did wait for the thread
    res.stdout.fnmatch_lines([
        "*ragdive: the run is over, but Python waits for 1 non-daemon thread(s) the plugin did not start before it "
        "exits: 'metrics-poller' (runs conftest.poll_forever at *conftest.py:*)*daemon=True*",
        "*5 passed*",
    ])


def test_no_line_without_a_leak(toy: pytest.Pytester) -> None:
    res = toy.runpytest_subprocess("--ragdive-suite=core", "-p", "no:cacheprovider", timeout=60)
    assert res.ret == 0 and "non-daemon thread" not in res.stdout.str()


def test_the_census_ignores_daemons_pool_workers_earlier_threads_and_quick_ones() -> None:
    import concurrent.futures
    import threading

    stop = threading.Event()
    early = threading.Thread(target=stop.wait, name="early")
    early.start()
    census = ThreadCensus()
    daemon = threading.Thread(target=stop.wait, name="a-daemon", daemon=True)
    daemon.start()
    quick = threading.Thread(target=time.sleep, args=(0.05,), name="quick")
    quick.start()
    pool = concurrent.futures.ThreadPoolExecutor(1)
    pool.submit(lambda: None).result()
    late = threading.Thread(target=stop.wait, name="late")
    late.start()
    try:
        assert [t.name for t in census.leaked(grace_s=0.3)] == ["late"]
        line = census.line(grace_s=0.0)
        assert line is not None and "'late' (runs threading.Event.wait at" in line
        assert started_where(late).startswith("runs threading.Event.wait at ")
    finally:
        stop.set()
        for t in (early, late, quick):
            t.join(5)
        pool.shutdown()
    assert census.line() is None
