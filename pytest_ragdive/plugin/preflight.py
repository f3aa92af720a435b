"""Set-up mistakes, caught once before the first item runs.

A mistake in the set-up (no target, an HTTP header naming an unset ``${VAR}``,
an unset LLM key variable) would otherwise fail every item with the same
traceback. The session checks, once:

- at configure time (:func:`check_config`): the target the config names
  (``target = "module:attribute"`` imports and names something callable, or an
  HTTP target whose ``${VAR}`` header references are all set), and the LLM key
  variable when a suite needs an LLM and the record mode may call one; the
  golden files, the corpus and the report directory are checked beside them
  (:meth:`~pytest_ragdive.plugin.session.RagdiveSession.from_pytest`);
- once the items are collected (:func:`check_items`): that some fixture gives
  ``ragdive_target`` (a conftest's, or the config's ``target``).

Each failure is one line naming the key, the variable or the file; the plugin
turns it into pytest's usage error (exit code 4). Imports nothing heavy.

The checks read the session through :class:`SessionLike` and return what they find
(:class:`Findings`: notes, the baseline to gate against); the session applies it. So
this module never imports :mod:`.session` (which calls it).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..core.errors import ConfigError, TargetError, UsageError
from ..core.paths import check_writable
from ..run.frameworks import framework_of

if TYPE_CHECKING:
    import pytest

    from ..core.config import RagdiveConfig
    from ..core.results import Baseline
    from ..run.planning import Plan

__all__ = ["Findings", "SessionLike", "TargetSetupError", "check_config", "check_items", "check_modes"]


class SessionLike(Protocol):
    """What the checks read of the session (:class:`~pytest_ragdive.plugin.session.RagdiveSession`)."""

    cfg: RagdiveConfig
    config: pytest.Config

    def plans(self) -> list[Plan]: ...

    def default_target(self) -> Any: ...

    def existing_baseline(self) -> Baseline | None: ...

    def backend_name(self) -> str: ...

    def judge_models(self) -> dict[str, str]: ...


@dataclass
class Findings:
    """What :func:`check_modes` found that the session keeps: notes for the report and the
    baseline to gate against (read and checked once, here)."""

    notes: list[str] = field(default_factory=list)
    baseline: Baseline | None = None


class TargetSetupError(ConfigError):
    """The target cannot be set up (not found, not callable, a header variable unset)."""


NO_TARGET = (
    "ragdive setup error: no target: override the `ragdive_target` fixture in conftest.py "
    "(return your chatbot) or set target = 'package.module:attribute' (or target = {{ url = ... }}) in {where}"
)


def check_config(sess: SessionLike) -> None:
    """The target the config names and the LLM key, before anything runs (raises a UsageError)."""
    cfg = sess.cfg
    if cfg.target is not None and not cfg.estimate:
        try:
            target = sess.default_target()
        except TargetError as e:
            raise TargetSetupError(f"ragdive setup error: target = {_spec(cfg.target)}: {e}") from None
        if not callable(target) and framework_of(target) is None:
            raise TargetSetupError(
                f"ragdive setup error: target = {_spec(cfg.target)} is a {type(target).__name__}, not callable "
                "(name a function, a class or an object with __call__(messages))"
            )
    if cfg.llm_enabled() and not cfg.estimate and not cfg.record_mode.replay_only and sess.plans():
        from ..llm.redact import missing_key

        problem = missing_key(cfg)
        if problem:
            raise ConfigError(
                f"ragdive setup error: {problem}: set it, or replay the committed judge cache without a key "
                "(--ragdive-record-mode=none: a call not cached is then reported as not judged)"
            )


def _spec(target: Any) -> str:
    url = getattr(target, "url", None)
    if url is not None:
        from ..run.http_target import public_url

        return f"{{ url = {public_url(url)!r} }}"
    return repr(target)


def check_items(sess: SessionLike, first: pytest.Function | None) -> None:
    """Some fixture gives ``ragdive_target`` to the conversation items (``first``: the first
    of them, None when none was collected; raises a UsageError)."""
    if first is None:
        return
    defs = first._fixtureinfo.name2fixturedefs.get("ragdive_target") or ()
    if sess.cfg.target is not None:
        # a fixture of the user's and the config's target: two bots, and the fixture would win silently
        # (a fixture that asks for ragdive_target itself wraps the config's: fine)
        if defs and not _is_plugin_default(defs[-1].func) and "ragdive_target" not in defs[-1].argnames:
            where = sess.cfg.source if sess.cfg.source and sess.cfg.source != "defaults" else "[tool.ragdive]"
            raise ConfigError(
                f"ragdive setup error: two targets: the `ragdive_target` fixture ({_origin(defs[-1].func)}) and "
                f"target = {_spec(sess.cfg.target)} in {where}: remove one of them"
            )
        return
    if defs and not _is_plugin_default(defs[-1].func):
        return
    where = sess.cfg.source if sess.cfg.source and sess.cfg.source != "defaults" else "[tool.ragdive]"
    raise ConfigError(NO_TARGET.format(where=where))


def _origin(func: Any) -> str:
    """Where a fixture function is defined (``conftest.py:12``)."""
    import os

    func = inspect.unwrap(func)
    code = getattr(func, "__code__", None)
    if code is None:
        return getattr(func, "__module__", "?")
    return f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}"


def _is_plugin_default(func: Any) -> bool:
    """The plugin's own ``ragdive_target`` fixture (it builds the config's target), not a user's override."""
    func = inspect.unwrap(func)
    return getattr(func, "__module__", "") == "pytest_ragdive.plugin.hooks" and getattr(func, "__name__", "") == "ragdive_target"


