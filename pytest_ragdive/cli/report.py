"""``ragdive report RESULTS... -o DIR``: the reports (results.json, summary.md,
ragdive-junit.xml, report.html) rendered from result files.

One file is rendered as recorded; several (the shards of a split run) are
merged and concluded as the gate command does, with ``--baseline`` to gate
them. Either way it exits 0: it renders, it does not decide. Imports no pytest.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser, command: str = "") -> None:
    parser.add_argument("results", nargs="+", type=Path, help="results.json file(s)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="directory to write the reports into")
    parser.add_argument("--baseline", type=Path, help="gate the merged results against this baseline")
    parser.add_argument("--config", type=Path, help="the ragdive config (several files or --baseline; default: found here)")


def run(args: argparse.Namespace) -> int:
    if len(args.results) == 1 and args.baseline is None:
        from ..metrics.registry import BUILTINS
        from ..reports.result_files import read_outcome
        from ..reports.write import write_reports
        from .gate import recorded_metrics

        outcome = read_outcome(args.results[0])
        with recorded_metrics(BUILTINS, outcome.custom_metrics).active():
            written = write_reports(args.output, outcome)
    else:
        from .gate import conclude_results

        _, written = conclude_results(args.results, args.baseline, args.config, args.output)
    for p in written:
        print(f"report: {p}")
    return 0
