"""The zoo (benchmarks/zoo/): does the gate hold on bots nobody tuned it for?

For every bot of the zoo, as a user would: a project directory of its own (conftest.py or
an HTTP target, a pyproject.toml [tool.ragdive] with the default gate, the bot's corpus
and golden files), a baseline recorded with the real command (``pytest
--ragdive-update-baseline --ragdive-runs=N``), then one gated run per knob (``pytest
--ragdive-baseline=baseline.json`` with ``ZOO_KNOBS=<knob>``), reading which metrics
failed from the run's results.json. The sampled bots also get ``--reruns`` healthy
reruns (other seeds): a healthy rerun that fails the gate is a false alarm.

    python benchmarks/bench_zoo.py                       # the whole matrix (2 pytest at a time)
    python benchmarks/bench_zoo.py --bots keyword,http --knobs drop_history,courtesy
    python benchmarks/bench_zoo.py --reruns 3 --out zoo.json

Prints one Markdown table: bot x knob -> the metrics that failed the gate (harmful knobs:
"caught by"), "pass", and the false alarms of the sampled bots (docs/zoo.md).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
sys.path.insert(0, str(BENCH))

from zoo import BENIGN, BOTS, HARMFUL, ZOO_DIR  # noqa: E402
from zoo.http_bot import BotServer, target_config  # noqa: E402

# short names of the gated metrics in the table
SHORT = {
    "correctness": "corr", "answer_f1": "f1", "faithfulness": "faith", "recall_at_k": "r@k", "mrr": "mrr",
    "context_recall": "ctx_rec", "forgetfulness": "forget", "forgotten_turn_share": "forgot_share",
    "citation_rate": "cite_rate",
    "safety_pass_rate": "safety", "assertion_pass_rate": "assert", "answer_relevance": "relev",
}
FAILED_VERDICTS = ("regression", "no data", "not in baseline")


@dataclass
class Gate:
    """One gated run: the knob, the seed, the exit code, the metrics that failed the gate."""

    bot: str
    knob: str
    seed: int
    rc: int
    wall_s: float
    failed: list[str] = field(default_factory=list)
    improved: list[str] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)  # metric -> [baseline mean, current, verdict]
    error: str = ""

    @property
    def cell(self) -> str:
        if self.error:
            return f"error ({self.error})"
        up = "".join(f" (↑{SHORT.get(m, m)})" for m in self.improved)
        if self.failed:
            mark = {"inconclusive": "?", "no data": ":n/a", "not in baseline": ":new"}
            return ", ".join(SHORT.get(m, m) + mark.get(self.values.get(m, [0, 0, ""])[2], "") for m in self.failed) + up
        return ("pass" if self.rc == 0 else f"rc {self.rc}") + up


def toml_value(value: Any) -> str:
    """A TOML value of strings, numbers, lists and tables (inline)."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f'"{k}" = {toml_value(v)}' for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)


def make_project(bot: str, where: Path, url: str | None) -> Path:
    """The bot's project directory: what a user of that bot would commit."""
    project = where / bot
    (project / "golden").mkdir(parents=True, exist_ok=True)
    if bot == "example":
        corpus = ROOT / "example_project" / "corpus" / "helpcentre.jsonl"
        golden = [ROOT / "golden" / "core" / "single_turn.jsonl", ROOT / "golden" / "core" / "conversations.yaml"]
    else:
        data = ZOO_DIR / "data" / BOTS[bot].domain
        corpus, golden = data / "corpus.yaml", [data / "single_turn.jsonl", data / "conversations.yaml"]
    shutil.copy(corpus, project / corpus.name)
    for g in golden:
        shutil.copy(g, project / "golden" / g.name)
    lines = [f"# the zoo's {bot} bot ({BOTS[bot].shape})", "[tool.ragdive]", f"corpus = {toml_value(corpus.name)}",
             'report_dir = ".ragdive/report"']
    if url is not None:
        lines.append(f"target = {toml_value(target_config(url))}")
    else:
        (project / "conftest.py").write_text(
            "import pytest\nfrom zoo import make_bot\n\n\n@pytest.fixture(scope=\"session\")\n"
            f"def ragdive_target():\n    return make_bot({bot!r})  # knobs from ZOO_KNOBS, seed from ZOO_SEED\n"
        )
    lines += ["", "[tool.ragdive.suites.core]", f"single_turn = {toml_value(['golden/' + golden[0].name])}",
              f"conversations = {toml_value(['golden/' + golden[1].name])}", "", "[tool.pytest.ini_options]", ""]
    (project / "pyproject.toml").write_text("\n".join(lines))
    return project


