"""The two judge modes side by side on a real model: ``judge_prompts = "per_metric"`` (four
requests per answered turn) and ``"combined"`` (one), on the same turns, and how well each
agrees with the other and with people.

    OPENAI_API_KEY=... python benchmarks/bench_judge_agreement.py --model openai/gpt-4o-mini
    python benchmarks/bench_judge_agreement.py --model openai/qwen2.5 --api-base http://localhost:8000/v1 \\
        --api-key-env MY_KEY --limit 60
    python benchmarks/bench_judge_agreement.py --fake   # plumbing only: the fake server, no model

Any OpenAI-compatible endpoint works (``--api-base``, or the environment's
``RAGDIVE_JUDGE_API_BASE``; the key is read from the variable ``--api-key-env`` names,
``OPENAI_API_KEY`` by default; ``--model`` or ``RAGDIVE_JUDGE_MODEL``). Two sets of turns:

- the bundled example's core suite (its chatbot answers the golden conversations offline,
  then every answered turn is judged in both modes): agreement between the modes only;
- the development half of the MTRAG human-evaluation subset (``--data``, the file
  ``../shared/data/README.md`` describes; ``--limit`` rated answers): each rated answer as
  one turn (the last user message, the passages shown, the reference answer), judged in
  both modes: agreement between the modes, and Spearman with the median human rating
  (faithfulness with people's faithfulness, correctness with their completeness, as
  ``bench_human_agreement.py`` pairs them).

Between the modes: Spearman of the scores and the share of turns whose scores are equal
(to 1e-9), per metric, over the turns both modes scored. Judge calls go through the
plugin's cache (``--cache-dir``, kept between runs: a rerun costs nothing), so the figures
of both modes come from the same judge, model and temperature (0). With ``--fake`` the
fake server answers with placeholders: the figures mean nothing, the run checks that
every step works (the test suite runs it so).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

MODES = ("per_metric", "combined")
METRICS = ("faithfulness", "context_precision", "context_recall", "correctness")
HUMAN = {"faithfulness": "faithfulness", "correctness": "completeness"}  # metric -> people's dimension
# ../shared/data beside the checkout (a worktree one level deeper: two levels up)
DEFAULT_DATA = next(
    (p for p in (ROOT.parent / "shared", ROOT.parent.parent / "shared") if (p / "data").is_dir()), ROOT.parent / "shared"
) / "data" / "mtrag-human-dev.json"


def example_turns() -> list[Any]:
    """The example's core suite, answered by its chatbot (offline), as conversations."""
    from pytest_ragdive.core.config import load_config
    from pytest_ragdive.run.api import run_suite

    example = ROOT / "example_project"
    sys.path.insert(0, str(example))
    from example_rag import make_bot

    cfg = load_config(example / "pyproject.toml")
    cfg = cfg.model_copy(update={"backend": "offline", "report_dir": None})
    convs: list[Any] = []
    run_suite(make_bot(), cfg, "core", conversations=convs)
    return convs


def rated_turns(path: Path, limit: int | None) -> tuple[list[Any], list[dict[str, float]]]:
    """Each rated answer as a one-turn conversation, and its median human ratings."""
    from bench_human_agreement import load

    from pytest_ragdive.core.records import Conversation

    rows = load(path)
    if limit is not None:
        rows = rows[:limit]
    convs = [Conversation(id=f"mtrag-{i}", turns=[r.turn.model_copy(update={"index": 0})]) for i, r in enumerate(rows)]
    return convs, [r.human for r in rows]


def judge_all(convs: Sequence[Any], mode: str, model: str, api_base: str | None, key_env: str, cache_dir: str,
              concurrency: int) -> tuple[list[dict[str, float | None]], dict[str, int]]:
    """Every answered turn's judged scores in ``mode`` (one dict per turn), and what they cost:
    the turns' judge calls (cache hits included), the requests sent and their prompt tokens."""
    from pytest_ragdive.core.config import RagdiveConfig
    from pytest_ragdive.llm import LLMClient
    from pytest_ragdive.metrics.judged import judge_conversation

    cfg = RagdiveConfig.model_validate({
        "model": model, "backend": "llm", "judge_prompts": mode, "concurrency": concurrency,
        "judged_metrics": list(METRICS), "cache_dir": cache_dir, "record_mode": "new_episodes",
        "llm": {"api_base": api_base, "api_key_env": key_env, "judge": {"temperature": 0.0}},
    })
    copies = [c.model_copy(deep=True) for c in convs]

    async def go() -> LLMClient:
        client = LLMClient.from_config(cfg)
        sem = asyncio.Semaphore(concurrency)

        async def one(c: Any) -> None:
            async with sem:
                await judge_conversation(c, client, cfg, {})

        try:
            await asyncio.gather(*(one(c) for c in copies))
        finally:
            await client.aclose()
        return client

    client = asyncio.run(go())
    total = client.stats.total()
    scores = [{m: t.scores.get(m) for m in METRICS} for c in copies for t in c.turns if t.answer is not None]
    calls = sum(c.judge_calls.turn for c in copies if c.judge_calls is not None)
    return scores, {"calls": calls, "requests": total.requests, "prompt_tokens": total.prompt_tokens}


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    import numpy as np
    from bench_human_agreement import spearman as rho

    return rho(np.asarray(a, dtype=float), np.asarray(b, dtype=float)) if len(a) >= 3 else math.nan


