"""pytest hooks of pytest-ragdive.

This module is imported in every pytest run of a project that installs the
plugin, so it imports nothing but pytest (and the option table) at load time.
Unless a ragdive option is given (``--ragdive-suite``, ``--ragdive-baseline``,
``--ragdive-update-baseline``) or the config sets ``autorun = true``, it only
registers its options, markers and fixtures. When active, the role this
process plays registers its own hooks (:mod:`.controller`).

This is the one place where the plugin's usage errors
(:class:`pytest_ragdive.errors.UsageError`) become pytest's ``UsageError``
(exit code 4).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from .options import add_options, asked, autorun_configured

if TYPE_CHECKING:
    from ..core.records import Conversation
    from .session import RagdiveSession

T = TypeVar("T")


def _usage(fn: Callable[[], T]) -> T:
    """Run ``fn``; a ragdive usage error becomes pytest's UsageError (exit 4, one line)."""
    from ..core.errors import UsageError

    try:
        return fn()
    except UsageError as e:
        raise pytest.UsageError(str(e)) from None


def _session(config: pytest.Config) -> RagdiveSession:
    from .session import get_session

    return _usage(lambda: get_session(config))


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    _clear_memos()  # a session starts with empty scoring memos (a second in-process session too)
    config.addinivalue_line("markers", "ragdive: a conversation run by pytest-ragdive")
    config.addinivalue_line("markers", "ragdive_core: a conversation of the ragdive core suite (every PR)")
    config.addinivalue_line("markers", "ragdive_extended: a conversation of the ragdive extended suite (main)")
    wanted = asked(config)
    if wanted or autorun_configured(config):
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
        from .controller import activate

        _usage(lambda: activate(config, wanted))


@pytest.hookimpl(trylast=True)  # after the role's own clean-up: the reports are written
def pytest_unconfigure(config: pytest.Config) -> None:
    """The session's scoring memos go with it, in every process (a plain run, the xdist
    controller and each worker), whatever the run's outcome."""
    _clear_memos()


def _clear_memos() -> None:
    from ..core.memo import clear_memos  # (functools only: importing it keeps the plugin cheap)

    clear_memos()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "ragdive_conversation" not in metafunc.fixturenames:
        return
    sess = _session(metafunc.config)
    plans = _usage(sess.plans)
    metafunc.parametrize("ragdive_conversation", plans, indirect=True, ids=[p.param_id for p in plans])


@pytest.fixture(scope="session")
def ragdive_target(request: pytest.FixtureRequest) -> Any:
    """The chatbot under test. Override this fixture in conftest.py, or set
    ``target = "package.module:attribute"`` in the ragdive config."""
    return _session(request.config).default_target()


@pytest.fixture(scope="session")
def ragdive_poison() -> list[Any]:
    """The poisoned documents of the attack suite (docs/safety.md), for a fixture that adds
    them to a copy of the bot's index: documents whose text carries an injected instruction
    and a canary. Your files on disk are never changed."""
    from ..attacks.poison import poisoned_documents

    return list(poisoned_documents())


@pytest.fixture
def ragdive_conversation(request: pytest.FixtureRequest, ragdive_target: Any) -> Conversation:
    """One planned conversation, run against ``ragdive_target`` and scored.

    Tests that ask for it are parametrized over the same conversations as the
    ragdive items of the selected suite.
    """
    return _session(request.config).result_for(request.param, ragdive_target)
