"""The LLM client every role uses (simulator, validator, judge, classifier).

``LLMClient.from_config(cfg)`` builds the client and its cache; every call goes
through the cache (:mod:`.cache`), in-process and cross-process coalescing
(:mod:`.coalesce`), a bounded concurrency (``cfg.concurrency``) and retries
with a per-attempt timeout (:mod:`.retry`; ``cfg.llm.timeout_s``,
``cfg.llm.max_retries``; then :class:`LLMCallError`). Structured output and
its one repair call are :mod:`.structured`; transports (litellm, or the lean
``openai_http`` path) are :mod:`.transport`; accounting is :mod:`.stats`.

Keys
    ``api_key_env`` names the environment variable read at call time; the key is never stored
    (not in the cache, stats, results, exception messages or warnings: they are scrubbed of it).

Accounting and budget
    ``client.stats`` (:class:`LLMStats`) counts per role and model. With ``max_cost`` set, a
    call that needs the network raises :class:`BudgetExceeded` once this process's known
    spend reaches it (cache hits stay free and allowed).

Event loops
    The semaphore, the in-flight table and the HTTP session belong to the running loop and
    are rebuilt when the client is used from a new loop (each ``asyncio.run``). ``await
    client.aclose()`` (or ``async with``) closes the session; when nobody does, ``asyncio.run``
    closes it at the end of its loop (the client parks an async generator there for that).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel

from ..core.errors import BudgetExceeded, CacheMissError, LLMConfigError
from .cache import LLMCache, cache_key
from .coalesce import Heartbeats, SingleFlight, claim_or_wait
from .keys import CachedResponse, canonical_json, key_extra
from .presence import Presence
from .redact import Secrets, run_secrets
from .retry import DEFAULT_BACKOFF_BASE_S, DEFAULT_BACKOFF_MAX_S, RetryPolicy
from .send import Call, Sender
from .slots import JUDGE, TURN_LOOP, priority_of
from .stats import LLMStats, check_role
from .structured import parse_reply, repair_messages, usable_reply
from .transport import MAX_RETRY_AFTER_S, Transport, transport_for
from .writes import WriteBehind

if TYPE_CHECKING:
    from ..core.config import RagdiveConfig

__all__ = ["LLMClient", "LLMResult"]

#: how long :meth:`LLMClient.aclose` waits for the HTTP session to close
CLOSE_TIMEOUT_S = 5.0
#: judge calls under way at once, in multiples of ``llm.max_in_flight`` (see ``_judge_gate``)
JUDGE_AHEAD = 2

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
        secrets: Secrets | None = None,
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
        self.secrets = secrets if secrets is not None else run_secrets(cfg)  # every reply is scrubbed of them
        self._stats = LLMStats()
        self._sender = Sender(cfg, self.retry, self.secrets, self._stats)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._schemas: dict[type[BaseModel], dict[str, Any]] = {}
        self._schema_texts: dict[type[BaseModel], str] = {}  # canonical JSON of each, for keys
        self._flight: SingleFlight[tuple[CachedResponse, bool]] = SingleFlight()
        self._lifetime: AsyncIterator[None] | None = None
        self._heartbeats: Heartbeats | None = None  # of the running loop
        self._presence: Presence | None = None  # whether another process shares the cache (.presence)
        self._writes: WriteBehind | None = None  # the cache's batched claims and stores, of the running loop
        # judge calls being looked up, claimed, waiting for a request slot or in flight: at most
        # JUDGE_AHEAD x max_in_flight. A finished conversation's judge fan-out is then prepared
        # as slots come free, not all at once (a burst that held up the other conversations'
        # turns on the event loop, and kept hundreds of claims alive for seconds)
        self._judge_gate: asyncio.Semaphore | None = None

    @classmethod
    def from_config(cls, cfg: RagdiveConfig, **kwargs: Any) -> LLMClient:
        """A client with the cache of ``cfg`` (none when record_mode is off)."""
        return cls(cfg, LLMCache.from_config(cfg), **kwargs)

    # -- settings ----------------------------------------------------------
    def model_for(self, role: str) -> str:
        check_role(role)
        model = self.cfg.role_model(role)
        if not model:
            raise LLMConfigError(
                f"no model for the {role} role: set --ragdive-model (or 'model'), or llm.{role}.model in the config"
            )
        return model

    def _json_schema(self, schema: type[BaseModel]) -> dict[str, Any]:
        """``schema.model_json_schema()``, built once per schema (pydantic builds it anew on
        every call: most of a cached call's CPU). Read only: it is part of keys and requests."""
        js = self._schemas.get(schema)
        if js is None:
            js = self._schemas[schema] = schema.model_json_schema()
        return js

    def _schema_text(self, call: Call) -> str | None:
        """``canonical_json`` of the call's schema, made once per schema (the cache key's largest part)."""
        if call.schema is None or call.json_schema is None:
            return None
        text = self._schema_texts.get(call.schema)
        if text is None or self._schemas.get(call.schema) is not call.json_schema:
            text = self._schema_texts[call.schema] = canonical_json(call.json_schema)
        return text

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
    def max_in_flight(self) -> int:
        """Requests in flight in this process (``llm.max_in_flight``, default 4 x ``concurrency``)."""
        return self._sender.max_in_flight

    def transport_for(self, model: str) -> str:
        """The transport this model's calls take (``auto``: openai_http for OpenAI-compatible models)."""
        return transport_for(self.cfg.llm.transport, model)

    # -- loop-bound state --------------------------------------------------
    async def _bind_loop(self) -> asyncio.AbstractEventLoop:
        """Loop-bound state (semaphore, in-flight table, HTTP session) for the running loop."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop = loop
            self._sender.bind_loop()
            self._flight.reset()
            if self._heartbeats is not None:
                self._heartbeats.stop()
            self._heartbeats = Heartbeats(self.cache, self._io) if self.cache is not None else None
            if self._presence is not None:
                self._presence.stop()
            self._presence = None
            if self.cache is not None and self.cache.record_mode.coordinates:
                self._presence = Presence(self.cache, self._io, self._claim_in_flight)
                self._presence.start()
            if self._writes is not None:
                self._writes.flush_now()  # what an old loop left queued (its end normally wrote it)
            self._writes = WriteBehind(self.cache, io_threads=self.io_threads) if self.cache is not None else None
            self._judge_gate = asyncio.Semaphore(JUDGE_AHEAD * self.max_in_flight)
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
            await self._close_session()

    @property
    def _transport(self) -> Transport | None:
        """The transport, None until a request needed one."""
        return self._sender.built

    async def aclose(self) -> None:
        """Close the HTTP session and the cache. Bounded (a transport that does not
        close within :data:`CLOSE_TIMEOUT_S` is left to the process exit) and never
        raising: it runs at shutdown, maybe after an interrupt; the cache is closed
        whatever happens to the session."""
        try:
            await self._close_session()
        finally:
            self.close()

    async def _close_session(self) -> None:
        if self._heartbeats is not None:
            self._heartbeats.stop()
        if self._presence is not None:
            self._presence.stop()
            self._presence = None  # a later call on this loop claims, as when in doubt
        if self._writes is not None:
            try:  # the answers queued for the cache: an interrupted run loses none
                await self._writes.aclose()
            except Exception:  # noqa: BLE001 - a broken cache must not break the shutdown
                pass
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT_S):
                await self._sender.aclose()
        except Exception:  # noqa: BLE001 - best effort at shutdown
            pass

    async def flush(self) -> None:
        """Write the answers queued for the cache now (:mod:`.writes`; ``aclose`` does it too)."""
        if self._writes is not None:
            await self._writes.flush()

    def close(self) -> None:
        """Write what is queued for the cache and close it (the HTTP session needs
        :meth:`aclose`); never raises."""
        if self.cache is not None:
            if self._presence is not None:
                self._presence.stop()
                self._presence = None
            try:
                if self._writes is not None:
                    self._writes.flush_now()
            except Exception:  # noqa: BLE001 - a broken cache must not break the shutdown
                pass
            try:
                self.cache.close()
            except Exception:  # noqa: BLE001 - a broken cache must not break the shutdown
                pass

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
        turn_loop: bool = False,
        temperature: float | None = None,
        max_tokens: int | None = None,
        key_tag: str | None = None,
    ) -> LLMResult[T]:
        """A reply parsed into ``schema``; ``value`` None (and ``error`` set) when invalid after
        one repair call. ``turn_loop``: a conversation's turn loop waits for this call (a judge
        call in a sharded turn): it gets a slot with the turn-loop calls and is never batched.
        ``temperature`` (else the role's), ``max_tokens`` (output cap) and ``key_tag`` (a mode whose
        calls must not share cache entries with another's) are part of the key."""
        model = model or self.model_for(role)
        check_role(role)
        role_t, seed = self._sampling(role, seed)
        temperature, js = role_t if temperature is None else temperature, self._json_schema(schema)
        configured = self.cfg.llm.structured_output
        msgs = [dict(m) for m in messages]
        priority = TURN_LOOP if turn_loop else priority_of(role)
        call = Call(role, model, temperature, seed, prompt_id, prompt_version, schema, js, configured, priority,
                    max_tokens, key_tag)
        self._stats.bump(role, model, calls=1)
        r1, c1, k1 = await self._complete(msgs, call)
        tokens = (r1.prompt_tokens if not c1 else 0, r1.completion_tokens if not c1 else 0)
        value, err = parse_reply(r1, schema)
        if value is not None:
            cost = None if c1 else r1.cost_usd
            return LLMResult(value, r1.content, None, c1, r1.model or model, role, prompt_id, False, *tokens, cost)
        # one repair call quoting the error
        assert err is not None
        self._stats.bump(role, model, calls=1, repairs=1)
        r2, c2, k2 = await self._complete(repair_messages(msgs, r1.content, err, js), call, repair=True)
        value, err2 = parse_reply(r2, schema)
        costs = [r.cost_usd for r, c in ((r1, c1), (r2, c2)) if not c and r.cost_usd is not None]
        pt = tokens[0] + (r2.prompt_tokens if not c2 else 0)
        ct = tokens[1] + (r2.completion_tokens if not c2 else 0)
        error = None
        if value is None:
            self._stats.bump(role, model, invalid_outputs=1)
            error = self.secrets.redact(f"invalid output after one repair: {err2} (first reply: {err})")
            await self._forget_invalid([(k1, c1), (k2, c2)])
        elif not c1:
            # the first reply was held back as invalid; with its repair it is a usable pair:
            # store it now so that a replay finds both
            await self._store(k1, r1)
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
        check_role(role)
        temperature, seed = self._sampling(role, seed)
        self._stats.bump(role, model, calls=1)
        call = Call(role, model, temperature, seed, prompt_id, prompt_version, priority=priority_of(role))
        r, cached, _ = await self._complete([dict(m) for m in messages], call)
        tokens = (0, 0) if cached else (r.prompt_tokens, r.completion_tokens)
        cost = None if cached else r.cost_usd
        return LLMResult(r.content, r.content, None, cached, r.model or model, role, prompt_id, False, *tokens, cost)

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
        self, messages: list[dict[str, Any]], call: Call, *, repair: bool = False
    ) -> tuple[CachedResponse, bool, str]:
        """(response, from_cache, key) for one logical call: cache, single flight,
        fetch, store (a structured reply only when it parses)."""
        await self._bind_loop()
        # judge calls are admitted as request slots come free; a batched one holds no slot
        # (gating it would split one batch into many, sent one after another)
        gate = self._judge_gate if call.priority == JUDGE and not self._sender.batches(call) else None
        if gate is None:
            return await self._complete_now(messages, call, repair)
        async with gate:
            return await self._complete_now(messages, call, repair)

    async def _complete_now(
        self, messages: list[dict[str, Any]], call: Call, repair: bool
    ) -> tuple[CachedResponse, bool, str]:
        messages_text = canonical_json(messages)  # the key's, and the request body's
        key = cache_key(
            model=call.model,
            messages=messages,
            temperature=call.temperature,
            seed=call.seed,
            schema=call.json_schema,
            structured=call.configured,
            prompt_id=call.prompt_id,
            prompt_version=call.prompt_version,
            extra=key_extra(repair, call.max_tokens, call.key_tag),
            schema_text=self._schema_text(call),
            messages_text=messages_text,
        )
        (resp, cached), shared = await self._flight.run(key, lambda: self._lead(key, messages, call, messages_text))
        if shared:
            self._hit(call)
        return resp, cached or shared, key

    def _hit(self, call: Call, *, waited: bool = False) -> None:
        if self.cache is not None:
            self.cache.stats.hits += 1
            if waited:
                self.cache.stats.waits += 1
        self._stats.bump(call.role, call.model, cache_hits=1)

    async def _lead(
        self, key: str, messages: list[dict[str, Any]], call: Call, messages_text: str | None = None
    ) -> tuple[CachedResponse, bool]:
        """The first caller of a request in this process: cache, claim, fetch, store."""
        cache, writes = self.cache, self._writes
        if cache is not None and cache.reads:
            hit = writes.pending(key) if writes is not None else None
            if hit is None:
                hit = cache.peek(key)
            if hit is not None:
                self._hit(call)
                return self.secrets.scrub_reply(hit), True
        if self.record_mode.replay_only:
            if cache is not None:
                cache.stats.misses += 1
            self._stats.bump(call.role, call.model, cache_misses=1)
            raise CacheMissError(call.role, call.model, call.prompt_id, key)
        coordinate = cache is not None and cache.record_mode.coordinates
        presence = self._presence if coordinate else None
        solo = presence is not None and await presence.alone()  # no other process: no claim (.presence)
        coordinate = coordinate and not solo
        heartbeats = self._heartbeats
        if coordinate:
            assert cache is not None and heartbeats is not None and writes is not None
            hit, waited = await claim_or_wait(cache, key, writes.claim)
            if hit is not None:
                self._hit(call, waited=waited)
                return hit, True
            heartbeats.hold(key)
        elif solo:
            assert presence is not None
            presence.track(key)
        released = False
        try:
            if cache is not None:
                cache.stats.misses += 1
            self._stats.bump(call.role, call.model, cache_misses=1)
            self._check_budget()
            resp = await self._sender.fetch(messages, call, messages_text)
            if solo:  # claimed meanwhile when another process came: released with the answer
                assert presence is not None
                coordinate = presence.untrack(key)
                solo = False
            if cache is not None and usable_reply(call.schema, resp):
                # queued for the next cache transaction (.writes: written at the latest when the
                # client closes, so an interrupted run repeats no finished call), our claim
                # dropped with it; a structured reply that does not parse is never stored (a
                # rerun asks again)
                if writes is not None:
                    writes.store(key, resp, release=coordinate)
                    released = True
                else:
                    released = await self._io(cache.set, key, resp, release=coordinate)
            return resp, False
        finally:
            if heartbeats is not None:
                heartbeats.drop(key)
            if solo:  # the call failed or was cancelled
                assert presence is not None
                coordinate = presence.untrack(key)
            if coordinate and not released:
                assert cache is not None
                cache.release(key)

    async def _claim_in_flight(self, keys: list[str]) -> None:
        """Claim the calls in flight without a claim (another process has come, .presence),
        each kept alive until its call ends; a claim made for a call that ended meanwhile is
        released. Then every answer queued and not stored yet is written: the newcomer finds
        each answer of this process stored or claimed."""
        writes, heartbeats, presence = self._writes, self._heartbeats, self._presence
        if writes is None or heartbeats is None or presence is None:
            return
        out = await asyncio.gather(*(writes.claim(k) for k in keys), return_exceptions=True)
        for key, r in zip(keys, out, strict=True):
            if not (isinstance(r, tuple) and r[0] is None and r[1]):
                continue  # another holds it, or answered it: nothing of ours to keep alive
            if presence.claimed_late(key):
                heartbeats.hold(key)
            else:
                writes.release(key)
        with contextlib.suppress(Exception):  # a cache that fails its writes is reported by them
            await writes.flush()

    async def _store(self, key: str, resp: CachedResponse) -> None:
        if self._writes is not None:
            self._writes.store(key, resp)
        elif self.cache is not None:
            await self._io(self.cache.set, key, resp)

    async def _forget_invalid(self, calls: list[tuple[str, bool]]) -> None:
        """An output that stayed invalid: count what was held back, and drop what
        an older run had stored of it, so that the next run asks again."""
        cache = self.cache
        if cache is None or not cache.writes:
            return
        for key, cached in calls:
            if cached:
                await self._io(cache.discard, key)
            else:
                cache.stats.rejected += 1

    async def _io(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        """A cache write. With ``io_threads``, a SQLite lock held by another writer
        never stalls the event loop: the write is tried here on a connection that
        does not wait for the lock (:meth:`LLMCache.nowait`), and only when the lock
        is busy is it run in a worker thread (a thread hop per write cost more CPU
        than the write itself)."""
        if self.io_threads:
            if self.cache is not None:
                done, out = self.cache.nowait(fn, *args, **kwargs)
                if done:
                    return out  # type: ignore[return-value]
            return await asyncio.to_thread(fn, *args, **kwargs)
        return fn(*args, **kwargs)

    def _check_budget(self) -> None:
        max_cost = self.cfg.max_cost
        if max_cost is None:
            return
        spent = self._stats.spent_usd()
        if spent >= max_cost:
            raise BudgetExceeded(spent, max_cost, self._stats.spend_breakdown())
