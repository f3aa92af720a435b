"""The whole plugin on the LLM path: a generated and judged suite against the
fake server at a fixed latency, per transport and concurrency.

    python benchmarks/bench_plugin_llm.py                                  # 64 x 5, 8/16/32/64, every transport
    python benchmarks/bench_plugin_llm.py --concurrency 32 --transports openai_http
    python benchmarks/bench_plugin_llm.py --concurrency 32,64 --judge-prompts combined   # one judge request per turn

A temporary project runs ``pytest --ragdive-suite=core`` on a generated suite
(``conversations`` x ``turns``, the RAG-DIVE simulator and validator, the
built-in judges, the forgetfulness probe) against the bundled example's BM25
bot, with :class:`pytest_ragdive.testing.FakeLLMServer` in its own process
answering every prompt with a valid reply after ``latency`` seconds. Then it
runs again on the same cache (the warm rerun).

Transports: ``openai_http`` (the lean path, model ``openai/fake-model``), ``litellm``
(the same model through litellm), ``auto-groq`` (model ``groq/fake-model`` with
``transport = "auto"``: a litellm provider string that the client routes over the lean
path itself, litellm never imported; ``llm.api_base`` points it at the fake server).

"In flight" sets both bounds: ``concurrency`` (conversations in their turn
loops) and ``llm.max_in_flight`` (requests). Columns: requests the server
got; wall s of the test loop (pytest start-up, and fixed start-up costs done
in ``pytest_configure``: the imports of aiohttp and litellm, the chatbot's
import and index build, the offline metrics' import and the embedded model's
load, are left out); the ideal: the larger of the request
bound (requests x latency / in flight) and the conversation bound
(ceil(conversations / in flight) waves of simulator + validator calls per
turn, then one round of judge calls); efficiency = ideal / wall; client CPU
per call (the pytest process's CPU in the test loop, less the bot's, per
request); the fake server's CPU per request (its own process: on 2 cores it
shares the machine with the client); the first request's delay after the
test loop starts; the most requests the server saw at once; the warm rerun's
requests and wall; the load average before and after the row.

``--repeat N`` runs the whole sweep N times, one row per run (the machine's speed
drifts by a third within an hour on a shared 2-core host), then prints each row's
median over the runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "example_project"

SERVER = r'''
import itertools, json, sys, time
from pytest_ragdive.testing import FakeLLMServer
from pytest_ragdive.testing.replies import example_from_schema

n = itertools.count()
T = []  # when each request's reply was made (monotonic; the request came latency_s earlier)

def example(schema, defs):
    return example_from_schema(schema, defs, fill=True)

def schema_in_prompt(text):
    """The schema that JSON mode puts into the system prompt (one line of canonical JSON)."""
    i = text.find("JSON schema:\n")
    if i < 0:
        return None
    try:
        return json.loads(text[i + len("JSON schema:\n"):].split("\n", 1)[0])
    except ValueError:
        return None

def handler(body):
    T.append(time.monotonic())
    text = "\n".join(m.get("content") or "" for m in body.get("messages", []) if isinstance(m.get("content"), str))
    rf = body.get("response_format") or {}
    # the schema asked for: json_schema mode sends it, JSON mode (litellm here) puts it into the prompt
    schema = (rf.get("json_schema") or {}).get("schema") or schema_in_prompt(text) or {}
    props = schema.get("properties", {})
    if schema.get("title") == "CombinedJudgment":  # judge_prompts = "combined": one verdict per context
        from pytest_ragdive.metrics.judged.combined import placeholder_reply
        return placeholder_reply(schema, body.get("messages", []), fill=True)
    if "rag_input" in props:  # the simulator
        i = next(n)
        first = "this is the first turn" in text
        q = f"How do I change setting number {i} of my account?"
        return {"rag_input": q, "standalone_question": q, "ground_truth": f"Open settings and pick option {i}.",
                "question_type": "Initial" if first else "Follow-up"}
    if "valid" in props:  # the validator
        return {"valid": True, "reason": "fine", "failed_checks": []}
    if not schema:
        return {"claims": [{"claim": "x", "supported": True}], "verdicts": [{"relevant": True}],
                "statements": [{"statement": "x", "attributed": True}], "correct": True, "forgetful": False,
                "turns": [], "retained": True}
    return example(schema, schema.get("$defs", {}))

s = FakeLLMServer(handler=handler, latency_s=float(sys.argv[1])).start()
print(s.url, flush=True)
c0 = time.process_time()
for line in sys.stdin:
    if line.strip() == "count":
        print(json.dumps({"requests": s.request_count, "max_in_flight": s.max_in_flight,
                          "cpu": time.process_time() - c0, "first": min(T, default=0.0) - s.latency_s,
                          "last": max(T, default=0.0)}), flush=True)
        s.reset()
        T.clear()
        c0 = time.process_time()
s.stop()
'''

TARGET = textwrap.dedent(
    '''
    import sys, time
    sys.path.insert(0, {example!r})
    from example_rag import make_bot

    _bot = make_bot()
    spent = [0.0]

    def bot(messages):
        t0 = time.thread_time()
        try:
            return _bot(messages)
        finally:
            spent[0] += time.thread_time() - t0
    '''
)

CONFTEST = textwrap.dedent(
    '''
    import json, os, sys, time
    import pytest

    def pytest_configure(config):
        # fixed start-up costs, not scheduling: the HTTP library's import (aiohttp loads the
        # CA bundle), litellm's, and the chatbot's own import and index build
        import aiohttp  # noqa: F401
        import bench_target  # noqa: F401
        # the offline metrics' import and the embedded model's load (bench_semantic_startup.py
        # measures them), which the first scored turn would otherwise pay inside the loop
        import pytest_ragdive.metrics.offline  # noqa: F401
        try:
            from pytest_ragdive.metrics.semantic import embedder
        except ImportError:  # a tree before the embedded model
            pass
        else:
            embedder()
        if os.environ.get("BENCH_PREIMPORT_LITELLM"):
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            import litellm  # noqa: F401

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(session):
        t0, c0, m0 = time.perf_counter(), time.process_time(), time.monotonic()
        try:
            return (yield)
        finally:
            mod = sys.modules.get("bench_target")
            with open(os.environ["BENCH_OUT"], "w") as f:
                json.dump({"t0": m0, "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
                           "target": mod.spent[0] if mod else 0.0}, f)
    '''
)


def project(root: Path, url: str, transport: str, concurrency: int, conversations: int, turns: int,
            judge_prompts: str = "per_metric") -> None:
    model = "groq/fake-model" if transport == "auto-groq" else "openai/fake-model"
    kind = "auto" if transport == "auto-groq" else transport
    (root / "bench_target.py").write_text(TARGET.format(example=str(EXAMPLE)))
    (root / "conftest.py").write_text(CONFTEST)
    (root / "pyproject.toml").write_text(textwrap.dedent(f"""
        [tool.pytest.ini_options]
        addopts = "-p no:langsmith_plugin"

        [tool.ragdive]
        target = "bench_target:bot"
        corpus = "{EXAMPLE / 'corpus' / 'helpcentre.jsonl'}"
        model = "{model}"
        concurrency = {concurrency}
        cache_dir = "cache"
        judge_prompts = "{judge_prompts}"

        [tool.ragdive.llm]
        api_base = "{url}"
        api_key_env = "RAGDIVE_FAKE_LLM_KEY"
        transport = "{kind}"
        max_in_flight = {concurrency}

        [tool.ragdive.suites.core.generated]
        conversations = {conversations}
        turns = {turns}
        """))


def run(root: Path, transport: str) -> dict[str, float]:
    out = root / "out.json"
    env = dict(os.environ, BENCH_OUT=str(out), RAGDIVE_FAKE_LLM_KEY="sk-fake",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(root)]))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if transport == "litellm":
        env["BENCH_PREIMPORT_LITELLM"] = "1"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--ragdive-suite=core",
                           f"--ragdive-report-dir={root / 'report'}"], cwd=root, env=env, capture_output=True, text=True)
    if proc.returncode not in (0, 1) or not out.exists():
        sys.exit(f"pytest failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    data = json.loads(out.read_text())
    results = json.loads((root / "report" / "results.json").read_text())
    errors = [c["error"] for c in results["conversations"] if c.get("error")]
    if errors:
        print(f"  ({len(errors)} conversation(s) errored: {errors[0][:160]})", file=sys.stderr)
    return data


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--conversations", type=int, default=64)
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--concurrency", default="8,16,32,64")
    ap.add_argument("--transports", default="openai_http,litellm,auto-groq",
                    help="openai_http, litellm, auto-groq (a groq/ model string routed over the lean path)")
    ap.add_argument("--repeat", type=int, default=1, help="run the sweep N times, then print the medians")
    ap.add_argument("--judge-prompts", default="per_metric", choices=("per_metric", "combined"),
                    help="combined: one judge request per answered turn (judge_prompts)")
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(args.latency)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env)
    assert server.stdin is not None and server.stdout is not None
    url = server.stdout.readline().strip()

    def count() -> dict[str, float]:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write("count\n")
        server.stdin.flush()
        return json.loads(server.stdout.readline())

    import math

    def ideal_s(requests: int, level: int) -> float:
        """The larger of the request bound and the conversation bound: ``level``
        conversations in their turn loops at a time (simulator and validator per
        turn), the last wave then one round of judge calls."""
        waves = math.ceil(args.conversations / level)
        return max(requests * args.latency / level, (waves * 2 * args.turns + 1) * args.latency)

    print(f"{args.conversations} generated conversations x {args.turns} turns, judged; latency {args.latency:g} s; "
          f"{os.cpu_count()} CPUs\n")
    print("| transport | in flight | requests | wall s | ideal s | efficiency | client CPU ms/call | bot CPU s | "
          "server CPU ms/req | first request s | max in flight | warm requests | warm wall s | load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    runs: dict[tuple[str, int], list[tuple[float, float, float]]] = {}
    sweep = [(t, int(x)) for _ in range(args.repeat) for t in args.transports.split(",")
             for x in args.concurrency.split(",")]
    try:
        for transport, level in sweep:
            with tempfile.TemporaryDirectory() as d:
                root = Path(d)
                project(root, url, transport, level, args.conversations, args.turns, args.judge_prompts)
                count()
                load = os.getloadavg()[0]
                cold = run(root, transport)
                c = count()
                warm = run(root, transport)
                w = count()
            requests = int(c["requests"])
            ideal = ideal_s(requests, level)
            cpu = 1000 * (cold["cpu"] - cold["target"]) / max(1, requests)
            server_cpu = 1000 * c["cpu"] / max(1, requests)
            first = c["first"] - cold["t0"] if requests else float("nan")
            runs.setdefault((transport, level), []).append((ideal / cold["wall"], cpu, cold["target"]))
            print(f"| {transport} | {level} | {requests} | {cold['wall']:.2f} | {ideal:.2f} | "
                  f"{ideal / cold['wall']:.2f} | {cpu:.2f} | {cold['target']:.2f} | {server_cpu:.2f} | {first:.2f} | "
                  f"{int(c['max_in_flight'])} | {int(w['requests'])} | {warm['wall']:.2f} | "
                  f"{load:.1f}-{os.getloadavg()[0]:.1f} |", flush=True)
    finally:
        server.stdin.close()
        server.wait(timeout=10)
    if args.repeat > 1:
        import statistics

        print(f"\nmedians of {args.repeat} runs\n")
        print("| transport | in flight | efficiency (each run) | efficiency | client CPU ms/call | bot CPU s |")
        print("|---|---:|---|---:|---:|---:|")
        for (transport, level), rows in runs.items():
            each = ", ".join(f"{r[0]:.2f}" for r in rows)
            med = [statistics.median(r[i] for r in rows) for i in range(3)]
            print(f"| {transport} | {level} | {each} | {med[0]:.2f} | {med[1]:.2f} | {med[2]:.2f} |")


if __name__ == "__main__":
    main()
