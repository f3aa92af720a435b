"""The option table (command-line flags and their config twins) and config discovery.

Imported at plugin load: nothing but pytest and the standard library.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

# (flag, config key, metavar or None for a switch, help)
FLAGS: list[tuple[str, str, str | None, str]] = [
    ("--ragdive-baseline", "baseline", "PATH", "baseline JSON to gate against (and to write with --ragdive-update-baseline)"),
    ("--ragdive-update-baseline", "update_baseline", None, "write the baseline from this session instead of gating"),
    ("--ragdive-suite", "suite", "NAME[,NAME]|all", "run these suites (default core)"),
    ("--ragdive-runs", "runs", "N", "repeat each suite N times (a baseline records the spread)"),
    ("--ragdive-record-mode", "record_mode", "MODE", "LLM cache mode: new_episodes (default), none (replay only), all, off"),
    ("--ragdive-cache-dir", "cache_dir", "DIR", "LLM cache directory (default .ragdive/cache)"),
    ("--ragdive-model", "model", "MODEL", "litellm model for every LLM role"),
    ("--ragdive-concurrency", "concurrency", "N", "conversations in flight per process (default 8; LLM requests in flight: llm.max_in_flight, default 4x)"),
    ("--ragdive-max-cost", "max_cost", "USD", "stop LLM calls once this much is spent and fail the run"),
    ("--ragdive-target-timeout", "target_timeout_s", "SECONDS", "fail a conversation whose target takes longer than this for one turn (default 120)"),
    ("--ragdive-deadline", "deadline_s", "SECONDS", "end the run cleanly after this long: partial reports, no baseline, nothing gated"),
    ("--ragdive-report-dir", "report_dir", "DIR", "write results.json, ragdive-junit.xml and summary.md here"),
    ("--ragdive-max-reruns", "max_reruns", "K", "rerun a suite whose gate is inconclusive at most K more times (default 2)"),
    ("--ragdive-estimate", "estimate", None, "print the LLM calls, tokens and USD this run would make (cold and warm) and run nothing"),
    ("--ragdive-config", "config", "FILE", "read the ragdive config from this file (default: ragdive.yaml or [tool.ragdive])"),
    ("--ragdive-shard", "shard", "I/N", "run shard I of N: a deterministic share of the selected conversations; "
     "`python -m pytest_ragdive gate` merges the shards' results.json and gates once"),
    ("--ragdive-require-judge", "require_judge", None, "record mode none: a judge call not in the cache fails the "
     "run, instead of the gate falling back to the judged metrics' offline twins"),
    ("--ragdive-force", "force", None, "let --ragdive-update-baseline overwrite a baseline recorded with other "
     "judge models, another backend or other golden data"),
]

# options whose value is a path, resolved against the invocation directory
PATH_KEYS = ("baseline", "cache_dir", "report_dir")
# any of these on the command line activates the plugin
ACTIVATING = ("suite", "baseline", "update_baseline", "estimate", "shard")


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragdive", "RAG quality gate (pytest-ragdive)")
    for flag, key, metavar, help_ in FLAGS:
        if metavar is None:
            group.addoption(flag, dest=f"ragdive_{key}", action="store_true", default=None, help=help_)
        else:
            group.addoption(flag, dest=f"ragdive_{key}", metavar=metavar, default=None, help=help_)


def cli_values(config: pytest.Config) -> dict[str, Any]:
    """The ragdive options given on the command line, by config key (paths resolved)."""
    out: dict[str, Any] = {}
    for _flag, key, _metavar, _help in FLAGS:
        v = config.getoption("ragdive_" + key, default=None)
        if v is None or key == "config":
            continue
        if key in PATH_KEYS:
            v = os.path.abspath(config.invocation_params.dir / v)  # never through a link: a write replaces it
        out[key] = v
    return out


def flag_names() -> dict[str, str]:
    """Config key -> its command-line flag (for error messages)."""
    return {key: flag for flag, key, *_ in FLAGS}


def asked(config: pytest.Config) -> bool:
    """A ragdive option that activates the plugin was given."""
    return any(config.getoption(f"ragdive_{k}", default=None) is not None for k in ACTIVATING)


def config_dirs(config: pytest.Config) -> list[Path]:
    """Where the ragdive config may live, in order: beside the ini file, the
    rootdir, the invocation dir, then the directories given as arguments."""
    dirs = [config.inipath.parent] if config.inipath is not None else []
    dirs += [config.rootpath, config.invocation_params.dir]
    for arg in config.args:
        p = (config.invocation_params.dir / arg.split("::")[0]).resolve()
        dirs.append(p if p.is_dir() else p.parent)
    return list(dict.fromkeys(dirs))


def autorun_configured(config: pytest.Config) -> bool:
    """Cheap check for ``autorun = true`` (a text search, no config machinery)
    in the --ragdive-config file, else in the config candidates of every dir."""
    explicit = config.getoption("ragdive_config", default=None)
    if explicit:
        files = [config.invocation_params.dir / explicit]
    else:
        files = [d / n for d in config_dirs(config) for n in ("ragdive.yaml", "ragdive.yml", "pyproject.toml")]
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        if "autorun" in text and "ragdive" in text:
            return True
    return False
