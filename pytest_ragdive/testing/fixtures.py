"""The fake server's pytest fixtures and :func:`config_for`, the config that points every role at it.

``pytest_plugins = ["pytest_ragdive.testing"]`` in a conftest enables the fixtures."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from .server import FAKE_KEY_ENV, FAKE_KEY_VALUE, FAKE_MODEL, FakeLLMServer, Handler

if TYPE_CHECKING:
    from ..core.config import RagdiveConfig

__all__ = ["config_for", "fake_llm_server", "make_fake_llm_server"]


# --------------------------------------------------------------------------
# config helper


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def config_for(server: FakeLLMServer | str, **overrides: Any) -> RagdiveConfig:
    """A RagdiveConfig whose every role uses ``openai/fake-model`` on ``server``
    (a FakeLLMServer, or its ``url`` when the server runs in another process).

    ``llm.api_base`` is ``server.url``; ``llm.api_key_env`` names a dummy
    variable (``RAGDIVE_FAKE_LLM_KEY``, set to a dummy value unless already
    set). Keyword overrides are RagdiveConfig fields; a dict value (``llm=``)
    is merged into the defaults rather than replacing them.
    """
    from ..core.config import RagdiveConfig

    base: dict[str, Any] = {
        "model": FAKE_MODEL,
        "llm": {"api_base": server if isinstance(server, str) else server.url, "api_key_env": FAKE_KEY_ENV},
    }
    data = _deep_merge(base, overrides)
    key_env = (data.get("llm") or {}).get("api_key_env")
    if key_env == FAKE_KEY_ENV:
        os.environ.setdefault(FAKE_KEY_ENV, FAKE_KEY_VALUE)
    base_dir = data.pop("base_dir", None)
    cfg = RagdiveConfig.model_validate(data)
    if base_dir is not None:
        cfg.base_dir = str(base_dir)
    return cfg


# --------------------------------------------------------------------------
# fixtures


@pytest.fixture
def fake_llm_server() -> Iterator[FakeLLMServer]:
    """A running FakeLLMServer with the default handler; set ``.handler`` etc. to script it."""
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def make_fake_llm_server() -> Iterator[Callable[..., FakeLLMServer]]:
    """Factory fixture: ``make_fake_llm_server(handler, latency_s=..., ...)``; all are stopped at teardown."""
    servers: list[FakeLLMServer] = []

    def make(handler: Handler | None = None, **kwargs: Any) -> FakeLLMServer:
        s = FakeLLMServer(handler, **kwargs).start()
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.stop()
