"""What the dormant plugin costs: `pytest --collect-only` start-up time of a
small unrelated test suite, with the plugin loaded and with it blocked
(`-p no:ragdive`, the same as not installed), interleaved, in one run.

    python benchmarks/bench_startup.py [--repeats 15]

Prints a table with the median and the relative overhead (target: within 5%).

Where langsmith is installed (the ``[ragas]`` extra pulls it in through
langchain-core), its own pytest plugin (entry point ``langsmith_plugin``)
loads in every pytest run and imports the LangSmith client. The baseline is
then a run with neither plugin, and the table adds the run with only
langsmith blocked, the remedy the README gives (``-p no:langsmith_plugin`` in
``addopts``), and the default run with both.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def make_suite(root: Path, files: int = 20, tests: int = 10) -> None:
    for i in range(files):
        body = "\n".join(f"def test_{i}_{j}():\n    assert {j} == {j}\n" for j in range(tests))
        (root / f"test_mod_{i}.py").write_text(body)
    (root / "pytest.ini").write_text("[pytest]\n")


def time_once(root: Path, extra: list[str]) -> float:
    cmd = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *extra]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # bytecode cached, as users run
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=root, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        make_suite(root)
        base_name = "without plugin (-p no:ragdive)"
        variants = {base_name: ["-p", "no:ragdive"], "with plugin (dormant)": []}
        if langsmith_installed():
            no_ls = ["-p", "no:langsmith_plugin"]
            base_name = "plugin-free (no ragdive, no langsmith)"
            variants = {
                base_name: ["-p", "no:ragdive", *no_ls],
                "with plugin, -p no:langsmith_plugin": no_ls,
                "with plugin and langsmith's plugin": [],
            }
        for extra in variants.values():  # warm the file system and bytecode caches
            time_once(root, extra)
        times: dict[str, list[float]] = {k: [] for k in variants}
        for _ in range(args.repeats):
            for name, extra in variants.items():
                times[name].append(time_once(root, extra))
    base = statistics.median(times[base_name])
    print(f"pytest --collect-only, 200 tests in 20 files, {args.repeats} interleaved runs each\n")
    print(f"{'variant':40} {'median s':>9} {'min s':>7} {'overhead':>9}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:40} {med:9.3f} {min(ts):7.3f} {100 * (med - base) / base:8.1f}%")


def langsmith_installed() -> bool:
    from importlib.metadata import entry_points

    return any(ep.name == "langsmith_plugin" for ep in entry_points(group="pytest11"))


if __name__ == "__main__":
    main()
