"""One LLM client for every role (simulator, validator, judge, classifier).

``LLMClient.from_config(cfg)`` builds the client and its cache; every call goes
through the cache (:mod:`pytest_ragdive.cache`), a bounded concurrency
(``cfg.concurrency``), a per-attempt timeout (``cfg.llm.timeout_s``) and
retries with exponential backoff and jitter on 429 (honouring Retry-After),
5xx, timeouts and connection errors (``cfg.llm.max_retries``; then
:class:`LLMCallError`).

Transports (``cfg.llm.transport``)
    ``litellm`` (default): any provider litellm knows. litellm is imported on
    the first call that needs the network (never at module import, never on a
    replay from the cache), with ``LITELLM_LOCAL_MODEL_COST_MAP=True`` so that
    nothing is fetched at import; its own retries are switched off so ours are
    the only ones. ``openai_http``: a lean aiohttp client posting to
    ``{api_base}/chat/completions`` of an OpenAI-compatible server (vLLM,
    Ollama, llama.cpp, OpenAI itself when api_base is unset), with far less
    client CPU per call; a leading ``openai/`` (or ``hosted_vllm/``) provider
    prefix is stripped from the model name. Both give the same results and
    share cache entries.

Structured output (``cfg.llm.structured_output``)
    ``json_schema`` sends the pydantic model's JSON schema as the OpenAI
    ``response_format`` (``strict: false``); ``json_object`` asks for JSON mode
    and puts the schema into the prompt; ``prompt`` puts the schema into the
    prompt only; ``auto`` means json_schema when litellm reports
    ``supports_response_schema(model)`` and json_object otherwise with the
    litellm transport, and json_schema with the openai_http transport (vLLM,
    llama.cpp, Ollama and OpenAI accept it); if a json_schema request chosen by
    ``auto`` is refused with HTTP 400, the client falls back to json_object for
    that model. ```json fences are stripped before parsing. Invalid JSON or a
    schema mismatch gets one repair call quoting the validation error; if that
    fails too the result has ``value=None`` and ``error`` set and
    ``stats.invalid_outputs`` grows: never a crash.

Keys
    ``api_key_env`` names the environment variable read at call time; the key
    is never stored (not in the cache, stats, results, exception messages or
    warnings: messages are scrubbed of it).

Accounting and budget
    ``client.stats`` (:class:`LLMStats`) counts per role and model: calls,
    HTTP requests, retries, cache hits and misses, tokens, cost in USD where
    litellm knows the price (``None`` where no request had a known price),
    repairs and invalid outputs; ``LLMStats.merge`` adds another process's
    stats (xdist). With ``max_cost`` set, a call that needs the network raises
    :class:`BudgetExceeded` once this process's known spend reaches it (cache
    hits stay free and allowed).

Event loops
    The semaphore, the in-flight table and the HTTP session belong to the
    running loop and are rebuilt when the client is used from a new loop
    (each ``asyncio.run``). ``await client.aclose()`` (or ``async with``)
    closes the session; when nobody does, ``asyncio.run`` closes it at the
    end of its loop (the client parks an async generator there for that).
    Identical requests in flight at once share one request (in this
    process, and across processes through the cache's claims).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import urllib.parse
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from .cache import CachedResponse, LLMCache, cache_key, canonical_json
from .errors import BudgetExceeded, CacheMissError, LLMCallError, LLMConfigError, LLMError
from .llm_stats import ROLES, LLMStats, RoleStats, UsageStats
from .llm_transport import (
    MAX_RETRY_AFTER_S,
    _Fatal,
    _LiteLLMTransport,
    _OpenAIHTTPTransport,
    _Request,
    _Transient,
)

if TYPE_CHECKING:
    from .config import RagdiveConfig

__all__ = [
    "ROLES",
    "BudgetExceeded",
    "CacheMissError",
    "LLMCallError",
    "LLMClient",
    "LLMConfigError",
    "LLMError",
    "LLMResult",
    "LLMStats",
    "RoleStats",
    "UsageStats",
    "parse_json_output",
    "strip_fences",
]

DEFAULT_BACKOFF_BASE_S = 0.5
DEFAULT_BACKOFF_MAX_S = 30.0
CLAIM_POLL_S = 0.05

JSON_INSTRUCTIONS = (
    "Reply with one JSON object and nothing else: no prose, no code fences. "
    "It must conform to this JSON schema:\n{schema}"
)
REPAIR_INSTRUCTIONS = (
    "Your previous reply could not be used: {error}\n"
    "Reply again with only one JSON object (no prose, no code fences) that conforms to this JSON schema:\n{schema}"
)

T = TypeVar("T", bound=BaseModel)
V = TypeVar("V")
R = TypeVar("R")


# --------------------------------------------------------------------------
# errors


# --------------------------------------------------------------------------
# results and parsing


@dataclass
class LLMResult(Generic[V]):
    """The outcome of one complete_json / complete call."""

    value: V | None
    raw: str
    error: str | None = None
    cached: bool = False  # every call behind this result came from the cache
    model: str = ""
    role: str = ""
    prompt_id: str | None = None
    repaired: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None

    @property
    def ok(self) -> bool:
        return self.value is not None


_FENCE_RE = re.compile(r"```[ \t]*(?:json|JSON|json5)?[ \t]*\n?(.*?)\n?[ \t]*```", re.DOTALL)


def strip_fences(text: str) -> str:
    """The JSON inside a ```json fence (the first one), else the text stripped."""
    s = text.strip()
    m = _FENCE_RE.search(s)
    if m:
        return m.group(1).strip()
    if s.startswith("```"):  # an unclosed fence
        s = s[3:]
        if s[:4].lower() == "json":
            s = s[4:]
    return s.strip()


