"""With -n N, pytest-xdist workers start with their share of the cores for the numeric
libraries (OpenBLAS's threads spin between small products and take the other worker's core);
the user's own setting wins, a plain run is left alone, the controller's environment is restored."""

from __future__ import annotations

import os

import pytest

from pytest_ragdive.plugin.worker_threads import THREAD_VARS, WorkerThreads, available_cores


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for var in THREAD_VARS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_each_worker_gets_its_share_and_the_users_setting_wins(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("MKL_NUM_THREADS", "3")
    threads = WorkerThreads(workers=2, cores=5)
    threads.apply()
    assert os.environ["OPENBLAS_NUM_THREADS"] == os.environ["OMP_NUM_THREADS"] == "2"  # 5 // 2
    assert os.environ["MKL_NUM_THREADS"] == "3"
    threads.restore()
    assert "OPENBLAS_NUM_THREADS" not in os.environ and "OMP_NUM_THREADS" not in os.environ
    assert os.environ["MKL_NUM_THREADS"] == "3"
    assert WorkerThreads(workers=8, cores=2).share == 1  # never 0
    assert WorkerThreads(workers=0, cores=2).share == 2


@pytest.mark.slow
def test_xdist_workers_start_with_their_share(toy: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> None:
    pytest.importorskip("xdist")
    clean_env.setenv("MKL_NUM_THREADS", "3")  # the user's own choice
    share = max(1, available_cores() // 2)
    toy.makepyfile(test_threads=f"""
        import os

        def test_a_worker_has_its_share():
            assert os.environ.get("PYTEST_XDIST_WORKER")
            assert os.environ["OPENBLAS_NUM_THREADS"] == os.environ["OMP_NUM_THREADS"] == "{share}"
            assert os.environ["MKL_NUM_THREADS"] == "3"
        """)
    toy.runpytest("--ragdive-suite=core", "-n", "2", "-p", "no:cacheprovider").assert_outcomes(passed=6)
    # the controller's own environment is as it was
    assert "OPENBLAS_NUM_THREADS" not in os.environ and os.environ["MKL_NUM_THREADS"] == "3"
    # a plain run sets nothing
    toy.runpytest("--ragdive-suite=core", "-p", "no:cacheprovider", "-k", "not test_a_worker").assert_outcomes(passed=5)
    assert "OPENBLAS_NUM_THREADS" not in os.environ
