"""Retries of one request: a per-attempt timeout, exponential backoff with full
jitter, Retry-After honoured (capped), and a bounded number of attempts.

Retried: what the transports raise as
:class:`~pytest_ragdive.errors.TransientTransportError` (429, 5xx, 408/409/425,
timeouts, connection failures, unreadable replies). Not retried:
:class:`~pytest_ragdive.errors.FatalTransportError` (other 4xx). The caller
turns the last error into an :class:`~pytest_ragdive.errors.LLMCallError`.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from ..core.errors import FatalTransportError, TransientTransportError
from .breaker import CircuitBreaker
from .keys import CachedResponse
from .transport import MAX_RETRY_AFTER_S

__all__ = ["DEFAULT_BACKOFF_BASE_S", "DEFAULT_BACKOFF_MAX_S", "Exhausted", "RetryPolicy", "Tries"]

DEFAULT_BACKOFF_BASE_S = 0.5
DEFAULT_BACKOFF_MAX_S = 30.0


@dataclass
class Exhausted:
    """Every attempt failed: the last error and how many attempts were made."""

    error: TransientTransportError
    attempts: int


@dataclass
class RetryPolicy:
    """How often and how patiently one request is tried."""

    max_retries: int
    timeout_s: float
    backoff_base_s: float = DEFAULT_BACKOFF_BASE_S
    backoff_max_s: float = DEFAULT_BACKOFF_MAX_S
    max_retry_after_s: float = MAX_RETRY_AFTER_S
    rng: random.Random = field(default_factory=random.Random)

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        """Delay before retry number ``attempt`` (1-based): Retry-After when given
        (capped), else exponential with full jitter around the base."""
        if retry_after is not None:
            return min(retry_after, self.max_retry_after_s) + self.rng.uniform(0, 0.1 * max(retry_after, 0.01))
        base = min(self.backoff_max_s, self.backoff_base_s * (2 ** (attempt - 1)))
        return base * self.rng.uniform(0.5, 1.5)

    async def run(
        self,
        attempt: Callable[[], Awaitable[CachedResponse]],
        tries: Tries,
        *,
        on_retry: Callable[[], None] | None = None,
        breaker: CircuitBreaker | None = None,
    ) -> CachedResponse | Exhausted:
        """The response of the first attempt that succeeds, or :class:`Exhausted`.

        ``attempt()`` sends once: the caller takes its concurrency slot and
        then applies ``timeout_s`` (:meth:`deadline`) inside it, so that neither
        the wait for a slot nor a backoff sleep counts or holds one. A
        :class:`~pytest_ragdive.errors.FatalTransportError` propagates;
        ``tries.n`` counts the attempts made (a structured-mode fallback goes
        on counting in the same ``tries``). Each outcome is reported to
        ``breaker``; ``attempt()`` calls its ``before_attempt()`` once it holds
        a slot, and a backoff sleep ends early (EndpointUnavailable) when the
        breaker opens meanwhile.
        """
        while True:
            tries.n += 1
            try:
                resp = await attempt()
            except TimeoutError:
                err = TransientTransportError(f"timed out after {self.timeout_s:g} s", unreachable=True)
            except TransientTransportError as e:
                err = e
            except FatalTransportError:
                if breaker is not None:
                    breaker.alive()
                raise
            else:
                if breaker is not None:
                    breaker.alive()
                return resp
            if breaker is not None:
                if err.unreachable:
                    breaker.unreachable(str(err))
                else:
                    breaker.alive()
            if tries.n > self.max_retries:
                return Exhausted(err, tries.n)
            if on_retry is not None:
                on_retry()
            await _sleep(self.backoff(tries.n, err.retry_after), breaker)

    def deadline(self) -> asyncio.Timeout:
        """The per-attempt timeout, as an async context manager."""
        return asyncio.timeout(self.timeout_s)


async def _sleep(delay: float, breaker: CircuitBreaker | None) -> None:
    """Sleep ``delay`` seconds, or until ``breaker`` opens (then raise its error)."""
    if breaker is None:
        await asyncio.sleep(delay)
        return
    loop = asyncio.get_running_loop()
    end = loop.time() + delay
    while (left := end - loop.time()) > 0:
        await asyncio.sleep(min(left, _BREAKER_POLL_S))
        breaker.before_attempt()


_BREAKER_POLL_S = 0.1


@dataclass
class Tries:
    """Attempts made so far for one call."""

    n: int = 0
