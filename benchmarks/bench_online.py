"""What ``monitored()`` adds to a target's latency, and that it never changes an answer.

    python benchmarks/bench_online.py [--calls 40] [--blocks 15]

A target that takes 10 ms (``time.sleep``/``asyncio.sleep``) and returns a realistic
response (three sentences, five 80-word contexts with scores, citations) is called
bare and monitored (signals, Prometheus metrics and the JSONL request log, on the
background worker), interleaved in blocks, sync and async. The target times itself,
so "added" is the wall time around the call minus the target's own time (less the
same for the bare target): what the wrapper adds, free of the sleep's jitter.
"inline" processes the
signals on the request path instead (``background=False``), to show what the worker
saves. Then the example bot answers every golden question bare and monitored and the
answers are compared. Target: overhead under 5% of the 10 ms target.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_ragdive.core.records import Context, TargetResponse
from pytest_ragdive.online import RagMetrics, monitored, request_signals

ROOT = Path(__file__).resolve().parents[1]
WORDS = (
    "returns refunds hardware store delivery days inspection warehouse payment method business plan api rate "
    "limit requests minute error account keys window headers camera reset button seconds light blinks"
).split()


def response() -> TargetResponse:
    contexts = [
        Context(id=f"doc-{i}#0", doc_id=f"doc-{i}", text=" ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(80)), score=9.0 - i)
        for i in range(5)
    ]
    answer = (
        "Hardware bought from the store can be returned within 30 days of delivery [doc-0]. "
        "The inspection takes up to 3 business days at the warehouse [doc-1]. "
        "Approved refunds are paid to the original payment method."
    )
    return TargetResponse(answer=answer, contexts=contexts, citations=["doc-0", "doc-1"])


RESPONSE = response()
HISTORY = [
    {"role": "user", "content": "Can I return my hub?"},
    {"role": "assistant", "content": "Yes, within 30 days."},
    {"role": "user", "content": "How long until the refund is paid?"},
]


INNER: list[float] = []  # the target's own duration of each call, measured inside it


def target(messages: list[dict[str, str]]) -> TargetResponse:
    t0 = time.perf_counter()
    time.sleep(0.010)
    INNER.append(time.perf_counter() - t0)
    return RESPONSE


async def atarget(messages: list[dict[str, str]]) -> TargetResponse:
    t0 = time.perf_counter()
    await asyncio.sleep(0.010)
    INNER.append(time.perf_counter() - t0)
    return RESPONSE


def time_sync(fn: Callable[[Any], Any], calls: int) -> list[tuple[float, float]]:
    """(outer, inner) seconds of each call."""
    out = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn(HISTORY)
        out.append((time.perf_counter() - t0, INNER[-1]))
    return out


def time_async(fn: Callable[[Any], Any], calls: int) -> list[tuple[float, float]]:
    async def run() -> list[tuple[float, float]]:
        out = []
        for _ in range(calls):
            t0 = time.perf_counter()
            await fn(HISTORY)
            out.append((time.perf_counter() - t0, INNER[-1]))
        return out

    return asyncio.run(run())


def answers_unchanged() -> tuple[int, int] | None:
    """(identical, total) answers of the example bot, bare versus monitored, over the golden questions."""
    sys.path.insert(0, str(ROOT / "example_project"))
    try:
        from example_rag import make_bot
    except ImportError:
        return None
    from pytest_ragdive.sources.golden import load_conversations, load_single_turn

    bot = make_bot()
    wrapped = monitored(bot, metrics=RagMetrics())
    histories: list[list[dict[str, str]]] = []
    for suite in ("core", "extended"):
        histories += [[{"role": "user", "content": c.question}] for c in load_single_turn(ROOT / "golden" / suite / "single_turn.jsonl")]
        for conv in load_conversations(ROOT / "golden" / suite / "conversations.yaml"):
            h: list[dict[str, str]] = []
            for t in conv.turns:
                h.append({"role": "user", "content": t.rag_input})
                histories.append(list(h))
                h.append({"role": "assistant", "content": bot(h).answer})
    same = sum(1 for h in histories if bot(h) == wrapped(h))
    wrapped.monitor.close()
    return same, len(histories)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=40, help="calls per block")
    ap.add_argument("--blocks", type=int, default=15, help="interleaved blocks per variant")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        log = Path(d) / "requests.jsonl"
        mon_sync = monitored(target, metrics=RagMetrics(), log=log)
        inline_sync = monitored(target, metrics=RagMetrics(), log=Path(d) / "inline.jsonl", background=False)
        mon_async = monitored(atarget, metrics=RagMetrics(), log=Path(d) / "async.jsonl")
        Timer = Callable[[Callable[[Any], Any], int], list[tuple[float, float]]]
        variants: dict[str, tuple[Callable[[Any], Any], Timer]] = {
            "sync, bare": (target, time_sync),
            "sync, monitored": (mon_sync, time_sync),
            "sync, monitored inline": (inline_sync, time_sync),
            "async, bare": (atarget, time_async),
            "async, monitored": (mon_async, time_async),
        }
        for fn, timer in variants.values():  # warm up
            timer(fn, 10)
        times: dict[str, list[tuple[float, float]]] = {k: [] for k in variants}
        for _ in range(args.blocks):
            for name, (fn, timer) in variants.items():
                times[name] += timer(fn, args.calls)
        for m in (mon_sync, mon_async):
            m.monitor.close()
        logged = sum(1 for _ in log.open())
        t0 = time.perf_counter()
        for _ in range(500):
            request_signals(HISTORY, RESPONSE, total_s=0.01)
        signals_us = (time.perf_counter() - t0) / 500 * 1e6

    n = args.calls * args.blocks
    print(f"A 10 ms target, {n} calls per variant in {args.blocks} interleaved blocks\n")
    print("| variant | mean (ms) | median (ms) | p95 (ms) | median vs bare | added per call, median | added, mean |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, pairs in times.items():
        outer = [o for o, _ in pairs]
        base = times["async, bare" if name.startswith("async") else "sync, bare"]
        # what the wrapper adds: outer minus the target's own time, less the same for the bare target
        add_med = statistics.median(o - i for o, i in pairs) - statistics.median(o - i for o, i in base)
        add_mean = statistics.mean(o - i for o, i in pairs) - statistics.mean(o - i for o, i in base)
        vs_bare = statistics.median(outer) / statistics.median(o for o, _ in base) - 1
        q = statistics.quantiles(outer, n=20)
        cells = ["-"] * 3 if "bare" in name else [f"{vs_bare:+.2%}", f"{add_med * 1e6:.0f} us", f"{add_mean * 1e6:.0f} us"]
        print(
            f"| {name} | {statistics.mean(outer) * 1e3:.3f} | {statistics.median(outer) * 1e3:.3f} | {q[18] * 1e3:.3f} | "
            + " | ".join(cells)
            + " |"
        )
    print(f"\nrequest_signals on this response: {signals_us:.0f} us per request (off the request path when monitored)")
    print(f"request log lines written by the sync monitored variant: {logged} of {n + 10} calls")
    same = answers_unchanged()
    if same is None:
        print("answers unchanged: skipped (the example bot needs bm25s: pip install -e '.[example]')")
    else:
        print(f"answers unchanged: {same[0]} of {same[1]} example-bot answers identical bare and monitored")


if __name__ == "__main__":
    main()
