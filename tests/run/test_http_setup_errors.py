"""An HTTP target that cannot be reached (connection refused) or refuses the token (HTTP
401/403) on its first call, or whose first reply does not fit the reply paths: a set-up
mistake, one ``ERROR:`` line, exit 4, before the other items run (issue 32, case 12).
Before: 615 lines and 17 tracebacks for a bot not running, the same for a wrong token, and
a wrong reply path ended as ``! _pytest.outcomes.Exit: ...``."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest
import test_http_target
from conftest import CONVS, PYPROJECT, SINGLE
from test_http_target import ok

from pytest_ragdive import http_target as http
from pytest_ragdive.core.errors import TargetError

pytestmark = pytest.mark.slow  # serves HTTP from threads of its own

service = test_http_target.service  # the fixture: a chat service on 127.0.0.1


def _project(pytester: pytest.Pytester, target: str) -> None:
    data = pytester.mkdir("data")
    (data / "single.jsonl").write_text("\n".join(json.dumps(r) for r in SINGLE) + "\n")
    (data / "convs.yaml").write_text(CONVS)
    pytester.makefile(".toml", pyproject=PYPROJECT.format(extra=f"target = {target}"))


def _one_error_line(pytester: pytest.Pytester) -> str:
    res = pytester.runpytest_subprocess("--ragdive-suite=core", "-p", "no:cacheprovider", timeout=90)
    out = res.stdout.str() + res.stderr.str()
    assert res.ret == pytest.ExitCode.USAGE_ERROR, out
    assert "Traceback" not in out and "_pytest.outcomes.Exit" not in out and "INTERNALERROR" not in out, out
    assert len(out.splitlines()) <= 25, out
    errors = [line for line in res.stderr.str().splitlines() if line.startswith("ERROR: ragdive setup error")]
    assert len(errors) == 1, out
    assert " passed" not in out and " failed" not in out, out  # no other item ran
    return errors[0]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_bot_that_is_not_running_is_one_line(pytester: pytest.Pytester) -> None:
    url = f"http://127.0.0.1:{_free_port()}/chat"
    _project(pytester, f'{{ url = "{url}", retries = 1 }}')
    line = _one_error_line(pytester)
    assert "cannot connect" in line and "is the bot running at this URL?" in line and url in line


@pytest.mark.parametrize("status", [401, 403])
def test_a_wrong_token_is_one_line(pytester: pytest.Pytester, service: Any, status: int) -> None:
    svc = service(lambda body, n: (status, {}, b'{"error": "bad token"}'))
    _project(pytester, f'{{ url = "{svc.url}", headers = {{ Authorization = "Bearer wrong-token-123" }} }}')
    line = _one_error_line(pytester)
    assert f"HTTP {status}" in line and "check the token" in line and "wrong-token-123" not in line
    assert len(svc.requests) <= 5  # the first call, and at most the few already in flight beside it


def test_a_wrong_reply_path_is_the_same_error_line(pytester: pytest.Pytester, service: Any) -> None:
    svc = service(lambda body, n: ok({"answer": "Snow is white.", "contexts": [{"id": "s#0", "text": "x", "metadata": {}}]}))
    _project(pytester, f'{{ url = "{svc.url}", context_fields = {{ doc_id = "meta.source" }} }}')
    line = _one_error_line(pytester)
    assert "meta.source" in line and "fix the target's reply paths" in line


def test_a_refusal_after_a_call_got_through_only_fails_that_turn(service: Any) -> None:
    svc = service(lambda body, n: ok({"answer": "fine"}) if n == 0 else (401, {}, b"expired"))
    target = http(svc.url)
    assert target([{"role": "user", "content": "hi"}]).answer == "fine"
    with pytest.raises(TargetError, match="HTTP 401"):
        target([{"role": "user", "content": "again"}])
    assert target.first_reply_error is None  # not a set-up mistake: the token worked before


def test_after_a_refused_first_call_the_others_fail_at_once(service: Any) -> None:
    svc = service(lambda body, n: (403, {}, b"no"))
    target = http(svc.url)
    for _ in range(3):
        with pytest.raises(TargetError, match="HTTP 403"):
            target([{"role": "user", "content": "hi"}])
    assert len(svc.requests) == 1 and target.first_reply_error is not None
