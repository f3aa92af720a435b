"""The circuit breaker: an endpoint that stops answering ends the LLM calls at once.

Every attempt reports to the breaker of its endpoint (the api_base, else the
provider of the model): a timeout or a connection failure is a failure, any
HTTP response (an error status included) shows the endpoint alive. After
``threshold`` consecutive failures, with no response for at least
``quiet_s`` (twice the client's ``timeout_s``: so that a flaky but answering
server, whose timeouts come between answers, never trips it), the breaker opens: every later attempt, and every
call waiting in a backoff, fails at once with one
:class:`~pytest_ragdive.errors.EndpointUnavailable` naming the endpoint (a
``FatalRunError``: the run ends with that one message).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..core.errors import EndpointUnavailable

__all__ = ["CircuitBreaker"]


class CircuitBreaker:
    """Consecutive unreachable attempts to one endpoint; open = stop sending."""

    def __init__(
        self,
        endpoint: str,
        threshold: int,
        quiet_s: float,
        clock: Callable[[], float] = time.monotonic,
        redact: Callable[[str], str] = str,
    ) -> None:
        self.endpoint = endpoint
        self._redact = redact
        self.threshold = threshold
        self.quiet_s = quiet_s
        self._clock = clock
        self._failures = 0
        self._alive_at: float | None = None  # the last response (or the first attempt)
        self._last_error = ""
        self.opened: EndpointUnavailable | None = None

    @property
    def enabled(self) -> bool:
        return self.threshold > 0

    def before_attempt(self) -> None:
        """Raise :class:`EndpointUnavailable` once the breaker is open."""
        if self._alive_at is None:
            self._alive_at = self._clock()
        if self.opened is not None:
            raise self.opened

    def alive(self) -> None:
        """The endpoint answered (whatever the status)."""
        self._failures = 0
        self._alive_at = self._clock()

    def unreachable(self, error: str) -> None:
        """A timeout or a connection failure; may open the breaker."""
        self._failures += 1
        self._last_error = self._redact(error)
        if not self.enabled or self.opened is not None:
            return
        quiet = self._clock() - (self._alive_at if self._alive_at is not None else self._clock())
        if self._failures >= self.threshold and quiet >= self.quiet_s:
            self.opened = EndpointUnavailable(self.endpoint, self._failures, quiet, self._last_error)
