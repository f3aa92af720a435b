"""The command line: ``python -m pytest_ragdive COMMAND ...`` (and the ``ragdive`` script).

It imports no pytest. Each command lives in the module that owns its concern;
this module only maps command names to them. A command module exposes
``add_arguments(parser)`` and ``run(args) -> int``; bad input raises
:class:`pytest_ragdive.errors.UsageError` and exits 4 with its one line.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# command name -> (module implementing it, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "alert-rules": (".online.alerts", "write the Prometheus alert rules of [tool.ragdive.online]"),
    "logs-to-suite": (".online.to_suite", "production request logs -> draft scripted conversations to review"),
    "score-logs": (".online.score_logs", "the signal summary of production request logs"),
    "shard": (".sources.shard_helper", "propose shards for sharded questions (two LLM steps; each marked for review)"),
    "baseline": (".baseline_diff", "show a baseline, or diff two: per suite and metric, band, mean, runs, what moved"),
    "export-review": (".review_export", "write a sample of generated turns to a CSV for people to rate (RAG-DIVE criteria)"),
    "import-review": (".review_import", "read rated review CSVs back: share of yes per criterion and rater, agreement"),
    "gate": (".gate_cli", "merge result files (the shards of a split run) and gate once, as the pytest session does"),
    "report": (".report_cli", "render the reports (summary.md, report.html, JUnit) from result files"),
}

EXIT_USAGE = 4


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragdive", description="pytest-ragdive command line")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_) in COMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_)
        mod = importlib.import_module(module, __package__)
        mod.add_arguments(p)
        p.set_defaults(_module=module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from .errors import UsageError

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