def check_modes(sess: SessionLike) -> Findings:
    """Every set-up check of an active session, before collection: the suites, the extras the
    config needs, the golden data (planning), the target and the LLM key (:func:`check_config`), the
    baseline and report paths. Each failure is a usage error (one line, exit 4); what passes is
    returned (the notes of an overwritten baseline, the baseline to gate against)."""
    cfg = sess.cfg
    found = Findings()
    if not cfg.suites:
        raise UsageError(
            f"ragdive config error in {cfg.source}: no suites configured "
            "(add [tool.ragdive.suites.core] with single_turn/conversations files)"
        )
    unknown = [s for s in cfg.requested_suites() if s not in cfg.suites]
    if unknown:
        where = "--ragdive-suite" if sess.config.getoption("ragdive_suite", default=None) else "suite"
        raise UsageError(
            f"ragdive config error: {where}={cfg.suite} selects suite(s) {', '.join(unknown)} that "
            f"{cfg.source or 'the config'} does not configure (configured: {', '.join(cfg.suites)}; "
            f"add [tool.ragdive.suites.{unknown[0]}] for a suite of your own next to core and extended)"
        )
    if cfg.llm_enabled() and cfg.judge_backend == "ragas":
        import importlib.util

        if importlib.util.find_spec("ragas") is None:
            raise UsageError(
                "judge_backend = 'ragas' needs ragas: pip install 'pytest-ragdive[ragas]' "
                "(or set judge_backend = 'builtin')"
            )
    from ..metrics.backends import check_grounding

    check_grounding(cfg)  # the embedded model, the NLI checker: usage errors before anything runs
    sess.plans()  # golden data errors are usage errors, reported before collection
    check_config(sess)  # the target the config names, the LLM key: one line each, before anything runs
    if cfg.update_baseline and cfg.shard:
        raise UsageError(
            f"--ragdive-update-baseline with --ragdive-shard={cfg.shard}: one shard cannot record a baseline "
            "(record it from one unsharded run)"
        )
    if cfg.update_baseline and not cfg.baseline:
        raise UsageError("--ragdive-update-baseline needs a path: --ragdive-baseline=PATH (or baseline = ... in the config)")
    if hasattr(sess.config, "workerinput"):
        # an xdist worker runs conversations and never concludes: the controller has checked
        # the baseline already (before any worker started), and only the controller holds it
        return found
    check_writable(  # the controller writes; check before anything runs
        cfg.path(cfg.report_dir) if cfg.report_dir else None,
        cfg.path(cfg.baseline) if cfg.update_baseline and cfg.baseline else None,
    )
    if cfg.update_baseline and cfg.baseline:
        existing = sess.existing_baseline()
        if existing is not None:
            from ..gate.preconditions import check_overwrite

            path = cfg.path(cfg.baseline)
            found.notes += check_overwrite(cfg, path, existing, sess.backend_name(), sess.judge_models())
    if cfg.baseline and not cfg.update_baseline:
        from ..gate.preconditions import gate_baseline

        found.baseline, notes = gate_baseline(cfg, cfg.path(cfg.baseline), sess.backend_name())
        found.notes += notes
    return found
