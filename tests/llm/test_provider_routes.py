"""``transport = "auto"`` sends the models of OpenAI-compatible providers litellm knows
(groq/, together_ai/, ...) over the lean HTTP path, to the endpoint and with the key litellm
would use, without importing litellm."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from pydantic import BaseModel

from pytest_ragdive.llm import LLMClient
from pytest_ragdive.llm.transport import PROVIDERS, OpenAIHTTPTransport, api_model_name, route_of
from pytest_ragdive.testing import FakeLLMServer, config_for


class Score(BaseModel):
    score: float


def test_a_provider_model_string_reaches_the_fake_server_over_the_lean_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("GROQ_API_BASE", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GROQ_API_KEY", "gsk-test-key-0123456789")
    with FakeLLMServer(lambda body: {"score": 0.5}) as server:
        # no api_base: the provider's base variable points at the fake server, as litellm reads it
        monkeypatch.setenv("GROQ_API_BASE", server.url)
        cfg = config_for(server, model="groq/llama-3.1-8b-instant", cache_dir=str(tmp_path / "c"),
                         llm={"api_base": None, "api_key_env": None})
        assert cfg.llm.transport == "auto" and route_of("auto", cfg.model or "") == ("openai_http", "groq")

        async def run() -> tuple[float | None, list[str]]:
            client = LLMClient.from_config(cfg)
            try:
                r = await client.complete_json("judge", [{"role": "user", "content": "q"}], Score)
                kinds = [type(t).__name__ for t in client._sender._transports.values()]
                return (r.value.score if r.value is not None else None), kinds
            finally:
                await client.aclose()

        score, kinds = asyncio.run(run())
        assert score == 0.5 and kinds == ["OpenAIHTTPTransport"]
        assert server.requests[0]["model"] == "llama-3.1-8b-instant"  # the provider prefix stripped
        assert server.request_headers[0]["authorization"] == "Bearer gsk-test-key-0123456789"


def test_an_explicit_transport_keeps_its_meaning() -> None:
    assert route_of("litellm", "groq/x") == ("litellm", None)
    # openai_http as written: the model name goes to api_base unchanged (a LiteLLM proxy expects it)
    assert route_of("openai_http", "groq/x") == ("openai_http", None)
    assert route_of("auto", "anthropic/claude-x") == ("litellm", None)
    assert route_of("auto", "openai/gpt-x") == ("openai_http", None)
    assert api_model_name("openrouter/vendor/model-x", "openrouter") == "vendor/model-x"
    tr = OpenAIHTTPTransport("http://127.0.0.1:9/v1", 4, "together_ai")
    assert tr.url == "http://127.0.0.1:9/v1/chat/completions" and "TOGETHER_API_KEY" in tr.key_envs


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_each_route_is_where_litellm_sends_that_provider(provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default base URL and the key variable agree with litellm's own resolution."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    litellm = pytest.importorskip("litellm")
    route = PROVIDERS[provider]
    for var in (route.base_env, *route.key_envs):
        monkeypatch.delenv(var, raising=False)
    model, name, key, base = litellm.get_llm_provider(f"{provider}/some-model")
    assert (model, name) == ("some-model", provider)
    assert base in (None, route.default_base)  # None: resolved later, in litellm's provider module
    for i, var in enumerate(route.key_envs):
        monkeypatch.setenv(var, f"key-of-{var}")
        _, _, key, _ = litellm.get_llm_provider(f"{provider}/some-model")
        if i == 0 and base is not None:  # resolved here (openrouter: in its module), from our first name
            assert key == f"key-of-{var}"
        assert key in (None, f"key-of-{var}")
        monkeypatch.delenv(var)
