"""The command line: ``python -m pytest_ragdive COMMAND ...`` (and the ``ragdive`` script).

It imports no pytest. Every command is a module of this package (the logic it
calls lives in the package that owns its concern: gate/, reports/, online/,
sharded/); this module maps command names to them. A command module exposes
``add_arguments(parser, command)`` and ``run(args) -> int``; bad input raises
:class:`pytest_ragdive.core.errors.UsageError` and exits 4 with its one line.

:func:`main` is the one place errors become exit codes, for every command: a
usage error, and any other bad input that reaches it (a file that is missing, a
directory, not UTF-8, not JSON, not the kind of file the command reads) is one
line on stderr and exit 4; anything else is one line naming the error and exit 1.
No traceback unless ``ragdive --debug COMMAND ...``. A closed standard output
(``ragdive baseline show b.json | head -1``) ends the command quietly with exit
code 141 (128 + SIGPIPE, what a shell reports for a writer whose pipe closed).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Sequence

# command name -> (module of this package implementing it, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "init": (".init", "scaffold a project: conftest target, [tool.ragdive] config, golden files, the CI workflow"),
    "draft-golden": (".draft_golden", "draft a golden set from your documents with your LLM (each draft marked for review)"),
    "alert-rules": (".online", "write the Prometheus alert rules of [tool.ragdive.online]"),
    "logs-to-suite": (".online", "production request logs -> draft scripted conversations to review"),
    "score-logs": (".online", "the signal summary of production request logs"),
    "shard": (".shard", "propose shards for sharded questions (two LLM steps; each marked for review)"),
    "baseline": (".baseline", "show a baseline, or diff two: per suite and metric, band, mean, runs, what moved"),
    "export-review": (".review_export", "write a sample of generated turns to a CSV for people to rate (RAG-DIVE criteria)"),
    "import-review": (".review_import", "read rated review CSVs back: share of yes per criterion and rater, agreement"),
    "gate": (".gate", "merge result files (the shards of a split run) and gate once, as the pytest session does"),
    "report": (".report", "render results.json, summary.md and report.html from result files (ragdive-junit.xml with --baseline)"),
    "suites": (".suites", "the suites the config defines (NAME=true lines; --has NAME: true or false, for CI)"),
    "cache": (".cache", "the LLM cache: prune deletes the entries older than cache_ttl_days"),
}

EXIT_USAGE = 4
EXIT_ERROR = 1
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragdive", description="pytest-ragdive command line")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error (before the command)")
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
        code = int(mod.run(args))
        sys.stdout.flush()  # here, not at exit: a closed pipe is then ours to handle
        return code
    except BrokenPipeError:
        return _pipe_closed()
    except UsageError as e:
        return _error(f"ragdive: error: {e}", EXIT_USAGE)
    except KeyboardInterrupt:
        return _error("ragdive: interrupted", 130)
    except Exception as e:
        if args.debug:
            raise
        code, line = describe(e)
        return _error(f"ragdive: {'error' if code == EXIT_USAGE else 'internal error'}: {line}", code)


def describe(e: BaseException) -> tuple[int, str]:
    """(exit code, one line) for an error that reached the command line: bad input
    is a usage error (4), anything else an internal one (1, with how to see more)."""
    from pydantic import ValidationError

    from ..core.errors import cut, fault, one_line

    if isinstance(e, UnicodeDecodeError):
        return EXIT_USAGE, f"not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start}); save the file as UTF-8"
    if isinstance(e, OSError):
        what = e.strerror or type(e).__name__
        return EXIT_USAGE, f"{e.filename}: {what}" if e.filename else f"{what}: {cut(str(e))}"
    if isinstance(e, json.JSONDecodeError):
        return EXIT_USAGE, fault("input", f"not JSON: {e.msg}", line=e.lineno, col=e.colno)
    if isinstance(e, ValidationError):
        return EXIT_USAGE, f"not the kind of file this command reads: {one_line(e)}"
    if _from_input(e):
        return EXIT_USAGE, f"not the kind of file this command reads: {type(e).__name__}: {cut(str(e))}"
    return EXIT_ERROR, f"{type(e).__name__}: {cut(str(e))} (ragdive --debug ... shows the traceback)"


def _from_input(e: BaseException) -> bool:
    """Whether an error says the input is unusable: any ValueError (what parsers and
    converters raise), or an error of a parser of its own kind (PyYAML's, csv's)."""
    return isinstance(e, ValueError) or type(e).__module__.split(".")[0] in ("yaml", "csv", "_csv")


def _error(line: str, code: int) -> int:
    try:
        print(line, file=sys.stderr)
    except (BrokenPipeError, ValueError):
        pass
    return code


def _pipe_closed() -> int:
    """Standard output went away (``| head``): no message, no second BrokenPipeError
    when Python flushes it at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return EXIT_BROKEN_PIPE


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
