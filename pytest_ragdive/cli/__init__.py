"""The command line: ``python -m pytest_ragdive COMMAND ...`` (and the ``ragdive`` script).

It imports no pytest. Every command is a module of this package (the logic it
calls lives in the package that owns its concern: gate/, reports/, online/,
sharded/); this module maps command names to them. A command module exposes
``add_arguments(parser, command)`` and ``run(args) -> int``; bad input raises
:class:`pytest_ragdive.core.errors.UsageError` and exits 4 with its one line.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# command name -> (module of this package implementing it, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "alert-rules": (".online", "write the Prometheus alert rules of [tool.ragdive.online]"),
    "logs-to-suite": (".online", "production request logs -> draft scripted conversations to review"),
    "score-logs": (".online", "the signal summary of production request logs"),
    "shard": (".shard", "propose shards for sharded questions (two LLM steps; each marked for review)"),
    "baseline": (".baseline", "show a baseline, or diff two: per suite and metric, band, mean, runs, what moved"),
    "export-review": (".review_export", "write a sample of generated turns to a CSV for people to rate (RAG-DIVE criteria)"),
    "import-review": (".review_import", "read rated review CSVs back: share of yes per criterion and rater, agreement"),
    "gate": (".gate", "merge result files (the shards of a split run) and gate once, as the pytest session does"),
    "report": (".report", "render results.json, summary.md and report.html from result files (ragdive-junit.xml with --baseline)"),
    "cache": (".cache", "the LLM cache: prune deletes the entries older than cache_ttl_days"),
}

EXIT_USAGE = 4


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragdive", description="pytest-ragdive command line")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_) in COMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_)
        mod = importlib.import_module(module, __package__)
        mod.add_arguments(p, name)
        p.set_defaults(_module=module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from ..core.errors import UsageError

    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    if not getattr(args, "command", None):
        parser.print_help()
        return EXIT_USAGE
    mod = importlib.import_module(args._module, __package__)
    try:
        return int(mod.run(args))
    except UsageError as e:
        print(f"ragdive: error: {e}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
