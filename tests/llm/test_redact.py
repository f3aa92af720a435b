"""Issue 22 (1), the unit side: what the one redaction point on the way in scrubs
(every secret the run knows, in its encoded forms; nothing by pattern), that it
costs nothing when nothing matches, and that an LLM reply and a target reply are
scrubbed before anything reads them (a cache hit an older version stored too)."""

from __future__ import annotations

import asyncio
import json
import timeit

import pytest
from pydantic import BaseModel

from pytest_ragdive.core.config import RagdiveConfig
from pytest_ragdive.core.config_models import HttpTargetConfig, LLMConfig
from pytest_ragdive.core.records import Context, TargetResponse
from pytest_ragdive.llm import LLMClient
from pytest_ragdive.llm.cache import LLMCache
from pytest_ragdive.llm.keys import CachedResponse
from pytest_ragdive.llm.redact import MASK, Secrets, run_secrets, target_secrets
from pytest_ragdive.run.target import as_async
from pytest_ragdive.testing import FakeLLMServer, config_for

KEY = "sk-unit-redact-0123456789"


def test_scrub_masks_every_known_secret_and_its_encoded_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY_VAR", KEY)
    monkeypatch.setenv("PLAIN_VALUE", "extra-secret/with+slash")
    monkeypatch.setenv("SHORT_ONE", "abc")
    s = Secrets(LLMConfig(api_key_env="MY_KEY_VAR"), redact_env=["PLAIN_VALUE", "SHORT_ONE"])
    text = f'{KEY} "extra-secret\\/with+slash" extra-secret%2Fwith%2Bslash extra-secret/with+slash abc'
    assert s.scrub(text) == f'{MASK} "{MASK}" {MASK} {MASK} abc'  # a 3-character value would blank words: left
    # only known values: a reply's own words are not rewritten by a pattern (redact() does that for messages)
    words = "the api key: alphabet; token = seventeen; Bearer abcdefghij"
    assert s.scrub(words) == words
    assert "Bearer ***" in s.redact(words)


def test_an_http_targets_credentials_are_known_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAT_TOKEN", "chat-token-value-42")
    settings = HttpTargetConfig(
        url="https://bot:pa55word-long@chat.example/v1?sig=query-secret-9",
        headers={"Authorization": "Bearer ${CHAT_TOKEN}", "X-Team": "team-key-abcdefgh", "Accept": "application/json"},
    )
    got = set(target_secrets(settings))
    assert {"chat-token-value-42", "Bearer chat-token-value-42", "team-key-abcdefgh", "pa55word-long", "query-secret-9"} <= got
    assert "application/json" not in got
    cfg = RagdiveConfig.model_validate({"target": settings.model_dump() | {"headers": settings.headers}})
    assert run_secrets(cfg).scrub("x chat-token-value-42 y team-key-abcdefgh") == "x *** y ***"


def test_scrubbing_is_cheap_and_a_clean_reply_is_the_same_object(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY_VAR", KEY)
    s = Secrets(LLMConfig(api_key_env="MY_KEY_VAR"))
    reply = CachedResponse(content=json.dumps({"reason": "a long enough judge reason " * 20}), model="m")
    assert s.scrub_reply(reply) is reply
    resp = TargetResponse(answer="an answer " * 30, contexts=[Context(id="c", text="chunk " * 50)])
    assert s.scrub_target(resp) is resp
    per_call = min(timeit.repeat(lambda: s.scrub_reply(reply), number=2000, repeat=3)) / 2000
    assert per_call < 50e-6, per_call  # a few substring tests; well under a request's own cost


def test_a_scrubbed_reply_is_parsed_from_the_scrubbed_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY_VAR", KEY)
    s = Secrets(LLMConfig(api_key_env="MY_KEY_VAR"))
    dirty = CachedResponse(content=json.dumps({"reason": f"header was Bearer {KEY}"}), model="m")
    dirty._parsed = ("schema", "a parse of the dirty text")
    clean = s.scrub_reply(dirty)
    assert KEY not in clean.content and f"Bearer {MASK}" in clean.content and clean._parsed is None


class Reason(BaseModel):
    reason: str


def test_llm_replies_and_old_cache_hits_are_scrubbed_before_use(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_ragdive.testing import FAKE_KEY_ENV

    monkeypatch.setenv(FAKE_KEY_ENV, KEY)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeLLMServer(lambda body: {"reason": f"you sent Authorization: Bearer {KEY}"}) as server:
        cfg = config_for(server, cache_dir=str(tmp_path / "new"))

        async def ask(q: str, cfg: RagdiveConfig, secrets: Secrets | None = None) -> tuple[str, bool]:
            async with LLMClient(cfg, LLMCache.from_config(cfg), secrets=secrets) as client:
                res = await client.complete_json("judge", [{"role": "user", "content": q}], Reason)
                assert res.value is not None
                return res.value.reason, res.cached

        reason, cached = asyncio.run(ask("first", cfg))
        assert reason == f"you sent Authorization: Bearer {MASK}" and not cached
        assert asyncio.run(ask("first", cfg)) == (reason, True)  # replayed: the stored reply is the scrubbed one
        stored = b"".join(p.read_bytes() for p in (tmp_path / "new").rglob("*") if p.is_file())
        assert stored and KEY.encode() not in stored

        # a cache an older version wrote, the key in it (here: a client that knew no secret)
        old = config_for(server, cache_dir=str(tmp_path / "old"))
        assert asyncio.run(ask("second", old, Secrets(LLMConfig(transport="openai_http"))))[0].endswith(KEY)
        assert asyncio.run(ask("second", old)) == (reason, True)  # the hit is scrubbed before it is parsed


def test_a_targets_reply_is_scrubbed_in_the_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    class Bot:
        def ragdive_secrets(self) -> list[str]:  # as an HTTP target says what it sends
            return ["header-token-7777777"]

        def __call__(self, messages: list[dict[str, str]]) -> TargetResponse:
            return TargetResponse(
                answer=f"sent header-token-7777777 and {KEY}",
                contexts=[Context(id="c", text=f"chunk {KEY}")], citations=[KEY],
            )

    monkeypatch.setenv("MY_KEY_VAR", KEY)
    secrets = Secrets(LLMConfig(api_key_env="MY_KEY_VAR"))
    resp = asyncio.run(as_async(Bot(), 5, secrets=secrets)([{"role": "user", "content": "hi"}]))
    assert resp.answer == "sent *** and ***" and resp.contexts[0].text == "chunk ***" and resp.citations == [MASK]
