"""``python -m pytest_ragdive suites [--has NAME ...]``: the suites the project's ragdive
config defines, one ``NAME=true`` line each; with ``--has``, one ``NAME=true|false`` line
per name asked (the format of ``$GITHUB_OUTPUT``: the CI workflow's shard jobs run only
where an extended suite exists). Reads the config file as data (its ``suites`` table),
nothing else is validated or loaded."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..core.config import find_config_file, read_config_file
from ..core.errors import ConfigError


def add_arguments(p: argparse.ArgumentParser, command: str = "suites") -> None:
    p.add_argument("--has", nargs="+", default=None, metavar="NAME",
                   help="print NAME=true or NAME=false for each name (GitHub step output format)")
    p.add_argument("--config", type=Path, default=None,
                   help="the ragdive config (default: ragdive.yaml or [tool.ragdive] found here, as pytest finds it)")


def run(args: argparse.Namespace) -> int:
    file = find_config_file([Path.cwd()], str(args.config) if args.config is not None else None)
    data = read_config_file(file) if file is not None else {}
    suites = data.get("suites") or {}
    if not isinstance(suites, dict):
        raise ConfigError(f"ragdive config error in {file}: suites: expected a table of suites")
    names = [str(n) for n in suites]
    for name in args.has if args.has is not None else names:
        print(f"{name}={'true' if name in names else 'false'}")
    return 0
