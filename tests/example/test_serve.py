"""The documented way to serve the example (issue 24): ``pip install 'pytest-ragdive[serve]'``
brings uvicorn, and ``uvicorn serve:create_app --factory`` serves a /chat that returns the
contexts the answer used, so the plugin's HTTP target gates it with its default paths.
On 9690bde no extra brought uvicorn and /chat returned no contexts."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest

from pytest_ragdive import http_target

pytestmark = pytest.mark.slow  # starts a server process

ROOT = Path(__file__).resolve().parents[2]


def test_the_serve_extra_brings_uvicorn_and_starlette() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {dep.split(">")[0].split("=")[0].split("[")[0].strip() for dep in extras["serve"]}
    assert {"uvicorn", "starlette", "prometheus_client"} <= names


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_uvicorn_serves_the_example_with_its_contexts(tmp_path: Path) -> None:
    pytest.importorskip("uvicorn")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXAMPLE_RAG_")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "serve:create_app", "--factory", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT / "example_project", env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    url = f"http://127.0.0.1:{port}/chat"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    out = proc.stdout.read() if proc.stdout else ""
                    raise AssertionError(f"uvicorn did not start: {out[-2000:]}") from None
                time.sleep(0.2)
        question = [{"role": "user", "content": "How many API requests per minute does the Pro plan allow?"}]
        req = urllib.request.Request(url, data=json.dumps({"messages": question}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=30) as resp:  # noqa: S310 - 127.0.0.1
            body = json.loads(resp.read())
        assert body["answer"] and body["contexts"], body
        assert {"id", "doc_id", "text"} <= set(body["contexts"][0])
        # the plugin's HTTP target, with its default paths, reads the contexts (retrieval metrics have ids)
        got = http_target(url)(question)
        assert got.answer == body["answer"]
        assert [c.doc_id for c in got.contexts] == [c["doc_id"] for c in body["contexts"]] and got.contexts[0].doc_id
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
