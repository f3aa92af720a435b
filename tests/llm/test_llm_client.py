"""LLMClient through the fake OpenAI-compatible server, with both transports."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from pytest_ragdive.llm import (
    BudgetExceeded,
    CacheMissError,
    LLMCallError,
    LLMClient,
    LLMConfigError,
    LLMStats,
    parse_json_output,
    strip_fences,
)
from pytest_ragdive.testing import FakeLLMServer, config_for

TRANSPORTS = ["litellm", "openai_http"]


class Verdict(BaseModel):
    verdict: Literal["yes", "no"]
    reason: str


def _first_user(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def _wants_json(body: dict[str, Any]) -> bool:
    return bool(body.get("response_format")) or any("JSON schema" in str(m.get("content")) for m in body["messages"])


def handler(body: dict[str, Any]) -> str | dict[str, Any]:
    q = _first_user(body)
    if _wants_json(body):
        n = int(re.search(r"\d+", q).group()) if re.search(r"\d+", q) else 0  # type: ignore[union-attr]
        return {"verdict": "yes" if n % 2 == 0 else "no", "reason": f"about {q}"}
    return f"answer to {q}"


def expected(q: str) -> Verdict:
    n = int(re.search(r"\d+", q).group())  # type: ignore[union-attr]
    return Verdict(verdict="yes" if n % 2 == 0 else "no", reason=f"about {q}")


def msgs(q: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You judge."}, {"role": "user", "content": q}]


@pytest.fixture
def server():
    with FakeLLMServer(handler) as s:
        yield s


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def make(server: FakeLLMServer, tmp_path: Path, transport: str, **over: Any) -> LLMClient:
    llm = {"transport": transport, "timeout_s": 2.0, **over.pop("llm", {})}
    cfg = config_for(server, cache_dir=str(tmp_path / "cache"), llm=llm, **over)
    return LLMClient.from_config(cfg, backoff_base_s=0.01, backoff_max_s=0.05)


async def _batch(client: LLMClient, n: int) -> list[Any]:
    jobs = [
        client.complete_json("judge", msgs(f"Q{i}"), Verdict, prompt_id="judge_x", prompt_version="1") for i in range(n)
    ]
    jobs += [client.complete_text("simulator", msgs(f"T{i}"), prompt_id="sim_x", prompt_version="1") for i in range(n)]
    try:
        return list(await asyncio.gather(*jobs))
    finally:
        await client.aclose()


def run(client: LLMClient, coro: Any) -> Any:
    """Run one call and close the client's HTTP session in the same event loop."""

    async def go() -> Any:
        try:
            return await coro
        finally:
            await client.aclose()

    return asyncio.run(go())


# --------------------------------------------------------------------------


def test_results_and_second_run_makes_no_request(server: FakeLLMServer, tmp_path: Path, transport: str) -> None:
    out = asyncio.run(_batch(make(server, tmp_path, transport), 6))
    for i in range(6):
        assert out[i].value == expected(f"Q{i}")
        assert out[i].cached is False and out[i].error is None
        assert out[6 + i] == f"answer to T{i}"
    first = server.request_count
    assert first == 12
    client = make(server, tmp_path, transport)
    again = asyncio.run(_batch(client, 6))
    assert server.request_count == first, "a second identical run made HTTP requests"
    assert [r.value for r in again[:6]] == [r.value for r in out[:6]]
    assert all(r.cached for r in again[:6])
    st = client.stats
    assert st.roles["judge"].cache_hits == 6 and st.roles["judge"].requests == 0
    assert st.cache.hits == 12 and st.cache.misses == 0


