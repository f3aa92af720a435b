"""``ragdive baseline show PATH`` and ``ragdive baseline diff OLD NEW``: baselines a person can review."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..gate.baseline import load_baseline
from ..gate.diff import diff_baselines
from ..reports.baseline_text import diff_lines, show_lines


def add_arguments(parser: argparse.ArgumentParser, command: str = "baseline") -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = sub.add_parser("show", help="print a baseline: per suite and metric, band, mean, spread, runs")
    show.add_argument("path", type=Path)
    show.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    diff = sub.add_parser("diff", help="compare two baselines: what moved, per suite and metric")
    diff.add_argument("old", type=Path)
    diff.add_argument("new", type=Path)
    diff.add_argument("--all", action="store_true", help="list unchanged metrics too")
    diff.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    diff.add_argument("--exit-code", action="store_true", help="exit 1 when the baselines differ (as git diff does)")


def run(args: argparse.Namespace) -> int:
    if args.action == "show":
        b = load_baseline(args.path)
        if args.format == "json":
            print(json.dumps(b.model_dump(mode="json"), indent=2))
        else:
            print("\n".join(show_lines(b, markdown=args.format == "markdown")))
        return 0
    d = diff_baselines(load_baseline(args.old), load_baseline(args.new))
    if args.format == "json":
        print(json.dumps(d.model_dump(mode="json"), indent=2))
    else:
        print("\n".join(diff_lines(d, show_all=args.all, markdown=args.format == "markdown")))
    return 1 if args.exit_code and not d.identical else 0
