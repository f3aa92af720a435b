"""A whole pytest session on the LLM path against :class:`~.server.FakeLLMServer`:

    python -m pytest_ragdive.testing.launch [--handler pkg.module:function] -- [pytest arguments]

It starts the fake OpenAI-compatible server on 127.0.0.1, points the session at it
the way a user's own endpoint would be (``OPENAI_BASE_URL``/``OPENAI_API_BASE``, a
dummy ``OPENAI_API_KEY``, ``--ragdive-model=openai/fake-model``), runs pytest in a
child process with the arguments after ``--``, and prints how many requests the
server got. Every role (simulator, validator, judges, classifier) is answered by the
handler: by default a minimal instance of the JSON schema each call asks for
(:func:`~.replies.default_handler`); ``--handler`` names a function ``body -> str | dict``
of your own. For a project whose config sets no ``llm.api_base`` or
``llm.api_key_env`` (those win over the environment). Nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
from collections.abc import Sequence

from .server import FAKE_KEY_VALUE, FAKE_MODEL, FakeLLMServer, Handler

__all__ = ["main"]


def _handler(spec: str | None) -> Handler | None:
    if not spec:
        return None
    module, _, name = spec.partition(":")
    if not name:
        raise SystemExit(f"--handler {spec!r}: expected package.module:function")
    fn = getattr(importlib.import_module(module), name, None)
    if not callable(fn):
        raise SystemExit(f"--handler {spec!r}: {module} has no function {name!r}")
    return fn


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    rest = argv[argv.index("--") + 1 :] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(prog="python -m pytest_ragdive.testing.launch", description="a whole pytest session on the LLM path against FakeLLMServer")
    parser.add_argument("--handler", help="package.module:function answering each request body (default: schema instances)")
    parser.add_argument("--model", default=FAKE_MODEL, help=f"the model every role uses (default {FAKE_MODEL})")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds the server waits before each reply")
    args = parser.parse_args(own)
    with FakeLLMServer(_handler(args.handler), latency_s=args.latency) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.url, "OPENAI_API_BASE": server.url, "OPENAI_API_KEY": FAKE_KEY_VALUE}
        code = subprocess.call([sys.executable, "-m", "pytest", f"--ragdive-model={args.model}", *rest], env=env)
        print(f"FakeLLMServer at {server.url}: {server.request_count} request(s)", file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
