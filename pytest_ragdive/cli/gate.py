"""``ragdive gate RESULTS... --baseline PATH``: the end of a run, from result files.

It merges the result files (the shards of a split run: ``--ragdive-shard=I/N``
on N machines), then ends the run exactly as the pytest session does: the
same :func:`~pytest_ragdive.conclude.conclude`, the same baseline checks, the
same reports (:func:`~pytest_ragdive.conclude.publish`) and the same exit
codes (0 passed, 1 a regression or a failed conversation, 2 an interrupted
part, 4 bad input or no baseline to gate against, 5 nothing ran). Imports no pytest.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..core.config import RagdiveConfig, find_config_file, load_config
from ..core.errors import ResultsError, UsageError
from ..core.records import Conversation, Document
from ..core.results import Baseline, CustomMetric
from ..gate.conclude import RunFacts, conclude, publish
from ..gate.outcome import RunOutcome
from ..metrics.registry import BUILTINS, MetricClash, MetricRegistry
from ..reports.result_files import MergedResults, merge_results

EXIT_OK, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_NOTHING = 0, 1, 2, 5


def load_run_config(config: Path | None, merged: MergedResults, **overrides: object) -> RagdiveConfig:
    """The ragdive config the results were produced with (``--config``, else the
    one found in the current directory, as pytest finds it), set to the suites
    the results cover."""
    cwd = Path.cwd()
    file = find_config_file([cwd], str(config) if config is not None else None)
    values = {k: v for k, v in overrides.items() if v is not None}
    values["suite"] = ",".join(merged.info.suites) or "core"
    # the metrics the results recorded (a conftest.py's) count as known: the gate may name them
    recorded = [cm.spec(name) for name, cm in merged.custom_metrics.items()]
    cfg = load_config(file, values, default_dir=cwd, metric_sources=recorded)
    cfg.shard = None
    cfg.update_baseline = False
    if merged.info.config_hash and merged.info.config_hash != cfg.config_hash():
        raise ResultsError(
            f"the results were produced with config hash {merged.info.config_hash}, {cfg.source} gives "
            f"{cfg.config_hash()}: run the gate in the same checkout as {merged.parts_word.removeprefix('the ')} "
            "were produced in (or pass --config)"
        )
    return cfg


def broken(conv: Conversation) -> bool:
    """The conversation failed its pytest item (an error, a safety violation, no generated turn)."""
    return bool(conv.error or conv.failures or (conv.source == "generated" and not conv.turns))


def exit_code(outcome: RunOutcome) -> int:
    """The exit status the pytest session gives the same outcome."""
    if not outcome.info.completed:
        return EXIT_INTERRUPTED
    if outcome.failed or any(broken(c) for c in outcome.conversations):
        return EXIT_FAILED
    if not outcome.conversations:
        return EXIT_NOTHING
    return EXIT_OK


def conclude_results(
    paths: list[Path], baseline_path: Path | None, config: Path | None, report_dir: Path | None,
    *, gating: bool = False,
) -> tuple[RunOutcome, list[Path]]:
    """Merge, decide and publish: what the end of a pytest session does, on result files.
    ``gating`` (the gate command): the baseline is ``baseline_path``, else the config's
    ``baseline``; with neither, a usage error (a gate that gates nothing must not exit 0)."""
    merged = merge_results(paths)
    cfg = load_run_config(
        config, merged,
        baseline=str(baseline_path.resolve()) if baseline_path is not None else None,
        report_dir=os.path.abspath(report_dir) if report_dir is not None else None,  # a link is replaced, not followed
    )
    if gating and baseline_path is None:
        if not cfg.baseline:
            raise UsageError(
                "no baseline: nothing to gate; pass --baseline PATH (or set baseline = ... in the config); "
                "`python -m pytest_ragdive report RESULTS -o DIR` writes reports without a verdict"
            )
        baseline_path = cfg.path(cfg.baseline)
    with cfg.metrics.active():
        return _conclude(merged, cfg, baseline_path)


def recorded_metrics(registry: MetricRegistry, recorded: dict[str, CustomMetric]) -> MetricRegistry:
    """``registry`` with the metrics a result file recorded that it does not hold (``ragdive report``)."""
    try:
        return registry.adopted(cm.spec(name) for name, cm in recorded.items())
    except MetricClash as e:
        raise ResultsError(f"ragdive results: {e}") from None


def _conclude(merged: MergedResults, cfg: RagdiveConfig, baseline_path: Path | None) -> tuple[RunOutcome, list[Path]]:
    notes = list(merged.notes)
    baseline: Baseline | None = None
    if baseline_path is not None:
        from ..gate.preconditions import gate_baseline

        baseline, more = gate_baseline(cfg, baseline_path.resolve(), merged.info.backend)
        notes += more
    facts = RunFacts(
        planned=merged.info.planned, completed=merged.info.completed, fatal=merged.fatal, notes=notes,
        llm=merged.llm, backend=merged.info.backend, judge_models=merged.info.judge_models,
    )
    outcome = conclude(merged.conversations, cfg, baseline, facts)
    if outcome.gate and any(r.wants_rerun for r in outcome.gate):
        # result files cannot be rerun: decide on the runs they hold, as the session does when it
        # cannot rerun (record more runs per shard with --ragdive-runs)
        facts.reruns = cfg.max_reruns
        facts.notes.append("the gate was inconclusive and result files cannot be rerun: decided on the runs given")
        outcome = conclude(merged.conversations, cfg, baseline, facts)

    def documents(suite: str) -> dict[str, Document]:
        from ..sources.golden import load_corpus

        path = cfg.generated_corpus(suite)
        return {d.id: d for d in load_corpus(cfg.path(path))} if path else {}

    return outcome, publish(outcome, cfg, documents)


def add_arguments(parser: argparse.ArgumentParser, command: str = "") -> None:
    parser.add_argument("results", nargs="+", type=Path, help="results.json files (e.g. every shard's)")
    parser.add_argument("--baseline", type=Path, help="the baseline to gate against (default: the config's baseline; "
                        "without one the command refuses: `report` renders result files without a verdict)")
    parser.add_argument("--report-dir", type=Path, help="write the reports here (default: the config's report_dir)")
    parser.add_argument("--config", type=Path, help="the ragdive config (default: found in the current directory)")


def run(args: argparse.Namespace) -> int:
    from ..reports.terminal import terminal_lines

    outcome, written = conclude_results(args.results, args.baseline, args.config, args.report_dir, gating=True)
    where = "the shards" if any(n.startswith("merged ") and n.endswith(" shards") for n in outcome.notes) else (
        "the result files" if len(args.results) > 1 else "the run")
    with recorded_metrics(BUILTINS, outcome.custom_metrics).active():
        for line in terminal_lines(outcome, written):
            print(line.text)
    failed = [c for c in outcome.conversations if broken(c)]
    if failed:
        print(f"{len(failed)} conversation(s) failed their item in {where}: "
              + ", ".join(f"{c.suite}/{c.id} run {c.run}" for c in failed[:10]))
    return exit_code(outcome)