def paired(x: Sequence[float | None], y: Sequence[float | None]) -> tuple[list[float], list[float]]:
    pairs = [(a, b) for a, b in zip(x, y, strict=True) if a is not None and b is not None]
    return [a for a, _ in pairs], [b for _, b in pairs]


def agreement_rows(scores: dict[str, list[dict[str, float | None]]], human: list[dict[str, float]] | None) -> list[str]:
    rows = []
    for m in METRICS:
        a, b = paired([s[m] for s in scores["per_metric"]], [s[m] for s in scores["combined"]])
        equal = sum(abs(x - y) < 1e-9 for x, y in zip(a, b, strict=True)) / len(a) if a else math.nan
        cells = [m, str(len(a)), f"{spearman(a, b):.3f}", f"{equal:.3f}"]
        for mode in MODES:
            if human is not None and m in HUMAN:
                s, h = paired([v[m] for v in scores[mode]], [r[HUMAN[m]] for r in human])
                cells.append(f"{spearman(s, h):.3f} (n={len(s)})")
            else:
                cells.append("-")
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def report(name: str, convs: Sequence[Any], human: list[dict[str, float]] | None, args: argparse.Namespace,
           model: str, api_base: str | None) -> None:
    scores: dict[str, list[dict[str, float | None]]] = {}
    cost: dict[str, dict[str, int]] = {}
    for mode in MODES:
        scores[mode], cost[mode] = judge_all(convs, mode, model, api_base, args.api_key_env, args.cache_dir,
                                             args.concurrency)
    n = len(scores["per_metric"])
    print(f"\n## {name}: {n} answered turns\n")
    print("| mode | judge calls / turn | requests sent | prompt tokens / request |")
    print("|---|---:|---:|---:|")
    for mode in MODES:
        c = cost[mode]
        print(f"| {mode} | {c['calls'] / max(n, 1):.2f} | {c['requests']} | "
              f"{c['prompt_tokens'] / max(c['requests'], 1):.0f} |")
    print("\n| metric | turns | Spearman per_metric vs combined | equal scores | "
          "Spearman with people, per_metric | Spearman with people, combined |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in agreement_rows(scores, human):
        print(row)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=os.environ.get("RAGDIVE_JUDGE_MODEL", ""))
    ap.add_argument("--api-base", default=os.environ.get("RAGDIVE_JUDGE_API_BASE"))
    ap.add_argument("--api-key-env", default="OPENAI_API_KEY", help="the variable holding the key")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--limit", type=int, default=None, help="rated answers of the data (default: all)")
    ap.add_argument("--no-example", action="store_true", help="skip the example's turns")
    ap.add_argument("--cache-dir", default=str(ROOT / ".ragdive" / "judge-agreement-cache"))
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--fake", action="store_true", help="the fake server, for plumbing only")
    args = ap.parse_args(argv)
    if args.fake:
        from pytest_ragdive.testing import FakeLLMServer
        from pytest_ragdive.testing.fixtures import FAKE_KEY_ENV, FAKE_KEY_VALUE, FAKE_MODEL

        os.environ.setdefault(FAKE_KEY_ENV, FAKE_KEY_VALUE)
        with FakeLLMServer() as server, tempfile.TemporaryDirectory() as tmp:
            args.api_key_env, args.cache_dir = FAKE_KEY_ENV, tmp
            print("(the fake server: placeholder verdicts, the figures check the plumbing only)")
            run(args, FAKE_MODEL, server.url)
        return
    if not args.model:
        ap.error("--model (or RAGDIVE_JUDGE_MODEL) is required, e.g. openai/gpt-4o-mini")
    if not os.environ.get(args.api_key_env):
        ap.error(f"the variable {args.api_key_env} (--api-key-env) holds no key")
    run(args, args.model, args.api_base)


def run(args: argparse.Namespace, model: str, api_base: str | None) -> None:
    print(f"judge model {model}" + (f" at {api_base}" if api_base else ""))
    if not args.no_example:
        report("the example's core suite", example_turns(), None, args, model, api_base)
    if args.data.is_file():
        convs, human = rated_turns(args.data, args.limit)
        report(f"MTRAG human-evaluation subset, development half ({args.data.name})", convs, human, args, model,
               api_base)
    else:
        print(f"\n{args.data} not found: the MTRAG development half is skipped (--data)")


if __name__ == "__main__":
    main()
