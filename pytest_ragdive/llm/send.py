"""One request to the model: the structured mode and its fallback, the
concurrency slot (turn-loop calls first, :mod:`.slots`), the circuit breaker of its endpoint, retries (:mod:`.retry`)
and the accounting of requests, tokens and cost; a failure ends as one
redacted :class:`~pytest_ragdive.errors.LLMCallError` (or
:class:`~pytest_ragdive.errors.EndpointUnavailable` once the breaker is open).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ..core.errors import BatchUnavailable, FatalTransportError, LLMCallError, LLMError
from .breaker import CircuitBreaker
from .keys import CachedResponse
from .redact import Secrets
from .retry import Exhausted, RetryPolicy, Tries
from .slots import JUDGE, TURN_LOOP, PrioritySlots
from .stats import LLMStats
from .structured import Formats, ModeChooser, build_request
from .transport import Transport, make_transport, route_of

if TYPE_CHECKING:
    from ..core.config import RagdiveConfig

__all__ = ["Call", "Sender"]


@dataclass(frozen=True)
class Call:
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
    #: its request slot's priority (.slots): a turn loop's calls first, judge calls after;
    #: a judge call a turn loop waits for (``turn_loop=True``) counts as a turn-loop call
    priority: int = TURN_LOOP
    max_tokens: int | None = None  # the output cap (None: the provider's default)
    key_tag: str | None = None  # part of the cache key only (see keys.key_extra)


class Sender:
    """Sends requests for one client: its transport, slots, breakers and modes."""

    def __init__(self, cfg: RagdiveConfig, retry: RetryPolicy, secrets: Secrets, stats: LLMStats) -> None:
        self.cfg = cfg
        self.retry = retry
        self.secrets = secrets
        self._formats = Formats()  # the response formats encoded once per schema
        self._stats = stats
        self._transports: dict[str, Transport] = {}  # by kind (transport = "auto" may use both)
        self._sem: PrioritySlots | None = None
        self._modes = ModeChooser()
        self._breakers: dict[str, CircuitBreaker] = {}  # by redacted endpoint
        self._breaker_of: dict[tuple[str, str], CircuitBreaker] = {}  # by (transport, model): no redaction per call
        self._batch: Any = None  # the BatchSender, with judge_mode = "batch"

    @property
    def max_in_flight(self) -> int:
        """Requests in flight (``llm.max_in_flight``, default 4 x ``concurrency``: a
        conversation's judge calls run beside the other conversations' turns)."""
        return self.cfg.llm.max_in_flight or 4 * self.cfg.concurrency

    @property
    def built(self) -> Transport | None:
        """A transport, if one was built (None: no request was ever needed)."""
        return next(iter(self._transports.values()), None)

    def transport(self, model: str) -> Transport:
        """The transport ``model``'s calls take (``auto``: openai_http for OpenAI-compatible models)."""
        name, provider = route_of(self.cfg.llm.transport, model)
        kind = f"{name}:{provider}" if provider else name
        tr = self._transports.get(kind)
        if tr is None:
            tr = self._transports[kind] = make_transport(name, self.cfg.llm.api_base, self.max_in_flight, provider)
        return tr

    def bind_loop(self) -> None:
        """New loop-bound state (slots, HTTP session) for the running loop."""
        self._sem = PrioritySlots(self.max_in_flight)
        self._batch = None  # its timer and futures belonged to the old loop
        for tr in self._transports.values():
            tr.reset_loop()

    async def aclose(self) -> None:
        if self._batch is not None:
            await self._batch.aclose()
        for tr in list(self._transports.values()):
            await tr.aclose()

    def batches(self, call: Call) -> bool:
        """Whether this call goes to the batch API (judge calls no turn loop waits for,
        with ``judge_mode = "batch"``)."""
        return call.priority == JUDGE and self.cfg.judge_mode == "batch"

    def _batcher(self, call: Call) -> Any:
        """The batch sender for this call (see :meth:`batches`), else None."""
        if not self.batches(call):
            return None
        if self._batch is None:
            from .batch import BatchSender

            llm = self.cfg.llm
            self._batch = BatchSender(llm.api_base, poll_s=llm.batch_poll_s, max_wait_s=llm.batch_max_wait_s)
        return self._batch

    def _breaker(self, transport: Transport, model: str) -> CircuitBreaker:
        """The circuit breaker of the endpoint ``model`` is reached at (one per endpoint;
        looked up once per transport and model: redacting the endpoint reads the environment)."""
        found = self._breaker_of.get((transport.name, model))
        if found is not None:
            return found
        endpoint = self.secrets.redact_url(transport.endpoint(model))
        breaker = self._breakers.get(endpoint)
        if breaker is None:
            llm = self.cfg.llm
            breaker = CircuitBreaker(
                endpoint,
                llm.breaker_failures,
                2 * llm.timeout_s,
                redact=self.secrets.redact,
            )
            self._breakers[endpoint] = breaker
        self._breaker_of[(transport.name, model)] = breaker
        return breaker

    def _failed(self, role: str, model: str, detail: str, attempts: int, status: int | None = None) -> LLMCallError:
        """A failed call, counted, its message redacted (an error's text may quote the request)."""
        self._stats.bump(role, model, errors=1)
        return LLMCallError(
            self.secrets.redact(f"LLM call failed for role {role}, model {model} {detail}"),
            role=role, model=model, attempts=attempts, status=status,
        )

    async def fetch(self, messages: list[dict[str, Any]], call: Call, messages_text: str | None = None) -> CachedResponse:
        """Send with retries; account requests, tokens and cost. ``messages_text``: their
        canonical JSON (the cache key's), sent as the body's messages."""
        role, model = call.role, call.model
        transport = self.transport(model)
        api_key = self.secrets.api_key(transport.name, getattr(transport, "key_envs", None))
        mode = None
        if call.json_schema is not None and call.configured:
            mode = self._modes.mode(model, call.configured, transport)
        req = build_request(
            messages,
            mode=mode,
            temperature=call.temperature,
            max_tokens=call.max_tokens,
            seed=call.seed,
            schema=call.schema,
            json_schema=call.json_schema,
            messages_text=messages_text,
            formats=self._formats,
        )
        batcher = self._batcher(call)
        if batcher is not None:
            try:
                out = await batcher.send(model, req, api_key)
            except BatchUnavailable as e:
                self._stats.bump(role, model, batch_fallbacks=1)
                self._stats.note(self.secrets.redact(f"judge_mode batch: {e}; its calls were sent directly"))
            else:
                self._stats.bump(role, model, requests=1, batched=1, prompt_tokens=out.prompt_tokens,
                                 completion_tokens=out.completion_tokens, cost_usd=out.cost_usd,
                                 unpriced_requests=0 if out.cost_usd is not None else 1)
                return self.secrets.scrub_reply(out)
        sem = self._sem
        assert sem is not None
        priority = call.priority  # turn-loop calls before judge calls (.slots)

        breaker = self._breaker(transport, model)

        async def attempt() -> CachedResponse:
            async with sem.slot(priority):
                breaker.before_attempt()
                self._stats.bump(role, model, requests=1)
                async with self.retry.deadline():
                    return await transport.send(model, req, api_key, self.retry.timeout_s)

        tries = Tries()
        while True:
            try:
                out = await self.retry.run(
                    attempt, tries, on_retry=lambda: self._stats.bump(role, model, retries=1), breaker=breaker
                )
                break
            except FatalTransportError as e:
                if self._modes.can_fall_back(call.configured, req, e.status):
                    # the server refuses json_schema: JSON mode for this model from now on
                    self._modes.refused_schema(model)
                    req = build_request(
                        messages,
                        mode="json_object",
                        temperature=call.temperature,
                        max_tokens=call.max_tokens,
                        seed=call.seed,
                        schema=call.schema,
                        json_schema=call.json_schema,
                        formats=self._formats,
                    )
                    tries.n -= 1
                    continue
                raise self._failed(role, model, f"({transport.name}): {e}", tries.n, e.status) from None
            except LLMError:
                self._stats.bump(role, model, errors=1)
                raise
            except Exception as e:  # a transport's unexpected error: its text may quote the request
                raise self._failed(role, model, f"({transport.name}): {type(e).__name__}: {e}", tries.n) from None
        if isinstance(out, Exhausted):
            raise self._failed(
                role, model, f"({transport.name}) after {out.attempts} attempts: {out.error}", out.attempts,
                out.error.status,
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
        # the one redaction point on the way in: before the reply is parsed, cached, scored or reported
        return self.secrets.scrub_reply(out)