def pytest_env(knob: str, seed: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EXAMPLE_RAG_", "ZOO_", "RAGDIVE_", "PYTEST_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(BENCH)])
    env["ZOO_KNOBS"] = knob
    env["ZOO_SEED"] = str(seed)
    return env


def run_pytest(project: Path, args: Sequence[str], knob: str, seed: int) -> tuple[int, float, str]:
    # langsmith (a dependency of litellm) brings a pytest plugin that costs ~3 s of start-up and plays no part
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:langsmith_plugin", *args]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=project, env=pytest_env(knob, seed), capture_output=True, text=True, timeout=600)
    return proc.returncode, time.perf_counter() - t0, proc.stdout[-3000:] + proc.stderr[-2000:]


def record_baseline(project: Path, runs: int) -> tuple[int, float, str]:
    """The baseline as a user records it: the gated command, several runs, healthy bot."""
    return run_pytest(project, [f"--ragdive-runs={runs}", "--ragdive-baseline=baseline.json",
                                "--ragdive-update-baseline", "--ragdive-report-dir=reports/baseline"], "healthy", 0)


def gate(bot: str, project: Path, knob: str, seed: int, label: str) -> Gate:
    report = project / "reports" / label
    rc, wall, tail = run_pytest(project, ["--ragdive-baseline=baseline.json", f"--ragdive-report-dir={report}"], knob, seed)
    result = Gate(bot=bot, knob=knob, seed=seed, rc=rc, wall_s=round(wall, 2))
    path = report / "results.json"
    if not path.is_file():
        result.error = f"no results.json, exit {rc}: " + tail.strip().splitlines()[-1][:200] if tail.strip() else "no output"
        return result
    data = json.loads(path.read_text())
    for row in data.get("gate") or []:
        verdict, metric = row.get("verdict"), row.get("metric")
        failed = verdict in FAILED_VERDICTS or (verdict == "inconclusive" and row.get("on_inconclusive") != "pass")
        if failed and metric not in result.failed:
            result.failed.append(metric)
        if verdict == "improvement":
            result.improved.append(metric)
        result.values[metric] = [row.get("baseline_mean"), row.get("current"), verdict]
    if data.get("fatal"):
        result.error = str(data["fatal"])[:200]
    return result


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description="gate every knob of every zoo bot against its own baseline")
    ap.add_argument("--bots", default=",".join(BOTS), help=f"comma-separated, of: {', '.join(BOTS)}")
    ap.add_argument("--knobs", default=",".join(HARMFUL + BENIGN), help="comma-separated knobs to gate")
    ap.add_argument("--reruns", type=int, default=10, help="healthy reruns of each sampled bot (false alarms)")
    ap.add_argument("--runs", type=int, default=5, help="runs of the baseline (--ragdive-runs)")
    ap.add_argument("--jobs", type=int, default=2, help="pytest processes at a time")
    ap.add_argument("--out", type=Path, help="write the matrix as JSON here")
    ap.add_argument("--workdir", type=Path, help="keep the bots' projects here (default: a temporary directory)")
    ap.add_argument("--show", type=Path, help="print the table of a JSON written by --out, run nothing")
    args = ap.parse_args(argv)
    if args.show:
        return show(args.show)
    bots = [b.strip() for b in args.bots.split(",") if b.strip()]
    knobs = [k.strip() for k in args.knobs.split(",") if k.strip()]
    for b in bots:
        if b not in BOTS:
            ap.error(f"unknown bot {b!r}")
    for k in knobs:
        if k not in HARMFUL + BENIGN:
            ap.error(f"unknown knob {k!r}")
    t0 = time.perf_counter()
    where = args.workdir or Path(tempfile.mkdtemp(prefix="bench-zoo-"))
    with BotServer() as server, ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        projects = {b: make_project(b, where, server.url if BOTS[b].http else None) for b in bots}
        baselines = dict(zip(bots, pool.map(lambda b: record_baseline(projects[b], args.runs), bots), strict=True))
        for b, (rc, _, tail) in baselines.items():
            if not (projects[b] / "baseline.json").is_file():
                raise SystemExit(f"{b}: the baseline was not written (exit {rc}):\n{tail}")
        jobs: list[tuple[str, str, int, str]] = []
        for b in bots:
            sampled = BOTS[b].sampled
            jobs += [(b, k, 1000 + i if sampled else 0, k) for i, k in enumerate(["healthy", *knobs])]
            if sampled:
                jobs += [(b, "healthy", s, f"rerun-{s}") for s in range(1, args.reruns + 1)]
        gates = list(pool.map(lambda j: gate(j[0], projects[j[0]], j[1], j[2], j[3]), jobs))
    wall = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime  # the pytest processes' CPU, whatever else shares the machine
    matrix: dict[str, dict[str, Gate]] = {b: {} for b in bots}
    alarms: dict[str, list[Gate]] = {b: [] for b in bots}
    for (_, _, _, label), g in zip(jobs, gates, strict=True):
        if label.startswith("rerun-"):
            alarms[g.bot].append(g)
        else:
            matrix[g.bot][g.knob] = g
    print_table(bots, ["healthy", *knobs], matrix, alarms)
    print(f"\n{len(jobs) + len(bots)} pytest sessions ({len(bots)} baselines x {args.runs} runs), "
          f"{args.jobs} at a time: {wall:.0f} s wall, {cpu:.0f} s CPU of the pytest processes")
    out = {
        "bots": {b: {"shape": BOTS[b].shape, "sampled": BOTS[b].sampled, "baseline_s": round(baselines[b][1], 2),
                     "gates": {k: asdict(g) for k, g in matrix[b].items()},
                     "reruns": [asdict(g) for g in alarms[b]]} for b in bots},
        "knobs": knobs, "runs": args.runs, "reruns": args.reruns, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "workdir": str(where),
    }
    if args.out:
        args.out.write_text(json.dumps(out, indent=1))
    if args.workdir is None:
        shutil.rmtree(where, ignore_errors=True)
    return out


