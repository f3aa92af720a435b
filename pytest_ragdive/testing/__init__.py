"""Offline test harness: a fake OpenAI-compatible chat completions server on 127.0.0.1.

- :mod:`.server`: :class:`FakeLLMServer` (latency, faults, the files and batches endpoints);
- :mod:`.replies`: its default replies (a minimal instance of the requested schema, an echo);
- :mod:`.batch`: the batch store behind the files and batches endpoints;
- :mod:`.fixtures`: the ``fake_llm_server`` and ``make_fake_llm_server`` fixtures and
  :func:`config_for` (``pytest_plugins = ["pytest_ragdive.testing"]`` enables the fixtures).

Only tests and benchmarks import this package: the plugin's own commands never do.
"""

from __future__ import annotations

from .fixtures import config_for, fake_llm_server, make_fake_llm_server
from .replies import default_handler, example_from_schema
from .server import ALL_FAULTS, DEFAULT_FAULTS, FAKE_KEY_ENV, FAKE_KEY_VALUE, FAKE_MODEL, FakeLLMServer

__all__ = [
    "ALL_FAULTS",
    "DEFAULT_FAULTS",
    "FAKE_KEY_ENV",
    "FAKE_KEY_VALUE",
    "FAKE_MODEL",
    "FakeLLMServer",
    "config_for",
    "default_handler",
    "example_from_schema",
    "fake_llm_server",
    "make_fake_llm_server",
]
