"""The fake server's files and batches endpoints, driven by the OpenAI SDK."""

from __future__ import annotations

import io
import json
import time
import urllib.request
from typing import Any

import pytest

from pytest_ragdive.testing import FakeLLMServer

openai = pytest.importorskip("openai")


def _jsonl(n: int) -> bytes:
    rows = [{"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions",
             "body": {"model": "fake-model", "messages": [{"role": "user", "content": f"question {i}"}]}}
            for i in range(n)]
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


def _client(server: FakeLLMServer) -> Any:
    return openai.OpenAI(base_url=server.url, api_key="sk-fake", max_retries=0)


def _submit(client: Any, n: int) -> Any:
    f = client.files.create(file=("in.jsonl", io.BytesIO(_jsonl(n))), purpose="batch")
    return client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h")


def _wait(client: Any, bid: str, done: tuple[str, ...] = ("completed", "failed", "expired", "cancelled"),
          tries: int = 100) -> Any:
    for _ in range(tries):
        b = client.batches.retrieve(bid)
        if b.status in done:
            return b
        time.sleep(0.02)
    return b


def test_upload_create_poll_download() -> None:
    with FakeLLMServer(handler=lambda body: "answer to " + body["messages"][-1]["content"], batch_delay_s=0.1) as srv:
        client = _client(srv)
        batch = _submit(client, 3)
        assert batch.status == "validating" and batch.request_counts.total == 3
        assert client.batches.retrieve(batch.id).status == "in_progress"  # before delay_s
        done = _wait(client, batch.id)
        assert done.status == "completed" and done.request_counts.completed == 3
        lines = [json.loads(x) for x in client.files.content(done.output_file_id).text.splitlines()]
        got = {x["custom_id"]: x["response"]["body"]["choices"][0]["message"]["content"] for x in lines}
        assert got == {f"r{i}": f"answer to question {i}" for i in range(3)}
        assert all(x["response"]["body"]["usage"]["prompt_tokens"] > 0 for x in lines)
        assert srv.request_count == 0  # no chat completion request: only batch lines
        assert srv.batch.lines_answered == 3 and srv.batch_polls >= 2


def test_failed_batch() -> None:
    with FakeLLMServer(batch_outcome="failed") as srv:
        client = _client(srv)
        done = _wait(client, _submit(client, 2).id)
        assert done.status == "failed" and done.output_file_id is None
        assert done.errors.data[0].code == "fake_failure"
        assert srv.batch.lines_answered == 0


def test_expired_batch_answers_some_lines() -> None:
    with FakeLLMServer(batch_outcome="expired") as srv:
        srv.batch.expire_after = 1
        client = _client(srv)
        done = _wait(client, _submit(client, 3).id)
        assert done.status == "expired"
        assert (done.request_counts.completed, done.request_counts.failed) == (1, 2)
        errors = [json.loads(x) for x in client.files.content(done.error_file_id).text.splitlines()]
        assert {e["error"]["code"] for e in errors} == {"batch_expired"}


def test_stuck_batch_stays_in_progress_and_can_be_cancelled() -> None:
    with FakeLLMServer(batch_outcome="stuck") as srv:
        client = _client(srv)
        bid = _submit(client, 1).id
        assert _wait(client, bid, done=("completed",), tries=5).status == "in_progress"
        assert client.batches.cancel(bid).status == "cancelled"
        assert client.batches.retrieve(bid).status == "cancelled"


def test_bad_requests_and_unknown_ids() -> None:
    with FakeLLMServer() as srv:
        client = _client(srv)
        with pytest.raises(openai.BadRequestError):
            client.batches.create(input_file_id="file-nope", endpoint="/v1/chat/completions", completion_window="24h")
        with pytest.raises(openai.NotFoundError):
            client.batches.retrieve("batch_nope")
        f = client.files.create(file=("in.jsonl", io.BytesIO(b"not json\n")), purpose="batch")
        assert client.files.retrieve(f.id).bytes == 9
        done = _wait(client, client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions",
                                                   completion_window="24h").id)
        assert done.status == "completed" and done.request_counts.failed == 1
        assert client.files.delete(f.id).deleted
        with urllib.request.urlopen(srv.url + "/batches") as r:
            assert len(json.loads(r.read())["data"]) == 1


def test_unknown_batch_outcome_is_rejected() -> None:
    with pytest.raises(ValueError, match="batch_outcome"):
        FakeLLMServer(batch_outcome="exploded")  # type: ignore[arg-type]
