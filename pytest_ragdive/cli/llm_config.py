"""The config of a command that drafts with the user's LLM (``shard``, ``draft-golden``): the
project's ragdive config as the plugin reads it (model, ``[tool.ragdive.llm]``, cache), with the
command's flags on top and the simulator at temperature 0."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..core.config import RagdiveConfig, find_config_file, load_config, read_config_file
from ..core.errors import ConfigError
from ..llm.redact import missing_key


def command_config(args: argparse.Namespace, base: Path, command: str, need_key: bool = True) -> RagdiveConfig:
    """The config found from ``base`` (or ``--config``) with ``--model``, ``--api-base``,
    ``--api-key-env``, ``--transport``, ``--record-mode`` and ``--cache-dir`` on top; a
    ConfigError naming ``command`` without a model, or without the key it needs."""
    file = find_config_file([base], str(args.config) if args.config is not None else None)
    data = read_config_file(file) if file is not None else {}
    llm: dict[str, Any] = dict(data.get("llm") or {})
    llm["simulator"] = {**dict(llm.get("simulator") or {}), "temperature": 0.0}
    for key, value in (("api_base", args.api_base), ("api_key_env", args.api_key_env), ("transport", args.transport)):
        if value is not None:
            llm[key] = value
    overrides: dict[str, Any] = {"llm": llm, "model": args.model, "record_mode": args.record_mode}
    if args.cache_dir is not None:
        overrides["cache_dir"] = str((base / args.cache_dir).resolve())
    cfg = load_config(file, overrides, default_dir=base)
    if not cfg.role_model("simulator"):
        raise ConfigError(
            f"ragdive {command} needs a model: --model MODEL, or model = ... in "
            + (str(file) if file is not None else "[tool.ragdive] (no ragdive config found here)")
        )
    if need_key and not cfg.record_mode.replay_only and (problem := missing_key(cfg)):
        raise ConfigError(f"ragdive {command}: {problem}")
    return cfg