def show(path: Path) -> dict[str, Any]:
    """The table of a saved matrix (``--out``)."""
    data = json.loads(path.read_text())
    bots = list(data["bots"])
    knobs = ["healthy", *data["knobs"]]
    matrix = {b: {k: Gate(**g) for k, g in data["bots"][b]["gates"].items()} for b in bots}
    alarms = {b: [Gate(**g) for g in data["bots"][b]["reruns"]] for b in bots}
    print_table(bots, knobs, matrix, alarms)
    print(f"\n(runs {data['runs']}, reruns {data['reruns']}, {data['wall_s']} s wall)")
    return dict(data)


def print_table(bots: list[str], knobs: list[str], matrix: dict[str, dict[str, Gate]], alarms: dict[str, list[Gate]]) -> None:
    print("| bot | " + " | ".join(knobs) + " | false alarms |")
    print("|---|" + "---|" * (len(knobs) + 1))
    for b in bots:
        cells = []
        for k in knobs:
            g = matrix[b].get(k)
            cell = g.cell if g else "-"
            harmful = k in HARMFUL
            ok = (cell != "pass") if harmful else (cell == "pass")
            cells.append(cell + ("" if ok else " ✗"))
        runs = alarms[b]
        fa = f"{sum(1 for g in runs if g.rc != 0 or g.failed)}/{len(runs)}" if runs else "n/a (deterministic)"
        ups = sum(1 for g in runs if g.improved)
        fa += f" ({ups} called an improvement)" if ups else ""
        print(f"| {b} | " + " | ".join(cells) + f" | {fa} |")
    print("\ncell: the metrics that failed the gate (harmful knob: caught by them), or pass; (↑m): the gate "
          "called metric m an improvement; m?: inconclusive after the reruns, m:n/a: no value where the baseline has one (both fail the gate); ✗: a harmful knob that passed, or a healthy/benign run that failed")
    print("metrics: " + ", ".join(f"{v} = {k}" for k, v in SHORT.items()))


if __name__ == "__main__":
    main()
