"""Issue 22 (1): a provider or proxy that echoes the request's Authorization header
inside normal, schema-valid replies (a judge's reason, a simulated question), and a
target that echoes secrets in its answers: no secret the run knows reaches the
terminal, a report, the step summary, the baseline or the cache. Before, only error
bodies were redacted: the key landed in every one of them."""

from __future__ import annotations

import os
from typing import Any

import pytest
from conftest import TOY_CONFTEST, llm_project
from test_plugin_llm import CORPUS, scripted

from pytest_ragdive.testing import FAKE_KEY_ENV, FakeLLMServer

KEY = "sk-echoed-key-9f8e7d6c5b4a3"
BOT_SECRET = "bot-internal-secret-31337"  # listed under redact_env
ECHO_BOT = TOY_CONFTEST + f'''
_toy_bot = bot

def bot(messages):
    resp = _toy_bot(messages)
    leak = f" (debug: {{os.environ['BOT_SECRET']}} / {{os.environ['{FAKE_KEY_ENV}']}})"
    resp.answer += leak
    for c in resp.contexts:
        c.text += leak
    return resp

@pytest.fixture(scope="session")
def ragdive_target():
    return bot
'''


def echoing(server: FakeLLMServer) -> Any:
    """The scripted replies with the request's Authorization header appended to every string."""

    def echo(value: Any, header: str) -> Any:
        if isinstance(value, str):
            return f"{value} [{header}]"
        if isinstance(value, list):
            return [echo(v, header) for v in value]
        if isinstance(value, dict):  # (question_type is an enum: left as it is)
            return {k: v if k == "question_type" else echo(v, header) for k, v in value.items()}
        return value

    def handler(body: dict[str, Any]) -> Any:
        header = next((h.get("authorization", "") for h in reversed(server.request_headers)), "")
        out = scripted(body)
        return echo(out, f"Authorization: {header}") if isinstance(out, (dict, str)) else out

    return handler


def test_no_secret_in_any_file_or_the_terminal(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("TOY_FORGET", "TOY_RAISE_ON", "TOY_UNSAFE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(FAKE_KEY_ENV, KEY)
    monkeypatch.setenv("BOT_SECRET", BOT_SECRET)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "step-summary.md"))
    server = FakeLLMServer().start()
    server.handler = echoing(server)
    try:
        llm_project(
            pytester, CORPUS, top='concurrency = 4\nredact_env = ["BOT_SECRET"]',
            llm=f'api_base = "{server.url}"\napi_key_env = "{FAKE_KEY_ENV}"\ntransport = "openai_http"\ntimeout_s = 5',
            rest="[tool.ragdive.gate]\nrecall_at_k = 0.05\n[tool.ragdive.suites.core]\n"
            'generated = { conversations = 2, turns = 2, roles = ["default"], seed = 1 }\n',
        )
        pytester.makeconftest(ECHO_BOT)
        first = pytester.runpytest_subprocess("--ragdive-baseline=b.json", "--ragdive-update-baseline", "-v", "-rA")
        calls = server.request_count
        again = pytester.runpytest_subprocess("--ragdive-baseline=b.json", "-v", "-rA")  # from the cache
    finally:
        server.stop()
    assert calls > 0 and server.request_count == calls  # the second run replayed every call
    assert first.ret == 0 and again.ret == 0, first.stdout.str()
    assert all(h.get("authorization") == f"Bearer {KEY}" for h in server.request_headers)  # the key was sent
    terminal = "\n".join(r.stdout.str() + r.stderr.str() for r in (first, again))
    files = [p for p in pytester.path.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    written = [p for p in files if p.suffix not in (".py", ".toml", ".jsonl")]
    assert any(p.name == "cache.db" or ".ragdive" in p.parts for p in written)
    assert {"results.json", "summary.md", "report.html", "step-summary.md", "b.json"} <= {p.name for p in written}
    for secret in (KEY, BOT_SECRET):
        assert secret not in terminal
        for path in written:
            assert secret.encode() not in path.read_bytes(), path
    results = (pytester.path / "report" / "results.json").read_text()
    assert "Authorization: Bearer ***" in results  # the echoes arrived, scrubbed
    assert "(debug: *** / ***)" in results  # the target's too
    assert os.environ.get(FAKE_KEY_ENV) == KEY
