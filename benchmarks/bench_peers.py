"""Side by side: the same single-turn samples judged by this plugin, by ragas
``evaluate()`` and (when installed) DeepEval, against the same fake
OpenAI-compatible server at the same latency.

    python benchmarks/bench_peers.py                   # 100 samples, 0.2 s latency
    python benchmarks/bench_peers.py --samples 20      # quick

The server (:class:`pytest_ragdive.testing.FakeLLMServer`, in its own process
so that it takes no CPU from the client) answers every prompt with a valid
instance of the JSON schema the prompt asks for (lists of two items). Each
tool judges every sample twice, the second time as a rerun would; this plugin
goes through its judge cache (a fresh directory), the peers as they come.

``ragdive combined`` is ``judge_prompts = "combined"`` (the four metrics of a
turn in one request). Columns: wall s of the first run; requests and prompt tokens (characters / 4,
as the server counts) per sample; requests in the second run. Metrics:
ragdive judges faithfulness, context precision (one call for all contexts),
context recall and correctness; ragas faithfulness (2 calls), context
precision (one call per context) and context recall; DeepEval faithfulness,
contextual precision and contextual recall.
"""

from __future__ import annotations

import argparse
import asyncio
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

SERVER = r'''
import json, re, sys
from pytest_ragdive.testing import FakeLLMServer
from pytest_ragdive.testing.replies import example_from_schema

def example(schema, defs):
    return example_from_schema(schema, defs, fill=True)

def schema_in(text):
    i = text.lower().find("json schema")  # ours and ragas' ("JSON Schema"): the reply forms come before it
    j = text.find("{", i if i >= 0 else 0)
    if j < 0:
        return None
    try:
        return json.JSONDecoder().raw_decode(text[j:])[0]
    except ValueError:
        return None

def handler(body):
    rf = body.get("response_format") or {}
    schema = (rf.get("json_schema") or {}).get("schema")
    if schema is not None and schema.get("title") == "CombinedJudgment":  # one verdict per context
        from pytest_ragdive.metrics.judged.combined import placeholder_reply
        return placeholder_reply(schema, body.get("messages", []), fill=True)
    if schema is None:
        text = "\n".join(m.get("content") or "" for m in body.get("messages", []) if isinstance(m.get("content"), str))
        schema = schema_in(text)
    if schema is None:
        return {"verdict": 1, "reason": "fake", "statements": ["a fake statement"]}
    return example(schema, schema.get("$defs", {}))

s = FakeLLMServer(handler=handler, latency_s=float(sys.argv[1])).start()
print(s.url, flush=True)
for line in sys.stdin:
    if line.strip() == "stats":
        reqs = s.requests
        chars = sum(len(m.get("content") or "") for b in reqs for m in b.get("messages", []) if isinstance(m.get("content"), str))
        print(json.dumps({"requests": len(reqs), "prompt_tokens": chars // 4}), flush=True)
        s.reset()
s.stop()
'''


