"""pytest-xdist workers share the machine's cores: each worker's numeric libraries
(OpenBLAS, OpenMP, MKL: numpy's matrix products, torch's) get the worker's share of them.

Offline scoring multiplies small matrices (the embedded model's cosines). Above a size,
OpenBLAS runs a product on every core, and its threads then spin between products: with
``-n 2`` on 2 cores, each worker's spinning threads take the core the other worker runs on
(``bench_scoring_sizes.py -n 2``: a turn of 40 answer sentences on five 40-sentence
contexts, 16.8 s of wall against 11.5 s with one thread each). The controller, which runs
nothing, sets the libraries' thread counts in the environment its workers start with:
``cores // workers``, at least 1. A variable the user set is left as it is; the controller's
own environment is restored when the session ends. A plain run is left alone: its one
process has the cores to itself.
"""

from __future__ import annotations

import os

__all__ = ["THREAD_VARS", "WorkerThreads"]

#: the variables numeric libraries read when they load (numpy's OpenBLAS, OpenMP, MKL)
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS says, else the count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows
        return os.cpu_count() or 1


class WorkerThreads:
    """The thread counts the workers start with, set in the controller's environment
    before pytest-xdist starts them (:meth:`apply`), and taken back after (:meth:`restore`)."""

    def __init__(self, workers: int, cores: int | None = None) -> None:
        self.share = max(1, (cores if cores is not None else available_cores()) // max(1, workers))
        self._set: list[str] = []

    def apply(self) -> None:
        for var in THREAD_VARS:
            if var not in os.environ:  # the user's own choice wins
                os.environ[var] = str(self.share)
                self._set.append(var)

    def restore(self) -> None:
        for var in self._set:
            if os.environ.get(var) == str(self.share):
                del os.environ[var]
        self._set.clear()
