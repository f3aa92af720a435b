"""pytest hooks of pytest-ragdive.

This module is imported in every pytest run of a project that installs the
plugin, so it imports nothing but pytest at load time. Unless a ragdive
option is given (``--ragdive-suite``, ``--ragdive-baseline``,
``--ragdive-update-baseline``) or the config sets ``autorun = true``, it only
registers its options, markers and fixtures.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .records import Conversation

FLAGS = [
    ("--ragdive-baseline", "baseline", "PATH", "baseline JSON to gate against (and to write with --ragdive-update-baseline)"),
    ("--ragdive-update-baseline", "update_baseline", None, "write the baseline from this session instead of gating"),
    ("--ragdive-suite", "suite", "core|extended|all", "run this suite (default core)"),
    ("--ragdive-runs", "runs", "N", "repeat each suite N times (a baseline records the spread)"),
    ("--ragdive-record-mode", "record_mode", "MODE", "LLM cache mode: new_episodes (default), none (replay only), all, off"),
    ("--ragdive-cache-dir", "cache_dir", "DIR", "LLM cache directory (default .ragdive/cache)"),
    ("--ragdive-model", "model", "MODEL", "litellm model for every LLM role"),
    ("--ragdive-concurrency", "concurrency", "N", "conversations and LLM calls in flight per process (default 8)"),
    ("--ragdive-max-cost", "max_cost", "USD", "stop LLM calls once this much is spent and fail the run"),
    ("--ragdive-report-dir", "report_dir", "DIR", "write results.json, ragdive-junit.xml and summary.md here"),
    ("--ragdive-config", "config", "FILE", "read the ragdive config from this file (default: ragdive.yaml or [tool.ragdive])"),
]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragdive", "RAG quality gate (pytest-ragdive)")
    for flag, key, metavar, help_ in FLAGS:
        if metavar is None:
            group.addoption(flag, dest=f"ragdive_{key}", action="store_true", default=None, help=help_)
        else:
            group.addoption(flag, dest=f"ragdive_{key}", metavar=metavar, default=None, help=help_)


def _asked(config: pytest.Config) -> bool:
    return any(
        config.getoption(f"ragdive_{k}", default=None) is not None for k in ("suite", "baseline", "update_baseline")
    )


def config_dirs(config: pytest.Config) -> list[Path]:
    """Where the ragdive config may live, in order: beside the ini file, the
    rootdir, the invocation dir, then the directories given as arguments."""
    dirs = [config.inipath.parent] if config.inipath is not None else []
    dirs += [config.rootpath, config.invocation_params.dir]
    for arg in config.args:
        p = (config.invocation_params.dir / arg.split("::")[0]).resolve()
        dirs.append(p if p.is_dir() else p.parent)
    return list(dict.fromkeys(dirs))


def _autorun_configured(config: pytest.Config) -> bool:
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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "ragdive: a conversation run by pytest-ragdive")
    config.addinivalue_line("markers", "ragdive_core: a conversation of the ragdive core suite (every PR)")
    config.addinivalue_line("markers", "ragdive_extended: a conversation of the ragdive extended suite (main)")
    asked = _asked(config)
    if asked or _autorun_configured(config):
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
        from .session import activate

        activate(config, asked)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "ragdive_conversation" not in metafunc.fixturenames:
        return
    from .session import get_session

    plans = get_session(metafunc.config).plans()
    metafunc.parametrize("ragdive_conversation", plans, indirect=True, ids=[p.param_id for p in plans])


@pytest.fixture(scope="session")
def ragdive_target(request: pytest.FixtureRequest) -> Any:
    """The chatbot under test. Override this fixture in conftest.py, or set
    ``target = "package.module:attribute"`` in the ragdive config."""
    from .session import get_session

    return get_session(request.config).default_target()


@pytest.fixture
def ragdive_conversation(request: pytest.FixtureRequest, ragdive_target: Any) -> Conversation:
    """One planned conversation, run against ``ragdive_target`` and scored.

    Tests that ask for it are parametrized over the same conversations as the
    ragdive items of the selected suite.
    """
    from .session import get_session

    return get_session(request.config).result_for(request.param, ragdive_target)
