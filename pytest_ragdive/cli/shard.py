"""``python -m pytest_ragdive shard QUESTIONS.jsonl -o SHARDED.jsonl``: propose shards
(:mod:`pytest_ragdive.sharded.helper`), each written with ``reviewed: false``.

The model, ``[tool.ragdive.llm]`` (api_base, api_key_env, transport, ...) and the
cache come from the project's ragdive config, found as the plugin finds it (or
``--config``); the flags override them. A key variable that is not set is one line
(exit 4) before any call."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from ..core.config import RagdiveConfig
from ..sharded.helper import propose, read_inputs
from ..sharded.questions import ShardedQuestion, read_sharded
from .llm_config import command_config


def add_arguments(p: argparse.ArgumentParser, command: str = "shard") -> None:
    p.add_argument("questions", type=Path, help="JSONL/YAML of fully specified questions with answers")
    p.add_argument("-o", "--output", type=Path, required=True, help="the sharded-question file to write (JSONL)")
    p.add_argument("--config", type=Path, default=None,
                   help="the ragdive config (default: ragdive.yaml or [tool.ragdive] found here, as pytest finds it): "
                   "its model, [tool.ragdive.llm] and cache settings are used; the flags below override them")
    p.add_argument("--model", default=None, help="litellm model string (e.g. openai/gpt-4o-mini; default: the config's model)")
    p.add_argument("--api-base", default=None, help="an OpenAI-compatible endpoint (default: llm.api_base)")
    p.add_argument("--api-key-env", default=None, help="the environment variable holding the API key (default: llm.api_key_env)")
    p.add_argument("--cache-dir", default=None, help="the LLM cache, a rerun makes no call (default: the config's cache_dir)")
    p.add_argument("--transport", default=None, choices=["auto", "litellm", "openai_http"],
                   help="openai_http: the lean client for OpenAI-compatible endpoints (default: llm.transport)")
    p.add_argument("--record-mode", default=None, choices=["new_episodes", "none", "all", "off"])


def shard_config(args: argparse.Namespace) -> RagdiveConfig:
    """The project's ragdive config, as the plugin reads it (model, ``[tool.ragdive.llm]``,
    cache), with the command's flags on top; the simulator at temperature 0."""
    return command_config(args, Path.cwd(), "shard")


def run(args: argparse.Namespace) -> int:
    from ..llm import LLMClient

    items = read_inputs(args.questions)
    kept: dict[str, ShardedQuestion] = {}
    if args.output.exists():
        kept = {q.id: q for q in read_sharded(args.output) if q.reviewed}
    cfg = shard_config(args)
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
    from ..core.paths import atomic_open

    with atomic_open(args.output) as fh:
        fh.write("".join(json.dumps(q.model_dump(mode="json"), ensure_ascii=False) + "\n" for q in rows))
    failing = sum(1 for q in proposed.values() if q.notes.startswith(("fails", "segmentation", "intent")))
    print(
        f"ragdive shard: {len(proposed)} proposed ({failing} failing the mechanical checks), "
        f"{len(kept)} reviewed kept -> {args.output}; proposals are used only once marked reviewed: true"
    )
    return 0
