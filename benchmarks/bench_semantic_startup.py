"""What the embedded sentence model costs: import, load, first sentence, and per sentence.

    python benchmarks/bench_semantic_startup.py [--repeats 5]

Each figure is the median over fresh processes (wall and CPU seconds): importing the
offline metrics (nothing heavy: the model is not loaded), loading the model on first use
(the 16 MB matrix and the tokenizer from the wordllama wheel, offline), the first
sentence's embedding and similarity, a warm sentence, and for comparison importing the
``wordllama`` package itself (which the plugin does not do) and, when installed, torch
and transformers (what ``faithfulness_backend = "nli"`` adds).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = r"""
import json, sys, time
def clock():
    return time.perf_counter(), time.process_time()
def since(t):
    w, c = clock()
    return [w - t[0], c - t[1]]
out = {}
t = clock()
import pytest_ragdive.metrics.offline, pytest_ragdive.metrics.grounding
out["import offline metrics"] = since(t)
out["numpy loaded by the import"] = "numpy" in sys.modules
from pytest_ragdive.metrics import semantic
t = clock()
e = semantic.embedder()
out["load the model (first use)"] = since(t)
t = clock()
e.similarity(["Refunds are issued within 14 days."], ["You get your money back in two weeks."])
out["first sentence (embed + cosine)"] = since(t)
texts = [f"Sentence number {i} about refunds, plans and shipping." for i in range(1000)]
t = clock()
e.embed(texts)
w, c = since(t)
out["per new sentence (1000 embedded)"] = [w / 1000, c / 1000]
t = clock()
from pytest_ragdive.metrics.grounding import faithfulness
faithfulness("The Pro plan costs $12 a month.", ["The Pro plan costs $12 per month and includes 30 days of video."])
out["first faithfulness (model warm)"] = since(t)
print(json.dumps(out))
"""

OTHERS = {
    "import wordllama (not done by the plugin)": "import wordllama",
    "import torch + transformers (nli backend)": "import torch, transformers",
}


def _run(code: str) -> dict[str, object]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    runs = [_run(PROBE) for _ in range(args.repeats)]
    for name, stmt in OTHERS.items():
        if all(importlib.util.find_spec(m.strip()) for m in stmt.removeprefix("import ").split(",")):
            code = f"import json, time\nt=(time.perf_counter(), time.process_time())\n{stmt}\n" \
                   f"print(json.dumps({{{name!r}: [time.perf_counter()-t[0], time.process_time()-t[1]]}}))"
            for r, extra in zip(runs, (_run(code) for _ in range(args.repeats)), strict=True):
                r.update(extra)
    print(f"median of {args.repeats} fresh processes (the machine's load inflates wall time; CPU is the steadier figure)\n")
    print("| step | wall | CPU |")
    print("|---|---|---|")
    for key in runs[0]:
        vals = [r[key] for r in runs]
        if isinstance(vals[0], bool):
            print(f"| {key} | {'yes' if any(vals) else 'no'} | |")
            continue
        wall = statistics.median(float(v[0]) for v in vals)  # type: ignore[index]
        cpu = statistics.median(float(v[1]) for v in vals)  # type: ignore[index]
        unit, scale = ("µs", 1e6) if wall < 1e-3 else ("ms", 1e3)
        print(f"| {key} | {wall * scale:.1f} {unit} | {cpu * scale:.1f} {unit} |")


if __name__ == "__main__":
    main()
