"""What the plugin costs per turn as a bot's answers and retrieved contexts grow.

    python benchmarks/bench_scoring_sizes.py
    python benchmarks/bench_scoring_sizes.py --sizes 3x5,12x40 --conversations 20
    python benchmarks/bench_scoring_sizes.py --plugin-tree /path/to/other/checkout   # A/B another tree

The bundled example answers in two or three sentences from help-centre chunks of a few
sentences; a production RAG bot often answers in a paragraph from five chunks of a page
each. Offline scoring reads every sentence of every context (windows, terms, the embedded
model), so its cost grows with both. For each size ``AxC`` (A answer sentences, C
sentences per context, five contexts a turn) a temporary project runs the gated user
command's core suite (``pytest --ragdive-suite=core``, plain, no LLM) on scripted
five-turn conversations against a synthetic bot that costs next to nothing: its contexts
are drawn from the example's help-centre sentences (seeded by the question, so they recur
across conversations as real retrieval does), and its answer alternates sentences copied
from the first context and sentences from elsewhere (unsupported).

Columns: the size; turns; wall s (the whole pytest process); the pytest process's CPU s;
the bot's own CPU s; plugin ms per turn (process CPU less the bot's, per turn: start-up
included, so compare rows); and the same less the smallest size's (what the larger texts
add per turn).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "example_project"

TARGET = textwrap.dedent(
    '''
    """A bot of a given shape that costs next to nothing (bench_scoring_sizes)."""
    import json, os, random, time, zlib

    SENTENCES = json.loads(open(os.environ["BENCH_SIZES_SENTENCES"]).read())
    A = int(os.environ["BENCH_SIZES_ANSWER"])
    C = int(os.environ["BENCH_SIZES_CONTEXT"])
    spent = [0.0, 0]

    def bot(messages):
        t0 = time.thread_time()
        try:
            question = messages[-1]["content"]
            rng = random.Random(zlib.crc32(question.encode()))
            contexts = []
            for k in range(5):
                picked = [SENTENCES[rng.randrange(len(SENTENCES))] for _ in range(C)]
                contexts.append({{"id": f"d{{k}}-{{zlib.crc32(picked[0].encode())}}", "text": " ".join(picked)}})
            first = contexts[0]["text"].split(". ")
            answer = " ".join(
                (first[j % len(first)].rstrip(".") + ".") if j % 2 == 0 else SENTENCES[rng.randrange(len(SENTENCES))]
                for j in range(A)
            )
            return {{"answer": answer, "contexts": contexts}}
        finally:
            spent[0] += time.thread_time() - t0
            spent[1] += 1
    '''
)

CONFTEST = textwrap.dedent(
    '''
    import json, os, sys, time
    import pytest

    @pytest.hookimpl(wrapper=True)
    def pytest_unconfigure(config):
        try:
            return (yield)
        finally:
            mod = sys.modules.get("bench_target")
            with open(os.path.join(os.environ["BENCH_SIZES_OUT"], f"{os.getpid()}.json"), "w") as f:  # one a process
                json.dump({"target": mod.spent[0] if mod else 0.0, "calls": mod.spent[1] if mod else 0}, f)
    '''
)


def sentences() -> list[str]:
    out = []
    for line in (EXAMPLE / "corpus" / "helpcentre.jsonl").read_text().splitlines():
        if line.strip():
            out += [s.strip().rstrip(".") + "." for s in json.loads(line)["text"].split(". ") if len(s.split()) >= 4]
    return out


def make_project(root: Path, conversations: int, sents: list[str]) -> None:
    rng = random.Random(0)
    convs = []
    for i in range(conversations):
        turns = []
        for t in range(5):
            words = rng.choice(sents).split()
            q = f"What does the help centre say about {' '.join(words[:6]).lower().rstrip('.')}?"
            turns.append({"rag_input": q if t == 0 else f"And about {' '.join(words[:4]).lower()}?",
                          "ground_truth": rng.choice(sents)})
        convs.append({"id": f"c{i:04d}", "turns": turns})
    (root / "golden").mkdir()
    (root / "golden" / "convs.yaml").write_text(yaml.safe_dump({"conversations": convs}, sort_keys=False))
    (root / "sentences.json").write_text(json.dumps(sents))
    (root / "bench_target.py").write_text(TARGET.format())
    (root / "conftest.py").write_text(CONFTEST)
    (root / "pyproject.toml").write_text(textwrap.dedent(
        """
        [tool.pytest.ini_options]
        addopts = "-p no:langsmith_plugin"

        [tool.ragdive]
        target = "bench_target:bot"

        [tool.ragdive.suites.core]
        conversations = ["golden/convs.yaml"]
        """
    ))


def run(root: Path, tree: Path, answer: int, context: int, workers: int = 0) -> dict[str, float]:
    out = root / "out"
    out.mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), str(root)]), BENCH_SIZES_OUT=str(out),
               BENCH_SIZES_SENTENCES=str(root / "sentences.json"), BENCH_SIZES_ANSWER=str(answer),
               BENCH_SIZES_CONTEXT=str(context))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as users run: compiled (and assertion-rewritten) modules are cached
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--ragdive-suite=core",
                           f"--ragdive-report-dir={root / 'report'}", *(["-n", str(workers)] if workers else [])],
                          cwd=root, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    dumps = [json.loads(p.read_text()) for p in out.glob("*.json")]
    if proc.returncode not in (0, 1) or not dumps:  # 1: a check failed (the answers invent on purpose)
        sys.exit(f"pytest failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    return {"wall": wall, "cpu": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
            "target": sum(d["target"] for d in dumps), "calls": sum(d["calls"] for d in dumps)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="3x5,12x5,3x40,12x40,40x40",
                    help="AxC: answer sentences x sentences per context (five contexts a turn)")
    ap.add_argument("--conversations", type=int, default=40)
    ap.add_argument("--plugin-tree", type=Path, default=ROOT, help="the checkout whose pytest_ragdive runs")
    ap.add_argument("-n", "--workers", type=int, default=0, help="pytest-xdist workers (0: plain)")
    args = ap.parse_args()
    sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]
    sents = sentences()
    mode = f"-n {args.workers}" if args.workers else "plain"
    blas = os.environ.get("OPENBLAS_NUM_THREADS")
    print(f"{args.conversations} five-turn conversations per size, five contexts a turn, {mode}, offline"
          f"{f', OPENBLAS_NUM_THREADS={blas}' if blas else ''}; "
          f"plugin from {args.plugin_tree}; {os.cpu_count()} CPUs\n")
    print("| answer sentences x context sentences | turns | wall s | CPU s | bot CPU s | plugin ms per turn | "
          "added per turn ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    first: float | None = None
    for a, c in sizes:
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            make_project(root, args.conversations, sents)
            r = run(root, args.plugin_tree.resolve(), a, c, args.workers)
        turns = args.conversations * 5
        per = 1000 * (r["cpu"] - r["target"]) / turns
        first = per if first is None else first
        print(f"| {a} x {c} | {turns} | {r['wall']:.2f} | {r['cpu']:.2f} | {r['target']:.3f} | {per:.1f} | "
              f"{per - first:+.1f} |", flush=True)


if __name__ == "__main__":
    main()
