"""``python -m pytest_ragdive cache prune``: delete the LLM cache entries older than
``cache_ttl_days`` (:mod:`pytest_ragdive.llm.ttl`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..core.config import find_config_file, load_config
from ..core.errors import UsageError


class CachePruneError(UsageError):
    """Nothing to prune by: no TTL configured or given, or no cache there."""


def add_arguments(parser: argparse.ArgumentParser, command: str = "cache") -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    prune = sub.add_parser("prune", help="delete the entries older than cache_ttl_days (and unreadable ones)")
    prune.add_argument("--cache-dir", type=Path, default=None,
                       help="the cache directory (default: the config's cache_dir)")
    prune.add_argument("--older-than-days", type=float, default=None,
                       help="the age to prune at (default: the config's cache_ttl_days)")
    prune.add_argument("--config", type=Path, default=None, help="the ragdive config file (default: found from here)")


def run(args: argparse.Namespace) -> int:
    from ..llm.ttl import prune, ttl_seconds

    cwd = Path.cwd()
    # the cache's settings only: the gate's metric names are not checked (a conftest's are unknown here)
    cfg = load_config(find_config_file([cwd], str(args.config) if args.config else None), default_dir=cwd, metrics=False)
    days = args.older_than_days if args.older_than_days is not None else cfg.cache_ttl_days
    if days is None or days <= 0:
        raise CachePruneError("nothing to prune by: set cache_ttl_days in the config or pass --older-than-days N (N > 0)")
    directory = args.cache_dir if args.cache_dir is not None else cfg.path(cfg.cache_dir)
    if not (directory / "cache.db").is_file():
        raise CachePruneError(f"no LLM cache at {directory} (no cache.db)")
    ttl = ttl_seconds(days)
    assert ttl is not None
    done = prune(directory, ttl)
    print(f"ragdive cache prune: {directory}: {done.expired} expired (older than {days:g} days) and "
          f"{done.unreadable} unreadable entries removed, {done.kept} of {done.entries} kept")
    return 0
