"""Conversations complete with correct results through a 30% fault rate."""

from __future__ import annotations

import asyncio
import random
import re
import threading
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from pytest_ragdive.llm import REPAIR_INSTRUCTIONS, LLMClient, LLMResult
from pytest_ragdive.testing import DEFAULT_FAULTS, FakeLLMServer, config_for

pytestmark = pytest.mark.slow  # starts processes of its own

N_CONVERSATIONS = 20
TURNS = 3
JUDGES = ("faithfulness", "correctness")
REPAIR_MARK = REPAIR_INSTRUCTIONS.split("{")[0].strip()


class Score(BaseModel):
    metric: str
    score: float
    label: Literal["pass", "fail"]


def truth(q: str, metric: str) -> Score:
    n = int(re.search(r"c(\d+)t(\d+)", q).group(1))  # type: ignore[union-attr]
    return Score(metric=metric, score=n / 100, label="pass" if n % 3 else "fail")


def handler(body: dict[str, Any]) -> str | dict[str, Any]:
    user = [m["content"] for m in body["messages"] if m["role"] == "user"]
    if body.get("response_format") or "JSON schema" in str(body["messages"]):
        q = user[0]
        metric = re.search(r"metric=(\w+)", q).group(1)  # type: ignore[union-attr]
        return truth(q, metric).model_dump()
    return "user says: " + user[-1]


async def conversation(client: LLMClient, c: int) -> list[Any]:
    history: list[dict[str, str]] = []
    out: list[Any] = []
    for t in range(TURNS):
        history.append({"role": "user", "content": f"simulate c{c}t{t}"})
        said = await client.complete_text("simulator", history, prompt_id="sim", prompt_version="1")
        out.append(said)
        history.append({"role": "assistant", "content": said})
        verdicts = await asyncio.gather(
            *[
                client.complete_json(
                    "judge",
                    [{"role": "user", "content": f"metric={m} c{c}t{t}"}],
                    Score,
                    prompt_id=f"judge_{m}",
                    prompt_version="1",
                )
                for m in JUDGES
            ]
        )
        out.extend(verdicts)
    return out


async def run_all(client: LLMClient) -> list[list[Any]]:
    try:
        return list(await asyncio.gather(*[conversation(client, c) for c in range(N_CONVERSATIONS)]))
    finally:
        await client.aclose()


def check(convs: list[list[Any]], allow_invalid: bool = False) -> int:
    """Assert every result is right (or, if allowed, recorded as invalid); the number invalid."""
    invalid = 0
    for c, out in enumerate(convs):
        i = 0
        for t in range(TURNS):
            assert out[i] == f"user says: simulate c{c}t{t}"
            for k, m in enumerate(JUDGES):
                res: LLMResult[Score] = out[i + 1 + k]
                if allow_invalid and res.value is None:
                    assert res.error and "invalid output" in res.error
                    invalid += 1
                    continue
                assert res.error is None, res.error
                assert res.value == truth(f"c{c}t{t}", m)
            i += 1 + len(JUDGES)
    return invalid


def fault_hook(rate: float, seed: int, kinds: tuple[str, ...] = DEFAULT_FAULTS, on_repairs: bool = False) -> Any:
    """Random faults at ``rate``. Content faults (malformed, schema) only hit
    structured calls (a text reply cannot be told wrong), and unless
    ``on_repairs`` never a repair request (one repair per call is the contract,
    so a second bad reply is an invalid output)."""
    rng = random.Random(seed)
    lock = threading.Lock()

    def hook(body: dict[str, Any], n: int) -> str | None:
        with lock:
            if rng.random() >= rate:
                return None
            kind = rng.choice(kinds)
        if kind in ("malformed", "schema"):
            is_repair = REPAIR_MARK in str(body["messages"][-1].get("content"))
            structured = bool(body.get("response_format")) or "JSON schema" in str(body["messages"])
            if not structured or (is_repair and not on_repairs):
                return None
        return kind

    return hook


@pytest.mark.parametrize("transport", ["litellm", "openai_http"])
def test_thirty_percent_faults_every_conversation_correct(tmp_path: Path, transport: str) -> None:
    with FakeLLMServer(
        handler, latency_s=0.005, hang_s=4.0, retry_after_s=0.05, fault_for=fault_hook(0.3, seed=1)
    ) as s:
        cfg = config_for(
            s,
            cache_dir=str(tmp_path / "cache"),
            concurrency=8,
            # generous timeout: a loaded 2-core CI machine must not turn slow replies into faults
            # 8 requests in flight (not the default 4 x concurrency): a reply that outlives the
            # timeout on a loaded machine would inject a fault the client never sees
            llm={"transport": transport, "timeout_s": 2.0, "max_retries": 8, "max_in_flight": 8},
        )
        client = LLMClient.from_config(cfg, backoff_base_s=0.02, backoff_max_s=0.2)
        convs = asyncio.run(run_all(client))
        check(convs)
        injected = s.faults_injected
        for kind in DEFAULT_FAULTS:
            assert injected[kind] > 0, injected
        st = client.stats
        assert st.total().retries >= injected["429"] + injected["500"] + injected["timeout"]
        assert st.roles["judge"].repairs == injected["malformed"] + injected["schema"]
        assert st.total().invalid_outputs == 0 and st.total().errors == 0
        # everything finished is stored: a rerun, faults or not, sends nothing
        n = s.request_count
        check(asyncio.run(run_all(LLMClient.from_config(cfg))))
        assert s.request_count == n


def test_faults_on_repairs_too_never_crash(tmp_path: Path) -> None:
    hook = fault_hook(0.3, seed=3, on_repairs=True)
    # a hang (4 s) outlives the timeout (1 s), which a slow reply on a loaded 2-core machine does not
    # (with 0.3 s, replies queued behind other agents' work timed out too, and once in a while a call
    # ran out of its retries: an error the faults did not inject); 8 requests in flight, as above
    with FakeLLMServer(handler, hang_s=4.0, retry_after_s=0.02, fault_for=hook) as s:
        cfg = config_for(
            s, cache_dir=str(tmp_path / "cache"), concurrency=8,
            llm={"transport": "openai_http", "timeout_s": 1.0, "max_retries": 8, "max_in_flight": 8},
        )
        client = LLMClient.from_config(cfg, backoff_base_s=0.01, backoff_max_s=0.1)
        convs = asyncio.run(run_all(client))
        invalid = check(convs, allow_invalid=True)
        assert client.stats.total().invalid_outputs == invalid
        assert client.stats.total().errors == 0
