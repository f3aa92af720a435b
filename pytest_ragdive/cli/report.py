"""``ragdive report RESULTS... -o DIR``: the reports rendered from result files.

What it writes into DIR:

- ``results.json``: the outcome (one file: as recorded; several: merged);
- ``summary.md``: the Markdown summary (also appended to ``$GITHUB_STEP_SUMMARY`` when set);
- ``report.html``: the self-contained HTML report;
- ``ragdive-junit.xml``: the gate's verdicts as JUnit, **only with** ``--baseline``
  (the verdict of that gate; without it the command decides nothing, so it writes no
  verdict file, even for a results.json that was gated when it was recorded).

One file is rendered as recorded; several (the shards of a split run) are merged and
concluded as the gate command does, with ``--baseline`` to gate them. Either way it
exits 0: it renders, it does not decide (``python -m pytest_ragdive gate`` does).
Imports no pytest.
"""

from __future__ import annotations

import argparse
from pathlib import Path

DESCRIPTION = (
    "render the reports from result files into DIR: results.json, summary.md and report.html; "
    "ragdive-junit.xml only with --baseline (the verdict of that gate). Exits 0: it renders, `gate` decides."
)


def add_arguments(parser: argparse.ArgumentParser, command: str = "") -> None:
    parser.description = DESCRIPTION
    parser.add_argument("results", nargs="+", type=Path, help="results.json file(s)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="directory to write the reports into")
    parser.add_argument("--baseline", type=Path, help="gate the (merged) results against this baseline and write "
                        "ragdive-junit.xml with its verdicts")
    parser.add_argument("--config", type=Path, help="the ragdive config (several files or --baseline; default: found here)")


def run(args: argparse.Namespace) -> int:
    if len(args.results) == 1 and args.baseline is None:
        from ..metrics.registry import BUILTINS
        from ..reports.result_files import read_outcome
        from ..reports.write import write_reports
        from .gate import recorded_metrics

        outcome = read_outcome(args.results[0])
        with recorded_metrics(BUILTINS, outcome.custom_metrics).active():
            written = write_reports(args.output, outcome, junit=False)
    else:
        from .gate import conclude_results

        _, written = conclude_results(args.results, args.baseline, args.config, args.output)
    for p in written:
        print(f"report: {p}")
    if args.baseline is None:
        print("report: no ragdive-junit.xml (no --baseline: nothing gated)")
    return 0
