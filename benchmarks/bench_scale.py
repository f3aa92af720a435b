"""Offline runs at scale, gated as users run them: does the chatbot dominate the cost?

    python benchmarks/bench_scale.py                          # 10 ... 20,000 conversations, gated
    python benchmarks/bench_scale.py --sizes 10,1000 --modes plain
    python benchmarks/bench_scale.py --ungated                # no baseline (the table before issue 28)

For each size, a temporary project gets a synthetic golden YAML file of
five-turn scripted conversations (questions drawn from the bundled example's
help-centre corpus; the first turn of each has a negative assertion, so the
default gate's safety_pass_rate applies) and the example's BM25 chatbot
(`example_project/example_rag`) as the target, sampling its sentences
(temperature 0.3, as an LLM would) and wrapped so that it measures its own CPU
time (``time.thread_time`` around each call) and every process's peak RSS.

Gated (the default): a baseline is recorded first (row ``record``: that run,
plain, the bot on another seed, so that every conversation differs a little
from its baseline and the paired test resamples real differences), then the
README's gate command runs against it (``--ragdive-baseline``), plain and with
``-n 2`` (pytest-xdist), with ``--ragdive-report-dir`` (results.json keeps
every context). ``gate.inconclusive = "pass"``: every gated run is one look (a
rerun would be a second run of the suite, not the gate's cost).

Columns: wall s; the bot's CPU s (summed over processes); wall / bot CPU; the
CPU of every pytest process / bot CPU; plugin ms/conv (the CPU of every pytest
process less the bot's, per conversation: start-up, pytest, the turn loop,
scoring, holding, the gate); peak RSS summed over the processes; MB/conv (the
peak's growth over the smallest size, divided by the extra conversations);
then the gate's own share, measured inside the process that concludes:
gate s and gate CPU s (loading the baseline, in every process, and the whole
end of the run: aggregation, the paired statistics, the reports), gate % (gate
s / wall s), gate MB (the peak RSS above the process's RSS when the end of the
run began; the kernel's high-water mark, reset there), baseline MB (RSS added
by loading the baseline), and the CPU s of aggregation, the paired statistics
(``gate.rows.check``), the reports and report.html alone; the sizes of
results.json and report.html. Targets at 5,000 gated conversations: the
gate's own time under 5% of the run, under 0.05 MB per conversation (plain),
results.json written by streaming, report.html under 25 MB.

``--pytest-alone`` also times a plugin-free pytest run of as many empty tests
per size: pytest's own cost per item, the floor under CPU / target.

``--planning 1000,100000`` times loading and planning that many single-turn
rows from JSONL and from YAML, in this process (no conversation runs): the
part of a run that must stay linear in the number of cases.

``--profile N`` runs N conversations (plain) under py-spy (``pip install
py-spy``), sampling the thread that holds the GIL, and prints where that time
goes per conversation: the chatbot, pytest's own work per item, the plugin's
parts (turn loop and target hand-off, offline scoring, holding the scored
conversation, concluding and the reports), start-up, and samples with no
Python frame (cyclic GC, mostly). Time spent outside the GIL (system time in
thread switches) is not in it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shlex
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
    """The example's BM25 bot, measuring its own CPU time (bench_scale)."""
    import sys, time

    sys.path.insert(0, {example!r})
    from example_rag import make_bot

    _bot = make_bot()
    _spent = [0.0, 0]

    def bot(messages):
        t0 = time.thread_time()
        try:
            return _bot(messages)
        finally:
            _spent[0] += time.thread_time() - t0
            _spent[1] += 1

    def spent():
        return {{"cpu": _spent[0], "calls": _spent[1]}}
    '''
)


PROBE = Path(__file__).resolve().parent / "scale_probe.py"  # the projects' conftest.py


def corpus_sentences() -> list[tuple[str, str]]:
    out = []
    for line in (EXAMPLE / "corpus" / "helpcentre.jsonl").read_text().splitlines():
        if not line.strip():
            continue
        doc = json.loads(line)
        for s in doc["text"].split(". "):
            if len(s.split()) >= 5:
                out.append((doc["id"], s.strip().rstrip(".")))
    return out


def make_project(root: Path, n: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    sents = corpus_sentences()
    convs = []
    for i in range(n):
        turns = []
        for t in range(5):
            doc, s = rng.choice(sents)
            words = s.split()
            q = "What does the help centre say about " + " ".join(words[: min(6, len(words))]).lower() + "?"
            turn = {"rag_input": q if t == 0 else "And about " + " ".join(words[:4]).lower() + "?",
                    "ground_truth": s, "relevant_doc_ids": [doc]}
            if t:
                turn["standalone_question"] = q
            else:  # the default gate's safety_pass_rate applies (no answer says it)
                turn["negative_assertions"] = ["a lifetime refund in gold bars"]
            turns.append(turn)
        convs.append({"id": f"c{i:06d}", "category": rng.choice(["billing", "account", "shipping"]), "turns": turns})
    (root / "golden").mkdir()
    (root / "golden" / "convs.yaml").write_text(yaml.safe_dump({"conversations": convs}, sort_keys=False))
    (root / "bench_target.py").write_text(TARGET.format(example=str(EXAMPLE)))
    (root / "conftest.py").write_text(PROBE.read_text())
    (root / "pyproject.toml").write_text(textwrap.dedent(
        """
        [tool.pytest.ini_options]
        addopts = "-p no:langsmith_plugin"

        [tool.ragdive]
        target = "bench_target:bot"
        corpus = "%s"

        [tool.ragdive.gate]  # the default tolerances; one look (a rerun is a second run, not the gate's cost)
        inconclusive = "pass"

        [tool.ragdive.suites.core]
        conversations = ["golden/convs.yaml"]
        """ % (EXAMPLE / "corpus" / "helpcentre.jsonl")
    ))


# The bot samples its sentences (temperature 0.3), as an LLM would: the gated run and the
# baseline differ conversation by conversation (another seed), so the paired test's
# bootstrap resamples real differences, and a healthy bot passes.
BOT_ENV = {"EXAMPLE_RAG_TEMPERATURE": "0.3", "EXAMPLE_RAG_SEED": "0"}
BASELINE_SEED = "1"
EXTRA_ARGS: list[str] = []  # --pytest-args


def run_once(root: Path, workers: int, tag: str, extra: tuple[str, ...] = ()) -> dict[str, float]:
    """One pytest run of the project (``-n workers`` when > 0) with ``extra`` options; its figures.
    The recording run (tag ``record``) has the bot on another seed."""
    out = root / f"out-{tag}"
    out.mkdir()
    path = os.pathsep.join([str(ROOT), str(root), str(ROOT / "benchmarks")])
    env = dict(os.environ, BENCH_SCALE_OUT=str(out), PYTHONPATH=path, **BOT_ENV)
    if tag == "record":
        env["EXAMPLE_RAG_SEED"] = BASELINE_SEED
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as users run: compiled (and assertion-rewritten) modules are cached
    report = root / f"report-{tag}"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--ragdive-suite=core",
           f"--ragdive-report-dir={report}", *extra, *EXTRA_ARGS]
    if workers:
        cmd += ["-n", str(workers)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"pytest failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    dumps = [json.loads(p.read_text()) for p in out.glob("*.json")]
    if "rerun 1 of at most" in proc.stdout:
        print(f"(the {tag} run reran an inconclusive suite: its figures include the rerun)", flush=True)
    gate = next((d for d in dumps if "gate_cpu" in d), {})  # the process that concluded (plain, or the controller)
    html = report / "report.html"
    return {
        "wall": wall,
        "target": sum(d["cpu"] for d in dumps),
        "calls": sum(d["calls"] for d in dumps),
        "cpu": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        "rss_mb": sum(d["maxrss_kb"] for d in dumps) / 1024,
        "results_mb": (report / "results.json").stat().st_size / 1e6,
        "html_mb": sum(f.stat().st_size for f in report.glob("report*.html")) / 1e6 if html.exists() else 0.0,
        "html_main_mb": html.stat().st_size / 1e6 if html.exists() else 0.0,
        "gate_wall": gate.get("gate_wall", 0.0) + sum(d.get("baseline_wall", 0.0) for d in dumps),
        "gate_cpu": gate.get("gate_cpu", 0.0) + sum(d.get("baseline_cpu", 0.0) for d in dumps),
        "gate_mb": max(0, gate.get("gate_peak_kb", 0) - gate.get("rss_before_kb", 0)) / 1024,
        "baseline_mb": sum(d.get("baseline_kb", 0) for d in dumps) / 1024,
        "aggregate_cpu": gate.get("aggregate_cpu", 0.0),
        "check_cpu": gate.get("check_cpu", 0.0),
        "reports_cpu": gate.get("reports_cpu", 0.0),
        "html_cpu": gate.get("html_cpu", 0.0),
    }


COLUMNS = [  # (header, width, format of a row's figures)
    ("convs", 6, lambda n, r: f"{n}"),
    ("mode", 6, lambda n, r: r["mode"]),
    ("wall s", 7, lambda n, r: f"{r['wall']:.2f}"),
    ("bot CPU s", 9, lambda n, r: f"{r['target']:.2f}"),
    ("wall/bot", 8, lambda n, r: f"{r['wall'] / r['target']:.2f}"),
    ("CPU/bot", 7, lambda n, r: f"{r['cpu'] / r['target']:.2f}"),
    ("plugin ms/conv", 14, lambda n, r: f"{1000 * (r['cpu'] - r['target']) / n:.2f}"),
    ("peak RSS MB", 11, lambda n, r: f"{r['rss_mb']:.0f}"),
    ("MB/conv", 7, lambda n, r: f"{r['per_conv']:.4f}"),
    ("gate s", 6, lambda n, r: f"{r['gate_wall']:.2f}"),
    ("gate CPU s", 10, lambda n, r: f"{r['gate_cpu']:.2f}"),
    ("gate %", 6, lambda n, r: f"{100 * r['gate_wall'] / r['wall']:.1f}"),
    ("gate MB", 7, lambda n, r: f"{r['gate_mb']:.0f}"),
    ("baseline MB", 11, lambda n, r: f"{r['baseline_mb']:.1f}"),
    ("aggregate s", 11, lambda n, r: f"{r['aggregate_cpu']:.2f}"),
    ("paired s", 8, lambda n, r: f"{r['check_cpu']:.2f}"),
    ("reports s", 9, lambda n, r: f"{r['reports_cpu']:.2f}"),
    ("html s", 6, lambda n, r: f"{r['html_cpu']:.2f}"),
    ("results.json MB", 15, lambda n, r: f"{r['results_mb']:.1f}"),
    ("report.html MB", 14, lambda n, r: f"{r['html_main_mb']:.1f}"),
]


EMPTY_TESTS = textwrap.dedent(
    """
    import os
    import pytest

    @pytest.mark.parametrize("i", range(int(os.environ["BENCH_SCALE_N"])))
    def test_nothing(i):
        pass
    """
)


def pytest_alone(n: int) -> float:
    """CPU seconds of a plugin-free pytest run of ``n`` empty tests (the same
    flags): what pytest itself costs for as many items."""
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        (root / "test_nothing.py").write_text(EMPTY_TESTS)
        env = dict(os.environ, BENCH_SCALE_N=str(n))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:ragdive",
               "-p", "no:langsmith_plugin", "-p", "no:xdist"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            sys.exit(f"plugin-free pytest failed ({proc.returncode}):\n{proc.stdout[-2000:]}")
        return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


PROFILE_PARTS = [  # (part, frames that mark it: file or function substrings), first match wins, innermost first
    ("chatbot (inside the target)", ("bench_target.py",)),
    ("holding a scored conversation (JSON, page body, zlib)", ("HeldConversations.add",)),
    ("offline scoring", ("score_conversation",)),
    ("the gate: loading the baseline, conclude, paired test, reports", ("RagdiveSession.conclude", "write_reports",
                                                                         "publish (", "gate_baseline")),
    ("turn loop, target hand-off, event loop", ("ragdive-loop", "ragdive-target", "pytest_ragdive/run/turn_loop.py",
                                                "pytest_ragdive/run/target.py")),
    ("pytest's own work per item", ("pytest_runtest_protocol",)),
    ("start-up: configure, planning, collection, imports", ("pytest_configure", "pytest_collection", "_find_and_load",
                                                             "pytest_sessionstart", "pytest_cmdline_main")),
]


def profile(n: int, gated: bool = True, raw_out: str | None = None) -> None:
    """Sample an N-conversation plain run with py-spy (GIL holder only) and print a table of parts;
    ``gated``: against a baseline recorded first (unsampled), as the table's runs; ``raw_out``: keep
    py-spy's raw samples there."""
    import shutil
    from collections import Counter

    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        sys.exit("--profile needs py-spy: pip install py-spy")
    rate = 200
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        make_project(root, n)
        raw = root / "profile.txt"
        gate = ("--ragdive-baseline=baseline.json",) if gated else ()
        if gated:
            run_once(root, 0, "record", (*gate, "--ragdive-update-baseline"))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(root), str(ROOT / "benchmarks")]), **BOT_ENV)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        cmd = [spy, "record", "--gil", "--nonblocking", "--threads", "-r", str(rate), "-f", "raw", "-o", str(raw), "--",
               sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--ragdive-suite=core",
               f"--ragdive-report-dir={root / 'report'}", *gate, *EXTRA_ARGS]
        proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
        if proc.returncode != 0 or not raw.exists():
            sys.exit(f"py-spy run failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        if raw_out:
            shutil.copyfile(raw, raw_out)
        parts: Counter[str] = Counter()
        for line in raw.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if not count.isdigit():  # a frame whose name holds a line break (a thread name, a lambda's source)
                continue
            frames = stack.split(";")
            if len(frames) == 1:
                parts["no Python frame (cyclic GC, mostly)"] += int(count)
                continue
            part = next((name for name, marks in PROFILE_PARTS if any(m in f for f in frames for m in marks)), "other")
            parts[part] += int(count)
    total = sum(parts.values())
    print(f"\nprofile: {n} conversations, plain, {'gated' if gated else 'no baseline'}, py-spy --gil at {rate} Hz: "
          f"{total / rate:.1f} s holding the GIL\n")
    print("| part | share | ms per conversation |")
    print("|---|---:|---:|")
    for name, _marks in [*PROFILE_PARTS, ("no Python frame (cyclic GC, mostly)", ()), ("other", ())]:
        c = parts.get(name, 0)
        print(f"| {name} | {100 * c / total:5.1f}% | {1000 * c / rate / n:6.2f} |")


def planning(sizes: list[int]) -> None:
    """Seconds to load and plan ``n`` single-turn rows (JSONL and YAML), and seconds per 1,000 rows."""
    sys.path.insert(0, str(ROOT))
    from pytest_ragdive.core.config import load_config
    from pytest_ragdive.run.planning import plan_all

    print("\nplanning: single-turn rows loaded and planned (no conversation runs)\n")
    print("|    rows | format | seconds | s per 1,000 rows | plans |")
    print("|---------|--------|---------|------------------|-------|")
    for n in sizes:
        rows = [{"question_id": f"q{i:07d}", "question": f"What does the help centre say about item {i}?",
                 "expected_answer": f"Item {i} is covered.", "relevant_doc_ids": ["doc-1"]} for i in range(n)]
        for fmt in ("jsonl", "yaml"):
            with tempfile.TemporaryDirectory() as d:
                root = Path(d)
                name = f"cases.{fmt}"
                text = ("\n".join(json.dumps(r) for r in rows) + "\n" if fmt == "jsonl"
                        else yaml.safe_dump({"cases": rows}, sort_keys=False))
                (root / name).write_text(text)
                (root / "corpus.jsonl").write_text(json.dumps({"id": "doc-1", "text": "Every item is covered."}) + "\n")
                (root / "pyproject.toml").write_text(  # with a corpus: the document ids are checked too
                    f'[tool.ragdive]\ncorpus = "corpus.jsonl"\n\n[tool.ragdive.suites.core]\nsingle_turn = ["{name}"]\n')
                cfg = load_config(root / "pyproject.toml")
                t0 = time.perf_counter()
                plans = plan_all(cfg, llm_enabled=False, notes=[])
                dt = time.perf_counter() - t0
            print(f"| {n:>7} | {fmt:6} | {dt:7.2f} | {1000 * dt / n:16.3f} | {len(plans):5d} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10,100,1000,5000,20000", help="comma-separated conversation counts")
    ap.add_argument("--modes", default="plain,n2", help="plain and/or n2 (pytest -n 2)")
    ap.add_argument("--ungated", action="store_true",
                    help="run without a baseline (no gate); by default a baseline is recorded, then gated against")
    ap.add_argument("--pytest-args", default="", metavar="ARGS",
                    help="extra arguments for every run, e.g. '-p proto_conversation_threads' (benchmarks/ is on the path)")
    ap.add_argument("--pytest-alone", action="store_true",
                    help="also time plugin-free runs of as many empty tests (pytest's own cost per item)")
    ap.add_argument("--profile", type=int, metavar="N",
                    help="only profile a plain run of N conversations with py-spy (where the time goes)")
    ap.add_argument("--profile-raw", metavar="PATH", help="with --profile: keep py-spy's raw samples at PATH")
    ap.add_argument("--planning", metavar="SIZES",
                    help="only time loading and planning SIZES single-turn rows (comma-separated), JSONL and YAML")
    args = ap.parse_args()
    if args.planning:
        planning([int(x) for x in args.planning.split(",")])
        return
    EXTRA_ARGS[:] = shlex.split(args.pytest_args)
    if args.profile:
        profile(args.profile, gated=not args.ungated, raw_out=args.profile_raw)
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    modes = [m.strip() for m in args.modes.split(",")]
    gated = not args.ungated
    print(f"five-turn scripted conversations (4 stand-alone probes each), example BM25 bot; {os.cpu_count()} cores; "
          + ("gated against a baseline recorded first (row 'record': that run, plain)" if gated else "no baseline")
          + "\n")
    print("| " + " | ".join(f"{h:>{w}}" for h, w, _ in COLUMNS) + " |")
    print("|" + "|".join("-" * (w + 1) + ":" for _, w, _ in COLUMNS) + "|")
    first: dict[str, tuple[int, float]] = {}
    targets: dict[tuple[int, str], float] = {}
    for n in sizes:
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            make_project(root, n)
            runs = [("record", 0, ("--ragdive-baseline=baseline.json", "--ragdive-update-baseline"))] if gated else []
            runs += [(m, 2 if m == "n2" else 0, ("--ragdive-baseline=baseline.json",) if gated else ()) for m in modes]
            for mode, workers, extra in runs:
                r = run_once(root, workers, mode, extra)
                base = first.setdefault(mode, (n, r["rss_mb"]))
                r["per_conv"] = (r["rss_mb"] - base[1]) / (n - base[0]) if n > base[0] else float("nan")
                r["mode"] = mode
                print("| " + " | ".join(f"{fmt(n, r):>{w}}" for _, w, fmt in COLUMNS) + " |", flush=True)
                targets[(n, mode)] = r["target"]
    if args.pytest_alone:
        # the floor under CPU / target: pytest's own cost for as many items, over the bot's CPU at that size
        print("\npytest alone: the same number of empty tests, plugin-free, serial\n")
        print("|  tests | CPU s | ms per test | as CPU / target (plain) |")
        print("|--------|-------|-------------|-------------------------|")
        for n in sizes:
            cpu = pytest_alone(n)
            share = cpu / targets[(n, "plain")] if (n, "plain") in targets else float("nan")
            print(f"| {n:>6} | {cpu:5.2f} | {1000 * cpu / n:11.3f} | {share:23.3f} |", flush=True)


if __name__ == "__main__":
    main()
