"""The production commands: ``alert-rules``, ``score-logs`` and ``logs-to-suite``.

Each reads ``[tool.ragdive.online]`` of the config file (``--config``, else the one
found in the working directory); the rules, the summary and the candidates are
built by :mod:`pytest_ragdive.online` (``alerts``, ``score_logs``, ``to_suite``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pydantic import ValidationError

from ..core.config import RagdiveConfig, find_config_file, load_config
from ..core.errors import ConfigError, LogFormatError, one_line
from ..core.paths import atomic_open
from ..online.alerts import ALERT_NAMES, render_rules
from ..online.config import OnlineConfig
from ..online.logs import read_logs
from ..online.replay import conversations
from ..online.score_logs import render_summary, summarize
from ..online.to_suite import REASONS, render_candidates, select

__all__ = ["add_arguments", "load_online_config", "run"]


def load_online_config(path: str | None) -> OnlineConfig:
    """``[tool.ragdive.online]`` of the given file, else of the config file found in the
    working directory (ragdive.yaml or pyproject.toml), else the defaults."""
    if path is not None and not Path(path).is_file():
        raise ConfigError(f"ragdive config error: --config file {path} does not exist")
    file = find_config_file([Path.cwd()], path)
    cfg: RagdiveConfig = load_config(file, default_dir=Path.cwd(), metrics=False)  # [tool.ragdive.online] only
    return cfg.online


def add_arguments(parser: argparse.ArgumentParser, command: str) -> None:
    if command == "alert-rules":
        parser.add_argument("-o", "--output", help="file to write (default: standard output)")
    elif command == "score-logs":
        parser.add_argument("logs", nargs="+", help="request log files (JSONL, written by the monitor)")
        parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    else:
        parser.add_argument("logs", nargs="+", help="request log files (JSONL, written by the monitor)")
        parser.add_argument("-o", "--output", required=True, help="candidates file to write (YAML)")
        parser.add_argument("--sample", type=int, help="unflagged conversations to sample (default: [tool.ragdive.online] sample)")
        parser.add_argument("--seed", type=int, help="seed of the sample (default: [tool.ragdive.online] seed)")
        parser.add_argument("--low-grounding", type=float, help="grounding below this flags a turn")
        parser.add_argument("--force", action="store_true", help="overwrite the output file")
    parser.add_argument("--config", help="ragdive.yaml or pyproject.toml holding [tool.ragdive.online]")


def run(args: argparse.Namespace) -> int:
    if args.command == "alert-rules":
        return _alert_rules(args)
    if args.command == "score-logs":
        return _score_logs(args)
    return _logs_to_suite(args)


def _alert_rules(args: argparse.Namespace) -> int:
    text = render_rules(load_online_config(args.config))
    if args.output:
        out = Path(args.output)
        if out.is_dir():
            raise ConfigError(f"alert-rules: {out} is a directory")
        with atomic_open(out) as fh:
            fh.write(text)
        print(f"wrote {len(ALERT_NAMES)} alert rules to {out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _score_logs(args: argparse.Namespace) -> int:
    cfg = load_online_config(args.config)
    log = read_logs(args.logs)
    if not log.requests:
        raise LogFormatError(f"score-logs: no request in {', '.join(args.logs)}")
    summary = summarize(log, cfg.low_grounding)
    print(summary.model_dump_json(indent=2) if args.json else render_summary(summary))
    return 0


def _settings(args: argparse.Namespace) -> OnlineConfig:
    cfg = load_online_config(args.config)
    updates = {k: v for k, v in (("sample", args.sample), ("seed", args.seed), ("low_grounding", args.low_grounding)) if v is not None}
    return OnlineConfig.model_validate({**cfg.model_dump(), **updates}) if updates else cfg


def _logs_to_suite(args: argparse.Namespace) -> int:
    try:
        cfg = _settings(args)
    except ValidationError as e:
        raise ConfigError(f"logs-to-suite: {one_line(e)}") from None
    out = Path(args.output)
    if out.exists() and not args.force:
        raise LogFormatError(f"logs-to-suite: {out} exists (reviewed cases may be in it): pass --force to overwrite")
    log = read_logs(args.logs)
    if not log.requests:
        raise LogFormatError(f"logs-to-suite: no request in {', '.join(args.logs)}")
    convs = conversations(log)
    selected = select(convs, low_grounding=cfg.low_grounding, sample=cfg.sample, seed=cfg.seed)
    with atomic_open(out) as fh:
        fh.write(render_candidates(selected, ", ".join(Path(p).name for p in args.logs)))
    counts = {r: sum(1 for _, why in selected if any(w.startswith(f"{r} (") for w in why)) for r in REASONS}
    counts["sampled"] = sum(1 for _, why in selected if why == ["sampled"])
    detail = ", ".join(f"{n} {r}" for r, n in counts.items() if n)
    print(f"wrote {len(selected)} of {len(convs)} conversations to {out}" + (f" ({detail})" if detail else ""))
    return 0
