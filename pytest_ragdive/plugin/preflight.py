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
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from ..core.errors import ConfigError, TargetError

if TYPE_CHECKING:
    import pytest

    from .session import RagdiveSession

__all__ = ["TargetSetupError", "check_config", "check_items"]


class TargetSetupError(ConfigError):
    """The target cannot be set up (not found, not callable, a header variable unset)."""


NO_TARGET = (
    "ragdive setup error: no target: override the `ragdive_target` fixture in conftest.py "
    "(return your chatbot) or set target = 'package.module:attribute' (or target = {{ url = ... }}) in {where}"
)


def check_config(sess: RagdiveSession) -> None:
    """The target the config names and the LLM key, before anything runs (raises a UsageError)."""
    cfg = sess.cfg
    if cfg.target is not None and not cfg.estimate:
        try:
            target = sess.default_target()
        except TargetError as e:
            raise TargetSetupError(f"ragdive setup error: target = {_spec(cfg.target)}: {e}") from None
        if not callable(target):
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


def check_items(sess: RagdiveSession, items: list[pytest.Item]) -> None:
    """Some fixture gives ``ragdive_target`` to the conversation items (raises a UsageError)."""
    from .items import RagdiveItem

    first = next((i for i in items if isinstance(i, RagdiveItem)), None)
    if first is None or sess.cfg.target is not None:
        return
    defs = first._fixtureinfo.name2fixturedefs.get("ragdive_target") or ()
    if defs and not _is_plugin_default(defs[-1].func):
        return
    where = sess.cfg.source if sess.cfg.source and sess.cfg.source != "defaults" else "[tool.ragdive]"
    raise ConfigError(NO_TARGET.format(where=where))


def _is_plugin_default(func: Any) -> bool:
    """The plugin's own ``ragdive_target`` fixture (it builds the config's target), not a user's override."""
    func = inspect.unwrap(func)
    return getattr(func, "__module__", "") == "pytest_ragdive.plugin.hooks" and getattr(func, "__name__", "") == "ragdive_target"
