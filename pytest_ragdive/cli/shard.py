"""``python -m pytest_ragdive shard QUESTIONS.jsonl -o SHARDED.jsonl --model ...``: propose shards
(:mod:`pytest_ragdive.sharded.helper`), each written with ``reviewed: false``."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from ..sharded.helper import propose, read_inputs
from ..sharded.questions import ShardedQuestion, read_sharded


def add_arguments(p: argparse.ArgumentParser, command: str = "shard") -> None:
    p.add_argument("questions", type=Path, help="JSONL/YAML of fully specified questions with answers")
    p.add_argument("-o", "--output", type=Path, required=True, help="the sharded-question file to write (JSONL)")
    p.add_argument("--model", required=True, help="litellm model string (e.g. openai/gpt-4o-mini)")
    p.add_argument("--api-base", default=None, help="an OpenAI-compatible endpoint")
    p.add_argument("--api-key-env", default=None, help="the environment variable holding the API key")
    p.add_argument("--cache-dir", default=".ragdive/cache", help="the LLM cache (a rerun makes no call)")
    p.add_argument("--transport", default="litellm", choices=["litellm", "openai_http"],
                   help="openai_http: the lean client for OpenAI-compatible endpoints")
    p.add_argument("--record-mode", default="new_episodes", choices=["new_episodes", "none", "all", "off"])


def run(args: argparse.Namespace) -> int:
    from ..core.config import RagdiveConfig
    from ..llm import LLMClient

    items = read_inputs(args.questions)
    kept: dict[str, ShardedQuestion] = {}
    if args.output.exists():
        kept = {q.id: q for q in read_sharded(args.output) if q.reviewed}
    llm: dict[str, Any] = {"simulator": {"temperature": 0.0}, "transport": args.transport}
    if args.api_base:
        llm["api_base"] = args.api_base
    if args.api_key_env:
        llm["api_key_env"] = args.api_key_env
    cfg = RagdiveConfig.model_validate(
        {"model": args.model, "cache_dir": args.cache_dir, "record_mode": args.record_mode, "llm": llm}
    )
    todo = [item for _, item in items if (item.id or item.question_id) not in kept]

    async def go() -> list[ShardedQuestion]:
        client = LLMClient.from_config(cfg)
        try:
            return list(await asyncio.gather(*(propose(client, it) for it in todo)))
        finally:
            await client.aclose()

    proposed = {q.id: q for q in asyncio.run(go())} if todo else {}
    order = [item.id or item.question_id or "" for _, item in items]
    rows = [kept.get(i) or proposed[i] for i in order]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        "".join(json.dumps(q.model_dump(mode="json"), ensure_ascii=False) + "\n" for q in rows), encoding="utf-8"
    )
    failing = sum(1 for q in proposed.values() if q.notes.startswith(("fails", "segmentation", "intent")))
    print(
        f"ragdive shard: {len(proposed)} proposed ({failing} failing the mechanical checks), "
        f"{len(kept)} reviewed kept -> {args.output}; proposals are used only once marked reviewed: true"
    )
    return 0