def _validation_summary(e: ValidationError, limit: int = 5) -> str:
    parts = []
    for err in e.errors()[:limit]:
        loc = ".".join(str(x) for x in err.get("loc", ())) or "(root)"
        parts.append(f"{loc}: {err.get('msg')}")
    more = f" (+{e.error_count() - limit} more)" if e.error_count() > limit else ""
    return "schema mismatch: " + "; ".join(parts) + more


def parse_json_output(text: str, schema: type[T]) -> tuple[T | None, str | None]:
    """(instance, None) or (None, a one-line reason) for a model reply."""
    body = strip_fences(text)
    try:
        data = json.loads(body)
    except json.JSONDecodeError as e:
        # a JSON object wrapped in prose
        i, j = body.find("{"), body.rfind("}")
        data = None
        if 0 <= i < j:
            try:
                data = json.loads(body[i : j + 1])
            except ValueError:
                data = None
        if data is None:
            snippet = body[:80].replace("\n", " ")
            return None, f"not valid JSON ({e.msg} at line {e.lineno} column {e.colno}); reply began: {snippet!r}"
    try:
        return schema.model_validate(data), None
    except ValidationError as e:
        return None, _validation_summary(e)


# --------------------------------------------------------------------------
# --------------------------------------------------------------------------
# the client


def _with_instructions(messages: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """Append ``text`` to the first system message (or add one at the front)."""
    out = [dict(m) for m in messages]
    for m in out:
        if m.get("role") == "system" and isinstance(m.get("content"), str):
            m["content"] = f"{m['content']}\n\n{text}"
            return out
    return [{"role": "system", "content": text}, *out]


def _schema_name(schema: type[BaseModel]) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]", "_", schema.__name__)[:64]
    return name or "response"


