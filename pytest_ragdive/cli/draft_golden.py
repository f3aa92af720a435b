"""``python -m pytest_ragdive draft-golden DOCS_DIR``: a golden set drafted from your
documents by your LLM (:mod:`pytest_ragdive.sources.drafting`), for people to review.

Writes ``golden/drafts/<suite>.yaml`` (every case ``reviewed: false``: never gated) and
``golden/drafts/<suite>-review.csv`` (the ``export-review`` layout: one row per turn and
per multi-turn conversation, yes/no per criterion). After the review,
``import-review REVIEW.csv --accept DRAFTS --into GOLDEN`` moves the accepted cases into
the suite's golden file. The cost estimate is printed before any call (``--estimate``:
only the estimate). The model, ``[tool.ragdive.llm]`` and the cache come from the
project's ragdive config (as ``shard`` reads them); the flags override them."""

from __future__ import annotations

import argparse
import asyncio
import csv
from pathlib import Path
from typing import Any

from ..core.config import RagdiveConfig
from ..core.errors import UsageError
from ..reports.csv_inert import inert_cell
from ..sources import drafting
from .llm_config import command_config
from .review_export import COLUMNS, review_rows


def add_arguments(p: argparse.ArgumentParser, command: str = "draft-golden") -> None:
    p.add_argument("docs", type=Path, help="a directory of documents (.md, .txt, .rst) or a corpus file (JSONL/YAML)")
    p.add_argument("--suite", default="core", help="the suite the drafts are for (default core; names the files)")
    p.add_argument("-o", "--output", type=Path, default=None, help="the drafts file (default golden/drafts/SUITE.yaml)")
    p.add_argument("--review", type=Path, default=None,
                   help="the review CSV to fill (default golden/drafts/SUITE-review.csv)")
    p.add_argument("--per-kind", type=int, default=2, help="cases of each kind (default 2)")
    p.add_argument("--kinds", default=",".join(drafting.KINDS),
                   help=f"comma-separated kinds (default all: {', '.join(drafting.KINDS)})")
    p.add_argument("--turns", type=int, default=3, help="turns of each multi-turn conversation (default 3)")
    p.add_argument("--seed", type=int, default=0, help="which documents each case is drafted from (default 0)")
    p.add_argument("--estimate", action="store_true", help="print what drafting would cost and stop (no call)")
    p.add_argument("--force", action="store_true", help="overwrite existing drafts and review files")
    p.add_argument("--config", type=Path, default=None, help="the ragdive config (default: found here as pytest finds it)")
    p.add_argument("--model", default=None, help="litellm model string of the drafter (default: the config's model)")
    p.add_argument("--api-base", default=None, help="an OpenAI-compatible endpoint (default: llm.api_base)")
    p.add_argument("--api-key-env", default=None, help="the variable holding the API key (default: llm.api_key_env)")
    p.add_argument("--cache-dir", default=None, help="the LLM cache: a rerun makes no call (default: the config's)")
    p.add_argument("--transport", default=None, choices=["auto", "litellm", "openai_http"])
    p.add_argument("--record-mode", default=None, choices=["new_episodes", "none", "all", "off"])
    p.set_defaults(project_dir=None)


def build_parser_defaults(**values: Any) -> argparse.Namespace:
    """The command's arguments with their defaults, ``values`` on top (``init --draft-from``)."""
    p = argparse.ArgumentParser()
    add_arguments(p)
    ns = p.parse_args([str(values.pop("docs"))])
    for k, v in values.items():
        setattr(ns, k, v)
    return ns


def draft_config(args: argparse.Namespace, base: Path, need_key: bool = True) -> RagdiveConfig:
    """The project's ragdive config with the flags on top; the drafter at temperature 0."""
    return command_config(args, base, "draft-golden", need_key)


def _write_csv(path: Path, rows: list[dict[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(COLUMNS))
        w.writeheader()
        w.writerows({k: inert_cell(v) for k, v in r.items()} for r in rows)


def run(args: argparse.Namespace) -> int:
    from ..llm.prices import PriceMap

    base = Path(args.project_dir) if args.project_dir is not None else Path.cwd()
    if args.per_kind < 1 or args.turns < 2:
        raise UsageError("--per-kind must be at least 1 and --turns at least 2")
    if not args.suite.replace("_", "").replace("-", "").isalnum():
        raise UsageError(f"--suite: expected a suite name (letters, digits, - and _), got {args.suite!r}")
    docs_path = args.docs if args.docs.is_absolute() else base / args.docs
    out = args.output or Path("golden/drafts") / f"{args.suite}.yaml"
    review = args.review or Path("golden/drafts") / f"{args.suite}-review.csv"
    out, review = (p if p.is_absolute() else base / p for p in (out, review))
    docs = drafting.load_documents(docs_path)
    by_id = {d.id: d for d in docs}
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    tasks = drafting.plan(docs, args.per_kind, kinds=kinds, turns=args.turns, seed=args.seed)
    cfg = draft_config(args, base, need_key=not args.estimate)
    est = drafting.estimate(tasks, by_id, cfg.role_model("simulator") or "", cfg.role_model("validator") or "",
                            PriceMap().price)
    print("\n".join(est.lines()))
    if args.estimate:
        return 0
    for p in (out, review):
        if p.exists() and not args.force:
            raise UsageError(f"{p} exists (it may hold reviews): pass --force to overwrite it, or -o/--review elsewhere")

    async def go() -> list[drafting.DraftOutcome]:
        from ..llm import LLMClient

        client = LLMClient.from_config(cfg)
        try:
            return await drafting.draft_all(client, tasks, by_id, seed=args.seed)
        finally:
            await client.aclose()

    outcomes = asyncio.run(go())
    kept = [o.conversation for o in outcomes if o.conversation is not None]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(drafting.render_drafts(outcomes, str(args.docs)), encoding="utf-8")
    _write_csv(review, review_rows(kept, by_id, args.suite))
    per_kind = {k: sum(1 for o in outcomes if o.task.kind == k and o.conversation is not None) for k in kinds}
    golden = f"golden/{args.suite}/conversations.yaml"
    print(
        f"ragdive draft-golden: {len(kept)} of {len(outcomes)} case(s) drafted and valid "
        f"({', '.join(f'{k} {n}' for k, n in per_kind.items())}); "
        f"{len(outcomes) - len(kept)} dropped (listed at the top of the file) -> {out.relative_to(base) if out.is_relative_to(base) else out}\n"
        f"review: fill {review.relative_to(base) if review.is_relative_to(base) else review} (yes/no: correct, "
        "answerable, plausible per turn; diverse, coherent per conversation), then\n"
        f"  python -m pytest_ragdive import-review {review.relative_to(base) if review.is_relative_to(base) else review} "
        f"--accept {out.relative_to(base) if out.is_relative_to(base) else out} --into {golden}"
    )
    return 0
