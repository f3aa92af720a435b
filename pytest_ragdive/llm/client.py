"""The LLM client every role uses (simulator, validator, judge, classifier).

``LLMClient.from_config(cfg)`` builds the client and its cache; every call goes
through the cache (:mod:`.cache`), in-process and cross-process coalescing
(:mod:`.coalesce`), a bounded concurrency (``cfg.concurrency``) and retries
with a per-attempt timeout (:mod:`.retry`; ``cfg.llm.timeout_s``,
``cfg.llm.max_retries``; then :class:`LLMCallError`). Structured output and
its one repair call are :mod:`.structured`; transports (litellm, or the lean
``openai_http`` path) are :mod:`.transport`; accounting is :mod:`.stats`.

Keys
    ``api_key_env`` names the environment variable read at call time; the key
    is never stored (not in the cache, stats, results, exception messages or
    warnings: messages are scrubbed of it).

Accounting and budget
    ``client.stats`` (:class:`LLMStats`) counts per role and model. With
    ``max_cost`` set, a call that needs the network raises
    :class:`BudgetExceeded` once this process's known spend reaches it (cache
    hits stay free and allowed).

Event loops
    The semaphore, the in-flight table and the HTTP session belong to the
    running loop and are rebuilt when the client is used from a new loop
    (each ``asyncio.run``). ``await client.aclose()`` (or ``async with``)
    closes the session; when nobody does, ``asyncio.run`` closes it at the
    end of its loop (the client parks an async generator there for that).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel

from ..errors import (
    BudgetExceeded,
    CacheMissError,
    FatalTransportError,
    LLMCallError,
    LLMConfigError,
)
from .cache import CachedResponse, LLMCache, cache_key
from .coalesce import SingleFlight, claim_or_wait
from .redact import Secrets
from .retry import DEFAULT_BACKOFF_BASE_S, DEFAULT_BACKOFF_MAX_S, Exhausted, RetryPolicy, Tries
from .stats import ROLES, LLMStats
from .structured import ModeChooser, build_request, parse_json_output, repair_messages
from .transport import MAX_RETRY_AFTER_S, Transport, make_transport

if TYPE_CHECKING:
    from ..config import RagdiveConfig

__all__ = ["LLMClient", "LLMResult"]

T = TypeVar("T", bound=BaseModel)
V = TypeVar("V")
R = TypeVar("R")


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
        self.retry = RetryPolicy(
            max_retries=cfg.llm.max_retries,
            timeout_s=cfg.llm.timeout_s,
            backoff_base_s=backoff_base_s,
            backoff_max_s=backoff_max_s,
            max_retry_after_s=max_retry_after_s,
            rng=rng or random.Random(),
        )
        self.secrets = Secrets(cfg.llm)
        self._stats = LLMStats()
        self._transport: Transport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sem: asyncio.Semaphore | None = None
        self._flight: SingleFlight[tuple[CachedResponse, bool]] = SingleFlight()
        self._modes = ModeChooser()
        self._lifetime: AsyncIterator[None] | None = None

    @classmethod
    def from_config(cls, cfg: RagdiveConfig, **kwargs: Any) -> LLMClient:
        """A client with the cache of ``cfg`` (none when record_mode is off)."""
        return cls(cfg, LLMCache.from_config(cfg), **kwargs)

    # -- settings ----------------------------------------------------------
    def model_for(self, role: str) -> str:
        _check_role(role)
        model = self.cfg.role_model(role)
        if not model:
            raise LLMConfigError(
                f"no model for the {role} role: set --ragdive-model (or 'model'), or llm.{role}.model in the config"
            )
        return model

    def _sampling(self, role: str, seed: int | None) -> tuple[float, int | None]:
        rm = getattr(self.cfg.llm, role)
        return float(rm.temperature), (seed if seed is not None else rm.seed)

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
            self._flight.reset()
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

    def _get_transport(self) -> Transport:
        if self._transport is None:
            self._transport = make_transport(self.cfg.llm.transport, self.cfg.llm.api_base, self.cfg.concurrency)
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
        _check_role(role)
        temperature, seed = self._sampling(role, seed)
        js = schema.model_json_schema()
        configured = self.cfg.llm.structured_output
        msgs = [dict(m) for m in messages]
        call = _Call(role, model, temperature, seed, prompt_id, prompt_version, schema, js, configured)
        self._stats.bump(role, model, calls=1)
        r1, c1 = await self._complete(msgs, call)
        tokens = (r1.prompt_tokens if not c1 else 0, r1.completion_tokens if not c1 else 0)
        value, err = parse_json_output(r1.content, schema)
        if value is not None:
            cost = None if c1 else r1.cost_usd
            return LLMResult(value, r1.content, None, c1, r1.model or model, role, prompt_id, False, *tokens, cost)
        # one repair call quoting the error
        assert err is not None
        self._stats.bump(role, model, calls=1, repairs=1)
        r2, c2 = await self._complete(repair_messages(msgs, r1.content, err, js), call, repair=True)
        value, err2 = parse_json_output(r2.content, schema)
        costs = [r.cost_usd for r, c in ((r1, c1), (r2, c2)) if not c and r.cost_usd is not None]
        pt = tokens[0] + (r2.prompt_tokens if not c2 else 0)
        ct = tokens[1] + (r2.completion_tokens if not c2 else 0)
        error = None
        if value is None:
            self._stats.bump(role, model, invalid_outputs=1)
            error = f"invalid output after one repair: {err2} (first reply: {err})"
        cost = sum(costs) if costs else None
        return LLMResult(value, r2.content, error, c1 and c2, r2.model or model, role, prompt_id, True, pt, ct, cost)

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
        _check_role(role)
        temperature, seed = self._sampling(role, seed)
        self._stats.bump(role, model, calls=1)
        call = _Call(role, model, temperature, seed, prompt_id, prompt_version)
        r, cached = await self._complete([dict(m) for m in messages], call)
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
        self, messages: list[dict[str, Any]], call: _Call, *, repair: bool = False
    ) -> tuple[CachedResponse, bool]:
        """(response, from_cache) for one logical call: cache, single flight, fetch, store."""
        await self._bind_loop()
        key = cache_key(
            model=call.model,
            messages=messages,
            temperature=call.temperature,
            seed=call.seed,
            schema=call.json_schema,
            structured=call.configured,
            prompt_id=call.prompt_id,
            prompt_version=call.prompt_version,
            extra={"repair": 1} if repair else None,
        )
        (resp, cached), shared = await self._flight.run(key, lambda: self._lead(key, messages, call))
        if shared:
            self._hit(call)
        return resp, cached or shared

    def _hit(self, call: _Call, *, waited: bool = False) -> None:
        if self.cache is not None:
            self.cache.stats.hits += 1
            if waited:
                self.cache.stats.waits += 1
        self._stats.bump(call.role, call.model, cache_hits=1)

    async def _lead(self, key: str, messages: list[dict[str, Any]], call: _Call) -> tuple[CachedResponse, bool]:
        """The first caller of a request in this process: cache, claim, fetch, store."""
        cache = self.cache
        if cache is not None and cache.reads:
            hit = cache.peek(key)
            if hit is not None:
                self._hit(call)
                return hit, True
        if self.record_mode.replay_only:
            if cache is not None:
                cache.stats.misses += 1
            self._stats.bump(call.role, call.model, cache_misses=1)
            raise CacheMissError(call.role, call.model, call.prompt_id, key)
        coordinate = cache is not None and cache.record_mode.coordinates
        if coordinate:
            assert cache is not None
            ttl = self.retry.worst_case_s() + 30.0
            hit, waited = await claim_or_wait(cache, key, ttl, self._io)
            if hit is not None:
                self._hit(call, waited=waited)
                return hit, True
        released = False
        try:
            if cache is not None:
                cache.stats.misses += 1
            self._stats.bump(call.role, call.model, cache_misses=1)
            self._check_budget()
            resp = await self._fetch(messages, call)
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

    async def _fetch(self, messages: list[dict[str, Any]], call: _Call) -> CachedResponse:
        """Send with retries; account requests, tokens and cost."""
        role, model = call.role, call.model
        api_key = self.secrets.api_key()
        transport = self._get_transport()
        mode = None
        if call.json_schema is not None and call.configured:
            mode = self._modes.mode(model, call.configured, transport)
        req = build_request(
            messages,
            mode=mode,
            temperature=call.temperature,
            seed=call.seed,
            schema=call.schema,
            json_schema=call.json_schema,
        )
        sem = self._sem
        assert sem is not None

        async def attempt() -> CachedResponse:
            async with sem:
                self._stats.bump(role, model, requests=1)
                async with self.retry.deadline():
                    return await transport.send(model, req, api_key, self.retry.timeout_s)

        tries = Tries()
        while True:
            try:
                out = await self.retry.run(attempt, tries, on_retry=lambda: self._stats.bump(role, model, retries=1))
                break
            except FatalTransportError as e:
                if self._modes.can_fall_back(call.configured, req, e.status):
                    # the server refuses json_schema: JSON mode for this model from now on
                    self._modes.refused_schema(model)
                    req = build_request(
                        messages,
                        mode="json_object",
                        temperature=call.temperature,
                        seed=call.seed,
                        schema=call.schema,
                        json_schema=call.json_schema,
                    )
                    tries.n -= 1
                    continue
                self._stats.bump(role, model, errors=1)
                raise LLMCallError(
                    self.secrets.redact(f"LLM call failed for role {role}, model {model} ({self.transport_name}): {e}"),
                    role=role,
                    model=model,
                    attempts=tries.n,
                    status=e.status,
                ) from None
        if isinstance(out, Exhausted):
            self._stats.bump(role, model, errors=1)
            raise LLMCallError(
                self.secrets.redact(
                    f"LLM call failed for role {role}, model {model} ({self.transport_name}) "
                    f"after {out.attempts} attempts: {out.error}"
                ),
                role=role,
                model=model,
                attempts=out.attempts,
                status=out.error.status,
            )
        cost = out.cost_usd
        self._stats.bump(
            role,
            model,
            prompt_tokens=out.prompt_tokens,
            completion_tokens=out.completion_tokens,
            cost_usd=cost,
            unpriced_requests=0 if cost is not None else 1,
        )
        return out


@dataclass(frozen=True)
class _Call:
    """What one logical call asks for (the repair call asks for the same)."""

    role: str
    model: str
    temperature: float
    seed: int | None
    prompt_id: str | None
    prompt_version: str | None
    schema: type[BaseModel] | None = None
    json_schema: dict[str, Any] | None = None
    configured: str | None = None


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise LLMConfigError(f"unknown LLM role {role!r}, expected one of {', '.join(ROLES)}")