class LLMClient:
    """The client every LLM-driven part uses. See the module docstring."""

    def __init__(
        self,
        cfg: RagdiveConfig,
        cache: LLMCache | None = None,
        *,
        backoff_base_s: float = DEFAULT_BACKOFF_BASE_S,
        backoff_max_s: float = DEFAULT_BACKOFF_MAX_S,
        max_retry_after_s: float = MAX_RETRY_AFTER_S,
        rng: random.Random | None = None,
        io_threads: bool = True,
    ) -> None:
        self.cfg = cfg
        self.io_threads = io_threads
        self.cache = cache
        self.record_mode = cfg.record_mode
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.max_retry_after_s = max_retry_after_s
        self._rng = rng or random.Random()
        self._stats = LLMStats()
        self._transport: _LiteLLMTransport | _OpenAIHTTPTransport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sem: asyncio.Semaphore | None = None
        self._inflight: dict[str, asyncio.Future[CachedResponse]] = {}
        self._no_schema: set[str] = set()  # models that refused json_schema (auto fallback)
        self._mode_cache: dict[str, str] = {}
        self._lifetime: AsyncIterator[None] | None = None

    @classmethod
    def from_config(cls, cfg: RagdiveConfig, **kwargs: Any) -> LLMClient:
        """A client with the cache of ``cfg`` (none when record_mode is off)."""
        return cls(cfg, LLMCache.from_config(cfg), **kwargs)

    # -- settings ----------------------------------------------------------
    def model_for(self, role: str) -> str:
        if role not in ROLES:
            raise LLMConfigError(f"unknown LLM role {role!r}, expected one of {', '.join(ROLES)}")
        model = self.cfg.role_model(role)
        if not model:
            raise LLMConfigError(
                f"no model for the {role} role: set --ragdive-model (or 'model'), or llm.{role}.model in the config"
            )
        return model

    def _sampling(self, role: str, seed: int | None) -> tuple[float, int | None]:
        rm = getattr(self.cfg.llm, role)
        return float(rm.temperature), (seed if seed is not None else rm.seed)

    def _api_key(self) -> str | None:
        env = self.cfg.llm.api_key_env
        if not env:
            # litellm finds the provider's usual variable itself; the lean HTTP
            # path honours the OpenAI one as litellm does
            if self.cfg.llm.transport == "openai_http":
                return os.environ.get("OPENAI_API_KEY") or None
            return None
        key = os.environ.get(env)
        if not key:
            raise LLMConfigError(f"environment variable {env} (llm.api_key_env) is not set or empty")
        return key

    def _redact(self, text: str) -> str:
        """``text`` without the API key or a password in api_base."""
        env = self.cfg.llm.api_key_env
        secrets = [os.environ.get(env) or ""] if env else []
        if self.cfg.llm.api_base:
            try:
                secrets.append(urllib.parse.urlsplit(self.cfg.llm.api_base).password or "")
            except ValueError:
                pass
        for secret in secrets:
            if len(secret) >= 4:
                text = text.replace(secret, "***")
        return text

    @property
    def stats(self) -> LLMStats:
        """Accounting so far (the cache counters included)."""
        if self.cache is not None:
            self._stats.cache = self.cache.stats
        return self._stats

    @property
    def transport_name(self) -> str:
        return self.cfg.llm.transport

    # -- loop-bound state --------------------------------------------------
    async def _bind_loop(self) -> asyncio.AbstractEventLoop:
        """Loop-bound state (semaphore, in-flight table, HTTP session) for the running loop."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop = loop
            self._sem = asyncio.Semaphore(self.cfg.concurrency)
            self._inflight = {}
            if self._transport is not None:
                self._transport.reset_loop()
            # an async generator parked at its yield: asyncio.run() (loop.shutdown_asyncgens)
            # finalizes it before closing the loop, which closes our HTTP session in its own
            # loop even when nobody calls aclose()
            self._lifetime = self._loop_lifetime()
            await self._lifetime.__anext__()
        return loop

    async def _loop_lifetime(self) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if self._transport is not None:
                try:
                    await self._transport.aclose()
                except Exception:
                    pass

    def _get_transport(self) -> _LiteLLMTransport | _OpenAIHTTPTransport:
        if self._transport is None:
            if self.cfg.llm.transport == "openai_http":
                self._transport = _OpenAIHTTPTransport(self.cfg.llm.api_base, self.cfg.concurrency)
            else:
                self._transport = _LiteLLMTransport(self.cfg.llm.api_base)
        return self._transport

    async def aclose(self) -> None:
        """Close the HTTP session and the cache."""
        if self._transport is not None:
            await self._transport.aclose()
        self.close()

    def close(self) -> None:
        """Close the cache (the HTTP session needs :meth:`aclose`)."""
        if self.cache is not None:
            self.cache.close()

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- public calls ------------------------------------------------------
    async def complete_json(
        self,
        role: str,
        messages: list[dict[str, Any]],
        schema: type[T],
        *,
        prompt_id: str | None = None,
        prompt_version: str | None = None,
        model: str | None = None,
        seed: int | None = None,
    ) -> LLMResult[T]:
        """A reply parsed into ``schema``; ``value`` None (and ``error`` set) when
        invalid after one repair call."""
        model = model or self.model_for(role)
        if role not in ROLES:
            raise LLMConfigError(f"unknown LLM role {role!r}, expected one of {', '.join(ROLES)}")
        temperature, seed = self._sampling(role, seed)
        js = schema.model_json_schema()
        configured = self.cfg.llm.structured_output
        msgs = [dict(m) for m in messages]
        common: dict[str, Any] = {
            "role": role,
            "model": model,
            "temperature": temperature,
            "seed": seed,
            "prompt_id": prompt_id,
            "prompt_version": prompt_version,
        }
        self._stats.bump(role, model, calls=1)
        r1, c1 = await self._complete(msgs, schema=schema, json_schema=js, configured=configured, **common)
        tokens = (r1.prompt_tokens if not c1 else 0, r1.completion_tokens if not c1 else 0)
        value, err = parse_json_output(r1.content, schema)
        if value is not None:
            return LLMResult(
                value,
                r1.content,
                None,
                c1,
                r1.model or model,
                role,
                prompt_id,
                False,
                *tokens,
                None if c1 else r1.cost_usd,
            )
        # one repair call quoting the error
        repair_msgs = [
            *msgs,
            {"role": "assistant", "content": r1.content},
            {
                "role": "user",
                "content": REPAIR_INSTRUCTIONS.format(error=err, schema=canonical_json(js)),
            },
        ]
        self._stats.bump(role, model, calls=1, repairs=1)
        r2, c2 = await self._complete(
            repair_msgs, schema=schema, json_schema=js, configured=configured, repair=True, **common
        )
        value, err2 = parse_json_output(r2.content, schema)
        costs = [r.cost_usd for r, c in ((r1, c1), (r2, c2)) if not c and r.cost_usd is not None]
        pt = tokens[0] + (r2.prompt_tokens if not c2 else 0)
        ct = tokens[1] + (r2.completion_tokens if not c2 else 0)
        error = None
        if value is None:
            self._stats.bump(role, model, invalid_outputs=1)
            error = f"invalid output after one repair: {err2} (first reply: {err})"
        return LLMResult(
            value,
            r2.content,
            error,
            c1 and c2,
            r2.model or model,
            role,
            prompt_id,
            True,
            pt,
            ct,
            sum(costs) if costs else None,
        )

    async def complete(
        self,
        role: str,
        messages: list[dict[str, Any]],
        *,
        prompt_id: str | None = None,
        prompt_version: str | None = None,
        model: str | None = None,
        seed: int | None = None,
    ) -> LLMResult[str]:
        """A plain text reply, with its metadata."""
        model = model or self.model_for(role)
        if role not in ROLES:
            raise LLMConfigError(f"unknown LLM role {role!r}, expected one of {', '.join(ROLES)}")
        temperature, seed = self._sampling(role, seed)
        self._stats.bump(role, model, calls=1)
        r, cached = await self._complete(
            [dict(m) for m in messages],
            role=role,
            model=model,
            temperature=temperature,
            seed=seed,
            prompt_id=prompt_id,
            prompt_version=prompt_version,
        )
        return LLMResult(
            r.content,
            r.content,
            None,
            cached,
            r.model or model,
            role,
            prompt_id,
            False,
            0 if cached else r.prompt_tokens,
            0 if cached else r.completion_tokens,
            None if cached else r.cost_usd,
        )

    async def complete_text(
        self,
        role: str,
        messages: list[dict[str, Any]],
        *,
        prompt_id: str | None = None,
        prompt_version: str | None = None,
        model: str | None = None,
        seed: int | None = None,
    ) -> str:
        """The text of a reply."""
        res = await self.complete(
            role, messages, prompt_id=prompt_id, prompt_version=prompt_version, model=model, seed=seed
        )
        return res.raw

    # -- the call path -----------------------------------------------------
    async def _complete(
        self,
        messages: list[dict[str, Any]],
        *,
        role: str,
        model: str,
        temperature: float,
        seed: int | None,
        prompt_id: str | None,
        prompt_version: str | None,
        schema: type[BaseModel] | None = None,
        json_schema: dict[str, Any] | None = None,
        configured: str | None = None,
        repair: bool = False,
    ) -> tuple[CachedResponse, bool]:
        """(response, from_cache) for one logical call: cache, single flight, fetch, store."""
        await self._bind_loop()
        key = cache_key(
            model=model,
            messages=messages,
            temperature=temperature,
            seed=seed,
            schema=json_schema,
            structured=configured,
            prompt_id=prompt_id,
            prompt_version=prompt_version,
            extra={"repair": 1} if repair else None,
        )
        # the same request already in flight in this process: share its answer
        fut = self._inflight.get(key)
        if fut is not None:
            try:
                resp = await asyncio.shield(fut)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if fut.cancelled() and task is not None and not task.cancelling():
                    # the caller we waited for was cancelled, we were not: fetch it ourselves
                    return await self._complete(
                        messages, role=role, model=model, temperature=temperature, seed=seed,
                        prompt_id=prompt_id, prompt_version=prompt_version, schema=schema,
                        json_schema=json_schema, configured=configured, repair=repair,
                    )  # fmt: skip
                raise
            self._stats.bump(role, model, cache_hits=1)
            if self.cache is not None:
                self.cache.stats.hits += 1
            return resp, True

        cache = self.cache
        if cache is not None and cache.reads:
            hit = cache.peek(key)
            if hit is not None:
                cache.stats.hits += 1
                self._stats.bump(role, model, cache_hits=1)
                return hit, True
        if self.record_mode == "none":
            if cache is not None:
                cache.stats.misses += 1
            self._stats.bump(role, model, cache_misses=1)
            raise CacheMissError(role, model, prompt_id, key)

        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self._inflight[key] = fut
        try:
            resp, cached = await self._claim_and_fetch(
                key, messages, role=role, model=model, temperature=temperature, seed=seed,
                schema=schema, json_schema=json_schema, configured=configured,
            )  # fmt: skip
            fut.set_result(resp)
            return resp, cached
        except BaseException as e:
            if not fut.done():
                if isinstance(e, asyncio.CancelledError):
                    fut.cancel()
                else:
                    fut.set_exception(e)
            raise
        finally:
            if self._inflight.get(key) is fut:
                del self._inflight[key]
            if fut.done() and not fut.cancelled():
                fut.exception()  # mark retrieved: no "never retrieved" noise

    async def _claim_and_fetch(
        self,
        key: str,
        messages: list[dict[str, Any]],
        *,
        role: str,
        model: str,
        temperature: float,
        seed: int | None,
        schema: type[BaseModel] | None,
        json_schema: dict[str, Any] | None,
        configured: str | None,
    ) -> tuple[CachedResponse, bool]:
        cache = self.cache
        coordinate = cache is not None and cache.record_mode == "new_episodes"
        if coordinate:
            assert cache is not None
            llm = self.cfg.llm
            ttl = llm.timeout_s * (llm.max_retries + 1) + self.backoff_max_s * llm.max_retries + 30.0
            waited = False
            while not await self._io(cache.claim, key, ttl):
                # another process is fetching this very request: wait for its answer
                waited = True
                await asyncio.sleep(CLAIM_POLL_S)
                hit = cache.peek(key)
                if hit is not None:
                    cache.stats.hits += 1
                    cache.stats.waits += 1
                    self._stats.bump(role, model, cache_hits=1)
                    return hit, True
            # double check: another process may have stored it between our lookup and our claim
            hit = cache.peek(key)
            if hit is not None:
                cache.release(key)
                cache.stats.hits += 1
                if waited:
                    cache.stats.waits += 1
                self._stats.bump(role, model, cache_hits=1)
                return hit, True
        released = False
        try:
            if cache is not None:
                cache.stats.misses += 1
            self._stats.bump(role, model, cache_misses=1)
            self._check_budget()
            resp = await self._fetch(
                messages, role=role, model=model, temperature=temperature, seed=seed,
                schema=schema, json_schema=json_schema, configured=configured,
            )  # fmt: skip
            if cache is not None:
                # stored at once (an interrupted run repeats no finished call), and our claim dropped
                released = await self._io(cache.set, key, resp, release=coordinate)
            return resp, False
        finally:
            if coordinate and not released:
                assert cache is not None
                cache.release(key)

    async def _io(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        """A cache write: in a worker thread when ``io_threads`` (a busy SQLite
        lock held by another process then never stalls the event loop)."""
        if self.io_threads:
            return await asyncio.to_thread(fn, *args, **kwargs)
        return fn(*args, **kwargs)

    def _check_budget(self) -> None:
        max_cost = self.cfg.max_cost
        if max_cost is None:
            return
        spent = self._stats.spent_usd()
        if spent >= max_cost:
            raise BudgetExceeded(spent, max_cost, self._stats.spend_breakdown())

    def _resolve_mode(self, model: str, configured: str, transport: Any) -> str:
        if configured != "auto":
            return configured
        if model in self._no_schema:
            return "json_object"
        mode = self._mode_cache.get(model)
        if mode is None:
            mode = "json_schema" if transport.supports_schema(model) else "json_object"
            self._mode_cache[model] = mode
        return mode

    def _build_request(
        self,
        messages: list[dict[str, Any]],
        *,
        mode: str | None,
        temperature: float,
        seed: int | None,
        schema: type[BaseModel] | None,
        json_schema: dict[str, Any] | None,
    ) -> _Request:
        params: dict[str, Any] = {"temperature": temperature}
        if seed is not None:
            params["seed"] = seed
        msgs = messages
        if mode is not None and json_schema is not None and schema is not None:
            if mode == "json_schema":
                params["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": _schema_name(schema), "schema": json_schema, "strict": False},
                }
            else:
                msgs = _with_instructions(messages, JSON_INSTRUCTIONS.format(schema=canonical_json(json_schema)))
                if mode == "json_object":
                    params["response_format"] = {"type": "json_object"}
        return _Request(msgs, params, mode)

    async def _fetch(
        self,
        messages: list[dict[str, Any]],
        *,
        role: str,
        model: str,
        temperature: float,
        seed: int | None,
        schema: type[BaseModel] | None,
        json_schema: dict[str, Any] | None,
        configured: str | None,
    ) -> CachedResponse:
        """Send with retries; account requests, tokens and cost."""
        api_key = self._api_key()
        transport = self._get_transport()
        mode = self._resolve_mode(model, configured, transport) if json_schema is not None and configured else None
        req = self._build_request(
            messages, mode=mode, temperature=temperature, seed=seed, schema=schema, json_schema=json_schema
        )
        llm = self.cfg.llm
        timeout_s = llm.timeout_s
        sem = self._sem
        assert sem is not None
        attempts = 0
        fell_back = False
        while True:
            attempts += 1
            err: _Transient | None = None
            async with sem:
                self._stats.bump(role, model, requests=1)
                try:
                    async with asyncio.timeout(timeout_s):
                        resp = await transport.send(model, req, api_key, timeout_s)
                except TimeoutError:
                    err = _Transient(f"timed out after {timeout_s:g} s")
                except _Transient as e:
                    err = e
                except _Fatal as e:
                    if e.status == 400 and configured == "auto" and req.mode == "json_schema" and not fell_back:
                        # the server refuses json_schema: JSON mode for this model from now on
                        self._no_schema.add(model)
                        fell_back = True
                        req = self._build_request(
                            messages, mode="json_object", temperature=temperature, seed=seed,
                            schema=schema, json_schema=json_schema,
                        )  # fmt: skip
                        attempts -= 1
                        continue
                    self._stats.bump(role, model, errors=1)
                    raise LLMCallError(
                        self._redact(f"LLM call failed for role {role}, model {model} ({self.transport_name}): {e}"),
                        role=role,
                        model=model,
                        attempts=attempts,
                        status=e.status,
                    ) from None
            if err is None:
                cost = resp.cost_usd
                self._stats.bump(
                    role,
                    model,
                    prompt_tokens=resp.prompt_tokens,
                    completion_tokens=resp.completion_tokens,
                    cost_usd=cost,
                    unpriced_requests=0 if cost is not None else 1,
                )
                return resp
            if attempts > llm.max_retries:
                self._stats.bump(role, model, errors=1)
                raise LLMCallError(
                    self._redact(
                        f"LLM call failed for role {role}, model {model} ({self.transport_name}) "
                        f"after {attempts} attempts: {err}"
                    ),
                    role=role,
                    model=model,
                    attempts=attempts,
                    status=err.status,
                )
            self._stats.bump(role, model, retries=1)
            await asyncio.sleep(self._backoff(attempts, err.retry_after))

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        """Delay before retry number ``attempt`` (1-based): Retry-After when given
        (capped), else exponential with full jitter around the base."""
        if retry_after is not None:
            return min(retry_after, self.max_retry_after_s) + self._rng.uniform(0, 0.1 * max(retry_after, 0.01))
        base = min(self.backoff_max_s, self.backoff_base_s * (2 ** (attempt - 1)))
        return base * self._rng.uniform(0.5, 1.5)