def test_both_transports_share_entries_and_send_the_key(server: FakeLLMServer, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("RAGDIVE_TEST_KEY", "sk-secret-123")
    over = {"llm": {"api_key_env": "RAGDIVE_TEST_KEY"}}
    asyncio.run(_batch(make(server, tmp_path, "openai_http", **over), 3))
    assert all(h.get("authorization") == "Bearer sk-secret-123" for h in server.request_headers)
    n = server.request_count
    asyncio.run(_batch(make(server, tmp_path, "litellm", **over), 3))
    assert server.request_count == n  # same logical request, same cache key


def test_record_mode_none_misses_fast_without_network(
    server: FakeLLMServer, tmp_path: Path, transport: str, monkeypatch
) -> None:
    client = make(server, tmp_path, transport, record_mode="none")
    real_connect = socket.socket.connect
    attempts: list[Any] = []

    def no_connect(self: socket.socket, address: Any) -> Any:
        attempts.append(address)
        raise AssertionError(f"socket opened in record mode none: {address}")

    monkeypatch.setattr(socket.socket, "connect", no_connect)
    t0 = time.perf_counter()
    with pytest.raises(CacheMissError) as ei:
        asyncio.run(
            client.complete_json("judge", msgs("Q1"), Verdict, prompt_id="judge_faithfulness", prompt_version="2")
        )
    assert time.perf_counter() - t0 < 1.0
    monkeypatch.setattr(socket.socket, "connect", real_connect)
    msg = str(ei.value)
    assert "'judge'" in msg and "openai/fake-model" in msg and "judge_faithfulness" in msg
    assert ei.value.role == "judge" and ei.value.prompt_id == "judge_faithfulness"
    assert server.request_count == 0 and attempts == []
    assert client._transport is None  # no HTTP client was even built
    assert client.stats.roles["judge"].cache_misses == 1


def test_record_mode_none_replays_recorded_cache(server: FakeLLMServer, tmp_path: Path, transport: str) -> None:
    asyncio.run(_batch(make(server, tmp_path, transport), 3))
    n = server.request_count
    client = make(server, tmp_path, transport, record_mode="none")
    out = asyncio.run(_batch(client, 3))
    assert [r.value for r in out[:3]] == [expected(f"Q{i}") for i in range(3)]
    assert server.request_count == n
    assert client._transport is None  # a replay builds no HTTP client (and never imports litellm)


def test_record_mode_all_calls_again_and_off_never_caches(server: FakeLLMServer, tmp_path: Path) -> None:
    asyncio.run(_batch(make(server, tmp_path, "openai_http"), 2))
    assert server.request_count == 4
    asyncio.run(_batch(make(server, tmp_path, "openai_http", record_mode="all"), 2))
    assert server.request_count == 8
    off_dir = tmp_path / "off"
    cfg = config_for(server, cache_dir=str(off_dir), record_mode="off", llm={"transport": "openai_http"})
    c = LLMClient.from_config(cfg)
    assert c.cache is None
    asyncio.run(_batch(c, 2))
    asyncio.run(_batch(LLMClient.from_config(cfg), 2))
    assert server.request_count == 16
    assert not off_dir.exists()


# -- structured output -------------------------------------------------------


@pytest.mark.parametrize(
    "mode, transport_, want_rf, schema_in_prompt",
    [
        ("json_schema", "litellm", "json_schema", False),
        ("json_object", "litellm", "json_object", True),
        ("prompt", "litellm", None, True),
        ("auto", "litellm", "json_object", True),  # litellm does not know fake-model
        ("json_schema", "openai_http", "json_schema", False),
        ("json_object", "openai_http", "json_object", True),
        ("prompt", "openai_http", None, True),
        ("auto", "openai_http", "json_schema", False),
    ],
)
def test_structured_modes(
    server: FakeLLMServer, tmp_path: Path, mode: str, transport_: str, want_rf: str | None, schema_in_prompt: bool
) -> None:
    c = make(server, tmp_path, transport_, llm={"structured_output": mode})
    res = run(c, c.complete_json("judge", msgs("Q2"), Verdict, prompt_id="p"))
    assert res.value == expected("Q2")
    (body,) = server.requests
    rf = body.get("response_format")
    assert (rf or {}).get("type") == want_rf
    if want_rf == "json_schema":
        assert rf["json_schema"]["schema"] == Verdict.model_json_schema()
        assert rf["json_schema"]["name"] == "Verdict"
    system = body["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("You judge.")
    assert ('"verdict"' in system["content"]) is schema_in_prompt


def test_auto_falls_back_to_json_object_when_schema_refused(server: FakeLLMServer, tmp_path: Path) -> None:
    server.fault_for = lambda body, n: (
        "400" if (body.get("response_format") or {}).get("type") == "json_schema" else None
    )
    c = make(server, tmp_path, "openai_http")
    res = run(c, c.complete_json("judge", msgs("Q4"), Verdict, prompt_id="p"))
    assert res.value == expected("Q4")
    res2 = run(c, c.complete_json("judge", msgs("Q6"), Verdict, prompt_id="p"))
    assert res2.value == expected("Q6")
    types = [(b.get("response_format") or {}).get("type") for b in server.requests]
    assert types == ["json_schema", "json_object", "json_object"]


def test_repair_call_quotes_the_error(server: FakeLLMServer, tmp_path: Path, transport: str) -> None:
    server.fault_for = lambda body, n: "schema" if n == 0 else None
    c = make(server, tmp_path, transport)
    res = run(c, c.complete_json("judge", msgs("Q8"), Verdict, prompt_id="p"))
    assert res.value == expected("Q8") and res.repaired
    repair = server.requests[1]["messages"]
    assert repair[-2]["role"] == "assistant" and "ragdive_fake_wrong_field" in repair[-2]["content"]
    assert "schema mismatch" in repair[-1]["content"] and "verdict" in repair[-1]["content"]
    st = c.stats.roles["judge"]
    assert st.repairs == 1 and st.invalid_outputs == 0 and st.requests == 2


def test_invalid_after_repair_is_recorded_not_raised(server: FakeLLMServer, tmp_path: Path, transport: str) -> None:
    server.fault_for = lambda body, n: "malformed" if n % 2 == 0 else "schema"
    c = make(server, tmp_path, transport)
    res = run(c, c.complete_json("judge", msgs("Q1"), Verdict, prompt_id="p"))
    assert res.value is None and res.error and "invalid output" in res.error
    assert res.raw  # the last reply is kept
    assert c.stats.roles["judge"].invalid_outputs == 1
    assert server.request_count == 2
    # issue 10: nothing invalid was stored (it was, and replayed for ever): counted, and
    # a rerun against a healthy server asks again and gets its score back
    assert c.stats.cache.stores == 0 and c.stats.cache.rejected == 2
    server.fault_for = None
    c2 = make(server, tmp_path, transport)
    res2 = run(c2, c2.complete_json("judge", msgs("Q1"), Verdict, prompt_id="p"))
    assert res2.value == expected("Q1") and not res2.cached and server.request_count == 3
    c3 = make(server, tmp_path, transport, record_mode="none")
    res3 = run(c3, c3.complete_json("judge", msgs("Q1"), Verdict, prompt_id="p"))
    assert res3.value == expected("Q1") and res3.cached and server.request_count == 3


def test_a_repaired_pair_is_stored_and_replays(server: FakeLLMServer, tmp_path: Path, transport: str) -> None:
    """An invalid first reply is held back; once its repair parses, both are stored,
    so a replay-only run (record mode none) finds the whole call."""
    server.fault_for = lambda body, n: "malformed" if n == 0 else None
    c = make(server, tmp_path, transport)
    res = run(c, c.complete_json("judge", msgs("Q2"), Verdict, prompt_id="p"))
    assert res.value == expected("Q2") and res.repaired and server.request_count == 2
    assert c.stats.cache.stores == 2 and c.stats.cache.rejected == 0
    c2 = make(server, tmp_path, transport, record_mode="none")
    res2 = run(c2, c2.complete_json("judge", msgs("Q2"), Verdict, prompt_id="p"))
    assert res2.value == expected("Q2") and res2.cached and res2.repaired and server.request_count == 2


def test_invalid_entries_of_an_older_run_are_dropped(
    server: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache written before issue 10 holds invalid replies: the first run that sees
    them stay invalid drops them, so the next one asks again."""
    import pytest_ragdive.llm.client as client_mod

    server.fault_for = lambda body, n: "malformed"
    with monkeypatch.context() as m:
        m.setattr(client_mod, "usable_reply", lambda schema, resp: True)  # the old client: store whatever came back
        old = make(server, tmp_path, "openai_http")
        run(old, old.complete_json("judge", msgs("Q3"), Verdict, prompt_id="p"))
    assert server.request_count == 2
    server.fault_for = None
    again = make(server, tmp_path, "openai_http")
    assert again.cache is not None and len(again.cache) == 2
    res = run(again, again.complete_json("judge", msgs("Q3"), Verdict, prompt_id="p"))
    assert res.value is None and res.cached and server.request_count == 2  # replayed once more...
    assert len(again.cache) == 0  # ...and dropped
    fresh = make(server, tmp_path, "openai_http")
    res = run(fresh, fresh.complete_json("judge", msgs("Q3"), Verdict, prompt_id="p"))
    assert res.value == expected("Q3") and server.request_count == 3


def test_fences_and_prose_are_stripped() -> None:
    good = '{"verdict": "yes", "reason": "r"}'
    for text in (
        good,
        f"```json\n{good}\n```",
        f"```\n{good}\n```",
        f"Here you go:\n```json\n{good}\n```\nDone.",
        f"Sure: {good}",
    ):
        v, err = parse_json_output(text, Verdict)
        assert v == Verdict(verdict="yes", reason="r"), (text, err)
    assert strip_fences("```json\n[1]") == "[1]"
    v, err = parse_json_output("no json here", Verdict)
    assert v is None and err and "not valid JSON" in err
    v, err = parse_json_output('{"verdict": "maybe"}', Verdict)
    assert v is None and err and "schema mismatch" in err and "verdict" in err and "reason" in err


# -- per-role settings, keys, config errors ----------------------------------


def test_per_role_models_temperature_and_seed(server: FakeLLMServer, tmp_path: Path, transport: str) -> None:
    llm = {"judge": {"model": "openai/judge-model", "temperature": 0.0, "seed": 7}, "simulator": {"temperature": 0.9}}
    c = make(server, tmp_path, transport, llm=llm)
    assert c.model_for("judge") == "openai/judge-model"
    assert c.model_for("simulator") == "openai/fake-model"

    async def go() -> None:
        await c.complete_json("judge", msgs("Q2"), Verdict, prompt_id="p")
        await c.complete_text("simulator", msgs("T1"), prompt_id="s")
        await c.complete_text("simulator", msgs("T1"), prompt_id="s", seed=42)  # another key: another request
        await c.complete_text("classifier", msgs("T1"), prompt_id="s", model="openai/other-model")
        await c.aclose()

    asyncio.run(go())
    bodies = server.requests
    assert [b["model"] for b in bodies] == ["judge-model", "fake-model", "fake-model", "other-model"]
    assert bodies[0]["temperature"] == 0.0 and bodies[0]["seed"] == 7
    assert bodies[1]["temperature"] == 0.9 and bodies[1]["seed"] == 0
    assert bodies[2]["seed"] == 42
    assert set(c.stats.roles) == {"judge", "simulator", "classifier"}
    assert set(c.stats.roles["judge"].models) == {"openai/judge-model"}


def test_config_errors(server: FakeLLMServer, tmp_path: Path, monkeypatch) -> None:
    from pytest_ragdive.core.config import RagdiveConfig

    c = LLMClient.from_config(RagdiveConfig(cache_dir=str(tmp_path)))
    with pytest.raises(LLMConfigError, match="no model for the judge role"):
        c.model_for("judge")
    with pytest.raises(LLMConfigError, match="unknown LLM role"):
        c.model_for("critic")
    monkeypatch.delenv("RAGDIVE_MISSING_KEY", raising=False)
    c = make(server, tmp_path, "openai_http", llm={"api_key_env": "RAGDIVE_MISSING_KEY"})
    with pytest.raises(LLMConfigError, match="RAGDIVE_MISSING_KEY"):
        run(c, c.complete_text("judge", msgs("x")))
    assert server.request_count == 0


def test_key_never_in_errors_or_stats(server: FakeLLMServer, tmp_path: Path, transport: str, monkeypatch) -> None:
    monkeypatch.setenv("RAGDIVE_TEST_KEY", "sk-secret-123")
    server.fault_for = lambda body, n: "401"
    c = make(server, tmp_path, transport, llm={"api_key_env": "RAGDIVE_TEST_KEY"})
    with pytest.raises(LLMCallError) as ei:
        run(c, c.complete_text("judge", msgs("x")))
    assert ei.value.status == 401 and server.request_count == 1  # not retried
    assert "sk-secret-123" not in str(ei.value) and "sk-secret-123" not in repr(ei.value)
    assert "sk-secret-123" not in c.stats.model_dump_json()


# -- retries, timeouts, concurrency -------------------------------------------


def test_retry_after_is_honoured(server: FakeLLMServer, tmp_path: Path, transport: str) -> None:
    server.retry_after_s = 0.4
    server.fault_for = lambda body, n: "429" if n == 0 else None
    c = make(server, tmp_path, transport)

    async def go() -> float:
        t0 = time.perf_counter()
        await c.complete_text("judge", msgs("x"))
        dt = time.perf_counter() - t0
        await c.aclose()
        return dt

    dt = asyncio.run(go())
    assert dt >= 0.4
    assert server.statuses[429] == 1 and server.statuses[200] == 1
    assert c.stats.roles["judge"].retries == 1


def test_final_error_after_max_retries(server: FakeLLMServer, tmp_path: Path, transport: str) -> None:
    server.fault_for = lambda body, n: "500"
    c = make(server, tmp_path, transport, llm={"max_retries": 2})
    with pytest.raises(LLMCallError, match="after 3 attempts") as ei:
        run(c, c.complete_text("judge", msgs("x"), prompt_id="p"))
    assert ei.value.attempts == 3 and ei.value.status == 500
    assert server.request_count == 3
    st = c.stats.roles["judge"]
    assert st.requests == 3 and st.retries == 2 and st.errors == 1
    assert len(c.cache or []) == 0  # nothing stored for a failed call


@pytest.mark.parametrize("fault", ["timeout", "disconnect", "bad_body"])
def test_transient_faults_are_retried(server: FakeLLMServer, tmp_path: Path, transport: str, fault: str) -> None:
    server.fault_for = lambda body, n: fault if n == 0 else None
    server.hang_s = 3.0
    c = make(server, tmp_path, transport, llm={"timeout_s": 0.4})
    t0 = time.perf_counter()
    res = run(c, c.complete_json("judge", msgs("Q2"), Verdict, prompt_id="p"))
    assert res.value == expected("Q2")
    assert time.perf_counter() - t0 < 3.0
    assert server.request_count == 2


def test_concurrency_is_bounded(tmp_path: Path, transport: str) -> None:
    """Requests in flight: llm.max_in_flight, default 4 x concurrency (conversations in flight)."""
    with FakeLLMServer(handler, latency_s=0.05) as s:
        c = make(s, tmp_path, transport, concurrency=8, llm={"max_in_flight": 3})
        out = asyncio.run(_batch(c, 10))
        assert len(out) == 20
        assert s.max_in_flight <= 3
        assert s.max_in_flight >= 2
    with FakeLLMServer(handler, latency_s=0.05) as s:
        c = make(s, tmp_path / "second", transport, concurrency=1)
        assert c.max_in_flight == 4
        asyncio.run(_batch(c, 10))
        assert 2 <= s.max_in_flight <= 4


def test_identical_concurrent_calls_share_one_request(server: FakeLLMServer, tmp_path: Path, transport: str) -> None:
    c = make(server, tmp_path, transport)

    async def go() -> list[Any]:
        try:
            return list(
                await asyncio.gather(*[c.complete_json("judge", msgs("Q2"), Verdict, prompt_id="p") for _ in range(5)])
            )
        finally:
            await c.aclose()

    out = asyncio.run(go())
    assert all(r.value == expected("Q2") for r in out)
    assert server.request_count == 1
    assert c.stats.roles["judge"].cache_hits == 4


def test_cancelled_leader_does_not_cancel_followers(tmp_path: Path) -> None:
    with FakeLLMServer(handler, latency_s=0.2) as s:
        c = make(s, tmp_path, "openai_http")

        async def go() -> Any:
            leader = asyncio.create_task(c.complete_text("judge", msgs("T1")))
            await asyncio.sleep(0.05)
            follower = asyncio.create_task(c.complete_text("judge", msgs("T1")))
            await asyncio.sleep(0.05)
            leader.cancel()
            return await follower

        assert run(c, go()) == "answer to T1"


def test_client_survives_several_event_loops(server: FakeLLMServer, tmp_path: Path, transport: str) -> None:
    c = make(server, tmp_path, transport, record_mode="off")
    for i in range(3):
        assert asyncio.run(c.complete_text("judge", msgs(f"T{i}"))) == f"answer to T{i}"
    asyncio.run(c.aclose())


# -- accounting -----------------------------------------------------------------


def test_cost_budget_and_breakdown(server: FakeLLMServer, tmp_path: Path) -> None:
    # litellm knows gpt-4o-mini's price, so the fake server's usage gets a cost
    c = make(server, tmp_path, "litellm", model="openai/gpt-4o-mini", max_cost=1e-9)
    first = run(c, c.complete_text("judge", msgs("T1")))
    assert first == "answer to T1"
    spent = c.stats.roles["judge"].cost_usd
    assert spent is not None and spent > 0
    with pytest.raises(BudgetExceeded) as ei:
        run(c, c.complete_text("judge", msgs("T2")))
    msg = str(ei.value)
    assert "judge openai/gpt-4o-mini" in msg and "max_cost" in msg and "1 requests" in msg
    assert server.request_count == 1
    # cache hits stay free and allowed
    assert run(c, c.complete_text("judge", msgs("T1"))) == "answer to T1"


def test_cost_unknown_is_none(server: FakeLLMServer, tmp_path: Path, transport: str, monkeypatch) -> None:
    if transport == "openai_http":
        monkeypatch.delitem(sys.modules, "litellm", raising=False)  # no price map without litellm loaded
    c = make(server, tmp_path, transport, max_cost=0.5)
    asyncio.run(_batch(c, 2))
    st = c.stats.roles["judge"]
    assert st.cost_usd is None and st.unpriced_requests == 2
    assert st.prompt_tokens > 0 and st.completion_tokens > 0


def test_stats_merge_table_and_roundtrip(server: FakeLLMServer, tmp_path: Path) -> None:
    a = make(server, tmp_path / "a", "openai_http")
    asyncio.run(_batch(a, 3))
    b = make(server, tmp_path / "b", "openai_http")
    asyncio.run(_batch(b, 2))
    wire = json.loads(json.dumps(b.stats.model_dump(mode="json")))  # as an xdist worker sends it
    merged = LLMStats.merged([a.stats, wire])
    assert merged.roles["judge"].requests == 5 and merged.roles["simulator"].requests == 5
    assert merged.roles["judge"].models["openai/fake-model"].requests == 5
    assert merged.cache.stores == 10 and merged.cache.misses == 10
    assert merged.total().requests == 10
    lines = merged.table()
    assert lines[0].split()[:3] == ["role", "model", "calls"]
    assert any(line.startswith("judge") for line in lines) and lines[-1].startswith("cache:")
    assert merged.summary_lines()[0].startswith("LLM: 10 calls, 10 requests")


def test_module_import_is_light() -> None:
    code = (
        "import sys, pytest_ragdive.llm, pytest_ragdive.llm.cache, pytest_ragdive.llm.stats;"
        "bad=[m for m in ('litellm','diskcache','aiohttp','openai','httpx') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
