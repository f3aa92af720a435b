"""The sharded diagnosis on the bundled example: the decomposition table per bot configuration.

    python benchmarks/bench_sharded.py             # 4 configurations (~1 min)
    python benchmarks/bench_sharded.py --runs 10   # more runs per question

Runs the example's diagnosis suite (golden/diagnosis/sharded.yaml) offline, once per configuration: the healthy bot (EXAMPLE_RAG_HISTORY=full, the
study's HISTORY policy), EXAMPLE_RAG_HISTORY=none (its CURRENT policy), and
both with the sampling knob EXAMPLE_RAG_TEMPERATURE=0.2 (runs differ). Prints
a summary table and each configuration's decomposition (the tables in the README).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "example_project"
CONFIGS = {
    "history=full": {},
    "history=none": {"EXAMPLE_RAG_HISTORY": "none"},
    "history=full, T=0.2": {"EXAMPLE_RAG_TEMPERATURE": "0.2"},
    "history=none, T=0.2": {"EXAMPLE_RAG_HISTORY": "none", "EXAMPLE_RAG_TEMPERATURE": "0.2"},
}


def run(env_extra: dict[str, str], runs: int) -> dict:
    sys.path.insert(0, str(ROOT))
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXAMPLE_RAG_")}
    env.update(env_extra)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--ragdive-suite=diagnosis",
               f"--ragdive-runs={runs}", f"--ragdive-report-dir={tmp}"]
        subprocess.run(cmd, cwd=EXAMPLE, env=env, capture_output=True, text=True, check=False)
        data = json.loads((Path(tmp) / "results.json").read_text())
    return data["suite_results"]["diagnosis"]["sharded"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from pytest_ragdive.sharded.records import ShardedReport
    from pytest_ragdive.sharded.report import HEADER, _est, decomposition_rows

    reports = {name: ShardedReport.model_validate(run(env, args.runs)) for name, env in CONFIGS.items()}
    print("| bot | FULL | CONCAT | SHARDED | sharded_gap [95% CI] | wording | delivery | RECAP recovery | "
          "SNOWBALL recovery | unreliability FULL / SHARDED |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, r in reports.items():
        c = r.conditions
        unrel = " / ".join(f"{c[k].unreliability.value:.3f}" for k in ("full", "sharded")
                           if c[k].unreliability is not None and c[k].unreliability.value is not None)
        print(f"| {name} | {c['full'].mean_best:.3f} | {c['concat'].mean_best:.3f} | {c['sharded'].mean_best:.3f} | "
              f"{_est(r.gap)} | {_est(r.wording)} | {_est(r.delivery)} | {_est(r.recovery.get('recap'), True)} | "
              f"{_est(r.recovery.get('snowball'), True)} | {unrel} |")
    for name, r in reports.items():
        rows, parts = decomposition_rows(r)
        print(f"\n{name} ({r.runs} runs)\n")
        print("| " + " | ".join(HEADER) + " |")
        print("|" + "---|" * len(HEADER))
        for row in rows:
            print("| " + " | ".join(row) + " |")
        for pname, value in parts:
            print(f"- {pname}: {value}")


if __name__ == "__main__":
    main()
