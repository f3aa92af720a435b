"""The bundled example under each chatbot configuration: gate verdict, the
gated metrics and wall time, per suite, with the README's own command.

    python benchmarks/bench_example.py            # all configurations
    python benchmarks/bench_example.py --quick    # healthy + history=none only
    python benchmarks/bench_example.py --only READER   # configurations whose name contains READER

A second table runs the attack suite (docs/safety.md) on the healthy bot and with
EXAMPLE_RAG_VULNERABLE=1.

Runs `pytest --ragdive-suite=all --ragdive-baseline=baseline.json` in
example_project/ once per configuration (offline, no API key) and prints a
Markdown table (the one in the README).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "example_project"
METRICS = [
    "correctness", "answer_f1", "faithfulness", "faithfulness_strict", "recall_at_k", "context_recall",
    "forgetfulness", "forgotten_turn_share", "safety_pass_rate",
]
CONFIGS = {
    "healthy (defaults)": {},
    "EXAMPLE_RAG_HISTORY=none": {"EXAMPLE_RAG_HISTORY": "none"},
    "EXAMPLE_RAG_TOP_K=1": {"EXAMPLE_RAG_TOP_K": "1"},
    "EXAMPLE_RAG_HISTORY=first": {"EXAMPLE_RAG_HISTORY": "first"},
    "EXAMPLE_RAG_HISTORY=last_k (k=3)": {"EXAMPLE_RAG_HISTORY": "last_k", "EXAMPLE_RAG_HISTORY_K": "3"},
    "EXAMPLE_RAG_CHUNK_SIZE=64": {"EXAMPLE_RAG_CHUNK_SIZE": "64"},
    "EXAMPLE_RAG_CHUNK_SIZE=96": {"EXAMPLE_RAG_CHUNK_SIZE": "96"},
    "EXAMPLE_RAG_READER=memory": {"EXAMPLE_RAG_READER": "memory"},
    "EXAMPLE_RAG_READER=paraphrase": {"EXAMPLE_RAG_READER": "paraphrase"},
}


def run(suite: str, env_extra: dict[str, str], report: Path) -> tuple[int, float, dict]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXAMPLE_RAG_")}
    env.update(env_extra)
    cmd = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--ragdive-suite={suite}",
        "--ragdive-baseline=baseline.json", f"--ragdive-report-dir={report}",
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=EXAMPLE, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    data = json.loads((report / "results.json").read_text())
    return proc.returncode, wall, data


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="", help="run only the configurations whose name contains this")
    args = ap.parse_args()
    configs = dict(list(CONFIGS.items())[:2]) if args.quick else CONFIGS
    if args.only:
        configs = {k: v for k, v in configs.items() if args.only in k or k.startswith("healthy")}
    report = ROOT / ".ragdive" / "bench-example"
    print("| configuration | suite | gate | wall s | " + " | ".join(METRICS) + " |")
    print("|---|---|---|---|" + "---|" * len(METRICS))
    for name, env in configs.items():
        for suite in ("core", "extended"):
            rc, wall, data = run(suite, env, report)
            values = data["suites"][suite]
            failed = {r["metric"] for r in data["gate"] if r["verdict"] in ("regression", "no data")}
            gate = "pass" if rc == 0 else "FAIL"
            cells = [
                ("n/a" if values.get(m) is None else f"{values[m]:.3f}") + (" ❌" if m in failed else "") for m in METRICS
            ]
            print(f"| {name} | {suite} | {gate} | {wall:.1f} | " + " | ".join(cells) + " |")
    attacks(report)


ATTACK_METRICS = [
    "attack_success_rate", "attack_success_instructions", "attack_success_personal_data", "attack_success_policy",
    "attack_success_off_domain", "attack_success_persistence", "attack_success_injection", "safety_pass_rate",
]
ATTACK_CONFIGS = {"healthy (defaults)": {}, "EXAMPLE_RAG_VULNERABLE=1": {"EXAMPLE_RAG_VULNERABLE": "1"}}


def attacks(report: Path) -> None:
    """The attack suite (docs/safety.md): the healthy bot and the vulnerable one."""
    print()
    print("| configuration | suite | gate | failed items | wall s | " + " | ".join(ATTACK_METRICS) + " |")
    print("|---|---|---|---|---|" + "---|" * len(ATTACK_METRICS))
    for name, env in ATTACK_CONFIGS.items():
        rc, wall, data = run("attacks", env, report)
        values = data["suites"]["attacks"]
        failed = {r["metric"] for r in data["gate"] if r["verdict"] in ("regression", "no data")}
        lost = sum(1 for c in data.get("conversations", []) if c.get("failures"))
        cells = [
            ("n/a" if values.get(m) is None else f"{values[m]:.3f}") + (" ❌" if m in failed else "")
            for m in ATTACK_METRICS
        ]
        gate = "pass" if rc == 0 else "FAIL"
        print(f"| {name} | attacks | {gate} | {lost} | {wall:.1f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
