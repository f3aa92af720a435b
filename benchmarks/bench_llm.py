"""Scheduler efficiency of the LLM client against the fake server.

    python benchmarks/bench_llm.py [--conversations 200] [--latency 0.1]
                                   [--concurrency 8,16,32] [--transports litellm,openai_http]
                                   [--cache] [--json out.json]

Each conversation is 3 sequential turns; a turn is 1 simulator call followed by
4 concurrent judge calls (15 calls a conversation, 3000 for 200). All
conversations start at once and share the client's concurrency limit. The fake
OpenAI-compatible server answers every call after a fixed latency; it runs in
a separate process so that its threads do not compete with the client for the
GIL.

ideal wall time = makespan of the call graph on ``concurrency`` slots with
zero client overhead (event-driven list scheduling, longest remaining path
first; never below max(critical path, work / slots)).
efficiency = ideal / measured wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TURNS = 3
JUDGES = 4

SERVER_SCRIPT = """
import sys, time
from pytest_ragdive.testing import FakeLLMServer
with FakeLLMServer(lambda body: {"score": 1.0, "reason": "ok"} if body.get("response_format") or "JSON" in str(body["messages"]) else "next question", latency_s=float(sys.argv[1])) as s:
    print(s.url, flush=True)
    sys.stdin.read()  # until the parent closes our stdin
"""


# --------------------------------------------------------------------------
# the ideal schedule


def ideal_wall_time(n_conversations: int, slots: int, latency: float) -> float:
    """Makespan of unit-latency calls on ``slots`` slots, zero overhead.

    Greedy list scheduling: whenever slots are free, start ready calls,
    preferring conversations with the most stages left (critical path first).
    """
    stages = [1, JUDGES] * TURNS
    n_stages = len(stages)
    # ready queue of (-(stages left), conv, calls) ; running events (finish time, conv)
    ready: list[tuple[int, int, int]] = [(-n_stages, c, stages[0]) for c in range(n_conversations)]
    heapq.heapify(ready)
    stage_of = [0] * n_conversations
    outstanding = [0] * n_conversations
    events: list[tuple[float, int]] = []
    free = slots
    now = 0.0
    done = 0
    while done < n_conversations:
        while free > 0 and ready:
            prio, c, calls = heapq.heappop(ready)
            take = min(free, calls)
            free -= take
            outstanding[c] += take
            for _ in range(take):
                heapq.heappush(events, (now + latency, c))
            if calls > take:
                heapq.heappush(ready, (prio, c, calls - take))
        now, c = heapq.heappop(events)
        free += 1
        outstanding[c] -= 1
        # stage done when nothing outstanding and nothing of it still waiting
        if outstanding[c] == 0 and not any(rc == c for _, rc, _ in ready):
            stage_of[c] += 1
            if stage_of[c] == n_stages:
                done += 1
            else:
                heapq.heappush(ready, (-(n_stages - stage_of[c]), c, stages[stage_of[c]]))
    work_bound = n_conversations * sum(stages) * latency / slots
    return max(now, work_bound, n_stages * latency)


# --------------------------------------------------------------------------
# the measured run


async def run_once(cfg: Any, n_conversations: int) -> tuple[float, Any]:
    from pydantic import BaseModel

    from pytest_ragdive.llm import LLMClient

    class Score(BaseModel):
        score: float
        reason: str

    client = LLMClient.from_config(cfg)

    async def conversation(c: int) -> None:
        history: list[dict[str, str]] = []
        for t in range(TURNS):
            history.append({"role": "user", "content": f"conversation {c} turn {t}"})
            said = await client.complete_text("simulator", history, prompt_id="bench_sim", prompt_version="1")
            history.append({"role": "assistant", "content": said})
            results = await asyncio.gather(
                *[
                    client.complete_json(
                        "judge",
                        [{"role": "user", "content": f"judge {j} of conversation {c} turn {t}"}],
                        Score,
                        prompt_id=f"bench_judge_{j}",
                        prompt_version="1",
                    )
                    for j in range(JUDGES)
                ]
            )
            assert all(r.value is not None for r in results)

    # warm up: imports (litellm), the HTTP session, one round trip
    await client.complete_text("simulator", [{"role": "user", "content": f"warmup {time.time()}"}])
    t0 = time.perf_counter()
    await asyncio.gather(*[conversation(c) for c in range(n_conversations)])
    wall = time.perf_counter() - t0
    stats = client.stats
    await client.aclose()
    return wall, stats


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conversations", type=int, default=200)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--concurrency", default="8,16,32")
    ap.add_argument("--transports", default="openai_http,litellm")
    ap.add_argument("--cache", action="store_true", help="go through a fresh disk cache (record_mode new_episodes)")
    ap.add_argument("--json", help="also write the rows as JSON to this file")
    args = ap.parse_args()

    from pytest_ragdive.testing import config_for

    levels = [int(x) for x in args.concurrency.split(",")]
    transports = [t.strip() for t in args.transports.split(",") if t.strip()]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER_SCRIPT, str(args.latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert server.stdout is not None
    url = server.stdout.readline().strip()
    calls = args.conversations * TURNS * (1 + JUDGES)
    print(
        f"{args.conversations} conversations x {TURNS} turns x (1 simulator + {JUDGES} judge calls) = {calls} calls; "
        f"server latency {args.latency:g} s; cache {'on' if args.cache else 'off'}; python {sys.version.split()[0]}, "
        f"{os.cpu_count()} CPUs"
    )
    head = f"{'transport':<12} {'concurrency':>11} {'ideal s':>8} {'wall s':>8} {'efficiency':>10} {'calls/s':>8} {'client CPU ms/call':>18}"
    print(head)
    print("-" * len(head))
    rows = []
    try:
        for transport in transports:
            for level in levels:
                with tempfile.TemporaryDirectory() as tmp:
                    cfg = config_for(
                        url,
                        cache_dir=tmp,
                        record_mode="new_episodes" if args.cache else "off",
                        concurrency=level,
                        # the ideal schedules `level` requests at once: bound the client's requests the same
                        # (llm.max_in_flight defaults to 4 x concurrency)
                        llm={"transport": transport, "timeout_s": 30, "max_retries": 2, "max_in_flight": level},
                    )
                    cpu0 = time.process_time()
                    wall, stats = asyncio.run(run_once(cfg, args.conversations))
                    cpu = time.process_time() - cpu0
                ideal = ideal_wall_time(args.conversations, level, args.latency)
                row = {
                    "transport": transport,
                    "concurrency": level,
                    "ideal_s": round(ideal, 3),
                    "wall_s": round(wall, 3),
                    "efficiency": round(ideal / wall, 3),
                    "calls_per_s": round(calls / wall, 1),
                    "cpu_ms_per_call": round(1000 * cpu / (calls + 1), 2),
                    "requests": stats.total().requests,
                }
                rows.append(row)
                print(
                    f"{transport:<12} {level:>11} {ideal:>8.2f} {wall:>8.2f} {ideal / wall:>10.2f} "
                    f"{calls / wall:>8.1f} {row['cpu_ms_per_call']:>18.2f}",
                    flush=True,
                )
    finally:
        if server.stdin:
            server.stdin.close()
        server.wait(timeout=10)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
