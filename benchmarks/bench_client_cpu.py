"""The LLM client's own CPU per call, without the rest of the plugin: ``--calls`` judge
calls (the faithfulness prompt, three contexts) through :class:`LLMClient` on the lean
path, against the fake server in its own process, ``--in-flight`` at once.

    python benchmarks/bench_client_cpu.py                          # cold (miss, claim, fetch, store) and warm (hits)
    python benchmarks/bench_client_cpu.py --record-mode off        # the same without the cache
    python benchmarks/bench_client_cpu.py --profile cold.prof      # cProfile of the cold phase
    python benchmarks/bench_client_cpu.py --shared                 # as if another process shared the cache

Alone (the default), the client sends without cross-process claims (llm/presence.py);
``--shared`` keeps another client's presence row in the cache, so every cold call is
claimed first, as under pytest-xdist.

CPU per call is this process's CPU time over the calls (the server's is its own), which
a loaded machine disturbs less than wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SERVER = r'''
import sys
from pytest_ragdive.testing import FakeLLMServer
s = FakeLLMServer(latency_s=float(sys.argv[1])).start()
print(s.url, flush=True)
sys.stdin.read()
s.stop()
'''


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--in-flight", type=int, default=32)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--record-mode", default="new_episodes")
    ap.add_argument("--profile", default=None, help="write a cProfile of the cold phase here")
    ap.add_argument("--shared", action="store_true", help="another client's presence in the cache: calls are claimed")
    args = ap.parse_args()

    from pytest_ragdive.llm import LLMClient
    from pytest_ragdive.llm.prompts import FENCE_NOTE, fence, load_prompt
    from pytest_ragdive.metrics.judged.schemas import FaithfulnessJudgment
    from pytest_ragdive.testing import config_for

    prompt = load_prompt("judge_faithfulness")

    def messages(i: int) -> list[dict[str, str]]:
        ctx = "\n\n".join(
            f"Context {k}:\n" + fence(f"Section {i}.{k}: refunds are accepted within {14 + k} days of delivery "
                                      "when the item is unused and in its original packaging.", f"context {k}")
            for k in range(1, 4)
        )
        return prompt.render(fence_note=FENCE_NOTE, question=fence(f"How long do I have for refund {i}?", "question"),
                             answer=fence(f"Within {14 + i % 7} days of delivery under policy {i}.", "answer"),
                             contexts=ctx, n_contexts=3)

    batch = [messages(i) for i in range(args.calls)]
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(args.latency)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env={"PYTHONPATH": str(ROOT)})
    assert server.stdout is not None and server.stdin is not None
    url = server.stdout.readline().strip()
    out: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as d:
        cfg = config_for(url, cache_dir=d, record_mode=args.record_mode, concurrency=max(1, args.in_flight // 4),
                         llm={"transport": "openai_http", "max_in_flight": args.in_flight})
        stop = threading.Event()
        if args.shared:  # another client is there, renewed as a live one renews its row
            from pytest_ragdive.llm.cache import LLMCache
            from pytest_ragdive.llm.claims import new_marker

            other, marker = LLMCache(Path(d)), new_marker()

            def renew() -> None:
                while not stop.wait(0.5):
                    other.presence_beat(marker.beat())

            other.presence_beat(marker)
            threading.Thread(target=renew, daemon=True).start()
        for phase in ("cold", "warm"):
            client = LLMClient.from_config(cfg)

            async def run(client: LLMClient = client) -> None:
                gate = asyncio.Semaphore(2 * args.in_flight)

                async def one(m: list[dict[str, str]]) -> None:
                    async with gate:
                        r = await client.complete_json("judge", m, FaithfulnessJudgment, prompt_id=prompt.id,
                                                       prompt_version=prompt.version)
                        assert r.value is not None, r.error

                try:
                    await asyncio.gather(*(one(m) for m in batch))
                finally:
                    await client.aclose()

            prof = cProfile.Profile() if args.profile and phase == "cold" else None
            c0, t0 = time.process_time(), time.perf_counter()
            if prof is not None:
                prof.enable()
            asyncio.run(run())
            if prof is not None:
                prof.disable()
                prof.dump_stats(args.profile)
            out[phase] = (1000 * (time.process_time() - c0) / args.calls, time.perf_counter() - t0)
        stop.set()
    server.stdin.close()
    server.wait(timeout=10)
    print(f"{args.calls} judge calls, {args.in_flight} in flight, record mode {args.record_mode}"
          f"{', shared' if args.shared else ''}: "
          + "; ".join(f"{k} {cpu:.3f} ms CPU/call ({wall:.2f} s)" for k, (cpu, wall) in out.items()))


if __name__ == "__main__":
    main()