def samples(n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        topic = f"refund policy {i}"
        out.append({
            "question": f"How long do I have to ask for a {topic} refund?",
            "answer": f"You can ask for a refund within {14 + i % 7} days of delivery under the {topic} rules.",
            "contexts": [f"Section {i}.{k}: refunds under the {topic} are accepted within {14 + k} days of delivery "
                         f"when the item is unused and in its original packaging." for k in range(3)],
            "ground_truth": f"Within {14 + i % 7} days of delivery.",
        })
    return out


class Server:
    def __init__(self, latency: float) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER, str(latency)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()

    def stats(self) -> dict[str, int]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("stats\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=10)


def run_ragdive(url: str, data: list[dict[str, Any]], concurrency: int, transport: str, cache_dir: str,
                prompts: str = "per_metric") -> float:
    from pytest_ragdive.core.records import Context, Conversation, Turn
    from pytest_ragdive.llm import LLMClient
    from pytest_ragdive.metrics.judged import judge_conversation
    from pytest_ragdive.testing import config_for

    cfg = config_for(url, cache_dir=cache_dir, concurrency=concurrency, llm={"transport": transport},
                     judge_prompts=prompts)
    convs = [Conversation(id=f"s{i}", turns=[Turn(
        rag_input=d["question"], standalone_question=d["question"], ground_truth=d["ground_truth"],
        question_type="Single", answer=d["answer"],
        contexts=[Context(id=f"s{i}c{k}", text=t) for k, t in enumerate(d["contexts"])])])
        for i, d in enumerate(data)]

    async def go() -> None:
        client = LLMClient.from_config(cfg)
        sem = asyncio.Semaphore(concurrency)  # conversations in flight, as the pipeline bounds them

        async def one(c: Conversation) -> None:
            async with sem:
                await judge_conversation(c, client, cfg, {})

        try:
            await asyncio.gather(*(one(c) for c in convs))
        finally:
            await client.aclose()

    if transport == "litellm":  # its import (seconds) is not part of the judging time
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm  # noqa: F401
    t0 = time.perf_counter()
    asyncio.run(go())
    return time.perf_counter() - t0


def run_ragas(url: str, data: list[dict[str, Any]], concurrency: int) -> float:
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    import httpx
    from langchain_openai import ChatOpenAI
    from ragas import EvaluationDataset, RunConfig, evaluate
    from ragas.dataset_schema import SingleTurnSample
    from ragas.llms import LangchainLLMWrapper
    from ragas.metrics import _context_precision, _context_recall, _faithfulness

    # a fresh HTTP client per run: langchain-openai's shared default one is bound to the first run's loop
    chat = ChatOpenAI(base_url=url, api_key="sk-fake", model="fake-model", max_retries=0,
                      http_async_client=httpx.AsyncClient(timeout=60), http_client=httpx.Client(timeout=60))
    llm = LangchainLLMWrapper(chat)
    ds = EvaluationDataset(samples=[SingleTurnSample(
        user_input=d["question"], response=d["answer"], retrieved_contexts=d["contexts"], reference=d["ground_truth"])
        for d in data])
    t0 = time.perf_counter()
    evaluate(ds, metrics=[_faithfulness, _context_precision, _context_recall], llm=llm,
             run_config=RunConfig(max_workers=concurrency, timeout=60), show_progress=False)
    return time.perf_counter() - t0


def run_deepeval(url: str, data: list[dict[str, Any]], concurrency: int) -> float:
    from deepeval import evaluate as de_evaluate  # type: ignore[import-not-found]
    from deepeval.metrics import (  # type: ignore[import-not-found]
        ContextualPrecisionMetric,
        ContextualRecallMetric,
        FaithfulnessMetric,
    )
    from deepeval.models import GPTModel  # type: ignore[import-not-found]
    from deepeval.test_case import LLMTestCase  # type: ignore[import-not-found]

    os.environ.setdefault("OPENAI_API_KEY", "sk-fake")
    model = GPTModel(model="gpt-4o-mini", base_url=url)
    metrics = [FaithfulnessMetric(model=model), ContextualPrecisionMetric(model=model),
               ContextualRecallMetric(model=model)]
    cases = [LLMTestCase(input=d["question"], actual_output=d["answer"], retrieval_context=d["contexts"],
                         expected_output=d["ground_truth"]) for d in data]
    t0 = time.perf_counter()
    de_evaluate(cases, metrics)
    return time.perf_counter() - t0


def main() -> None:
    import warnings

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=16)
    args = ap.parse_args()
    data = samples(args.samples)
    import importlib.util

    tools: list[tuple[str, Any]] = []
    with tempfile.TemporaryDirectory() as d1, tempfile.TemporaryDirectory() as d2, \
            tempfile.TemporaryDirectory() as d3:
        tools.append(("ragdive (openai_http)", lambda url: run_ragdive(url, data, args.concurrency, "openai_http", d1)))
        tools.append(("ragdive combined (openai_http)",
                      lambda url: run_ragdive(url, data, args.concurrency, "openai_http", d3, "combined")))
        tools.append(("ragdive (litellm)", lambda url: run_ragdive(url, data, args.concurrency, "litellm", d2)))
        if importlib.util.find_spec("ragas") is not None:
            tools.append(("ragas evaluate()", lambda url: run_ragas(url, data, args.concurrency)))
        deepeval = importlib.util.find_spec("deepeval") is not None
        if deepeval:
            tools.append(("DeepEval evaluate()", lambda url: run_deepeval(url, data, args.concurrency)))
        print(f"{args.samples} single-turn samples, 3 contexts each, fake server latency {args.latency} s, "
              f"{args.concurrency} in flight\n")
        print("| tool | wall s | requests/sample | prompt tokens/sample | second-run requests |")
        print("|---|---:|---:|---:|---:|")
        server = Server(args.latency)
        try:
            for name, fn in tools:
                server.stats()  # reset
                wall = fn(server.url)
                first = server.stats()
                fn(server.url)
                second = server.stats()
                n = args.samples
                print(f"| {name} | {wall:.2f} | {first['requests'] / n:.2f} | {first['prompt_tokens'] / n:.0f} | "
                      f"{second['requests']} |", flush=True)
        finally:
            server.close()
        if not deepeval:
            print("\nDeepEval is not installed here: skipped (pip install deepeval to include it)")


if __name__ == "__main__":
    main()
