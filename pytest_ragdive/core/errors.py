"""Every exception of pytest-ragdive, in one place.

Two families:

- :class:`UsageError` subclasses are bad input (a config, golden file,
  baseline, target spec or role that cannot be used). Their message is one
  line that names the file and key; the plugin maps the whole family to
  pytest's ``UsageError`` (exit code 4) in one place, and the command line
  exits 4 with the message.
- :class:`FatalRunError` subclasses end the whole run, not one conversation
  (no budget, a replay-only cache miss, a missing model or backend): every
  other conversation would hit them too.

:func:`one_line` turns a pydantic ``ValidationError`` into the one-line form
every loader uses; :func:`fault` (and :func:`quote`) bound every error line that
quotes input: a quoted value is cut at :data:`QUOTE_LIMIT` characters with its
length, and the fault is named by file:line:col.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError


class UsageError(Exception):
    """Bad input from the user; one line. The plugin reports it as pytest's UsageError (exit 4)."""


class ConfigError(UsageError):
    """A one-line configuration error."""


class GoldenError(UsageError):
    """A golden data file that cannot be read; the message names file and line."""


class ShardedFileError(GoldenError):
    """A sharded-question file that fails to load or fails a mechanical check; names file, line and question."""


class ShardInputError(UsageError):
    """An input file of the sharding helper that cannot be used; names file and line."""


class BaselineError(UsageError):
    """A baseline file that cannot be used; one line, names the file."""


class RoleError(UsageError):
    """An unknown role or a role file that cannot be read; one-line message."""


class GenerationError(UsageError):
    """A generated suite that cannot be planned (empty corpus, unknown document)."""


class RagdiveFormatError(UsageError):
    """Data that is not in the RAG-DIVE format; the message names the item and key."""


class LogFormatError(UsageError):
    """A production request log (JSONL) that cannot be read; the message names file and line."""


class PathError(UsageError):
    """A report directory or baseline path that cannot be written; one line, names the path."""


class MetricError(UsageError):
    """A metric declaration that cannot be used: a name taken twice or a built-in's, a metric
    module or entry point that cannot be imported, an offline twin that is not a function."""


class ResultsError(UsageError):
    """A result file (results.json) that cannot be read or merged; one line, names the file."""


class ReviewError(UsageError):
    """A human-review CSV that cannot be written or read; one line, names file, line and column."""


class TargetError(Exception):
    """The target raised or returned something that is not a response."""


class TargetTimeout(TargetError):
    """The target did not answer one turn within ``target_timeout_s``."""


class FatalRunError(Exception):
    """An error that ends the whole ragdive run, not one conversation: every
    other conversation would hit it too (no budget, replay-only cache miss,
    missing model or backend). The run fails once, with this message."""


class LLMError(Exception):
    """Base of the LLM client's errors."""


class LLMConfigError(LLMError, FatalRunError):
    """The LLM settings cannot work (no model for a role, a missing key variable...)."""


class LLMCallError(LLMError):
    """A call failed for good: a non-retryable error, or still failing after the retries."""

    def __init__(
        self, message: str, *, role: str = "", model: str = "", attempts: int = 0, status: int | None = None
    ) -> None:
        super().__init__(message)
        self.role = role
        self.model = model
        self.attempts = attempts
        self.status = status


class TransportError(Exception):
    """A failed request inside the LLM client's transports; never leaves the client
    (the client turns it into a retry or an :class:`LLMCallError`). ``unreachable``:
    no reply at all (a timeout or a connection failure; what the circuit breaker counts)."""

    def __init__(
        self, message: str, status: int | None = None, retry_after: float | None = None, *, unreachable: bool = False
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.unreachable = unreachable


class TransientTransportError(TransportError):
    """Worth a retry: 408/409/425/429, 5xx, a timeout, a connection failure, an unreadable reply."""


class FatalTransportError(TransportError):
    """Not worth a retry: any other 4xx, or an error the transport does not know."""


class EndpointUnavailable(LLMError, FatalRunError):
    """The circuit breaker opened: an LLM endpoint stopped answering (timeouts,
    connection failures), so every remaining call fails at once."""

    def __init__(self, endpoint: str, failures: int, quiet_s: float, last_error: str) -> None:
        self.endpoint = endpoint
        self.failures = failures
        super().__init__(
            f"ragdive LLM endpoint {endpoint} is not answering: {failures} consecutive timeouts or connection "
            f"failures and no reply for {quiet_s:.0f} s (last: {last_error}); every remaining LLM call fails "
            f"at once. Check the server (llm.api_base) or raise llm.timeout_s / llm.breaker_failures"
        )


class CacheUnusable(LLMError, FatalRunError):
    """The cache database cannot be read (corrupt) and record_mode none needs it."""


class BatchUnavailable(LLMError):
    """A batch of judge calls that did not complete (failed, expired, cancelled, or
    past ``batch_max_wait_s``): its calls fall back to normal requests."""


class CacheMissError(LLMError, FatalRunError):
    """record_mode none and the cache has no answer for this call."""

    def __init__(self, role: str, model: str, prompt_id: str | None, key: str) -> None:
        self.role = role
        self.model = model
        self.prompt_id = prompt_id
        self.key = key
        super().__init__(
            f"ragdive cache miss in record mode 'none': role {role!r}, model {model!r}, "
            f"prompt {prompt_id or '(none)'!r} (key {key[:16]}); record it with "
            f"--ragdive-record-mode=new_episodes and an API key, then commit the cache"
        )


class BudgetExceeded(LLMError, FatalRunError):
    """max_cost is spent: no new calls."""

    def __init__(self, spent: float, max_cost: float, breakdown: list[str]) -> None:
        self.spent = spent
        self.max_cost = max_cost
        self.breakdown = breakdown
        what = "; ".join(breakdown) if breakdown else "nothing priced"
        super().__init__(f"ragdive LLM budget exhausted: spent ${spent:.4f} of max_cost ${max_cost:.4f} ({what})")


class RagasNotInstalled(ImportError, FatalRunError):
    """judge_backend = "ragas" was chosen but ragas cannot be imported."""


class RagdiveCacheWarning(UserWarning):
    """A cache entry could not be read (dropped and fetched again) or a write failed."""


class InvalidJudgment(ValueError):
    """A judge output that parsed but cannot be scored (e.g. wrong verdict count)."""


#: the most characters of an input an error line quotes
QUOTE_LIMIT = 200
_NOTHING: Any = object()


def quote(value: Any, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)``, cut at ``limit`` characters with the value's length:
    ``'aaaa...'... (1048576 characters)``. A long input (a truncated file, a
    megabyte string) never becomes a megabyte error line."""
    text = repr(value)
    if len(text) <= limit + 20:
        return text
    if isinstance(value, (str, bytes)):
        size = f"{len(value)} {'characters' if isinstance(value, str) else 'bytes'}"
    else:
        size = f"{len(text)} characters as text"
    return f"{text[:limit]}... ({size})"


def cut(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``text`` as it is when short, else its first ``limit`` characters and its length."""
    return text if len(text) <= limit + 20 else f"{text[:limit]}... ({len(text)} characters)"


def fault(path: Any, message: str, *, line: int | None = None, col: int | None = None, got: Any = _NOTHING) -> str:
    """One bounded error line: ``FILE:LINE:COL: message, got <value cut by quote()>``
    (line, column and value only where known)."""
    where = str(path) + (f":{line}" if line is not None else "") + (f":{col}" if line is not None and col is not None else "")
    return f"{where}: {message}" + ("" if got is _NOTHING else f", got {quote(got)}")


def fmt_loc(loc: tuple[Any, ...] | list[Any]) -> str:
    """A pydantic error location as ``a.b.0.c`` (``(top level)`` when empty)."""
    return ".".join(str(x) for x in loc) or "(top level)"


def one_line(
    err: ValidationError,
    *,
    limit: int = 1,
    label: Callable[[tuple[Any, ...]], str] | None = None,
    inputs: bool = True,
) -> str:
    """The first ``limit`` errors of a ValidationError as ``key: message, got X`` joined by ``; ``.

    ``label(loc)`` names a location instead of ``a.b.0.c`` (e.g. ``key 'a.b'``
    or a command-line flag); ``inputs=False`` leaves out the ``got X`` part
    (for inputs that may be long or are not the user's, such as model replies)."""
    parts: list[str] = []
    for first in err.errors()[:limit]:
        msg = first["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        got = first.get("input")
        # (a JSON syntax error's input is the whole document: its line and column say where)
        unquoted = not inputs or isinstance(got, (dict, list)) or first["type"] in ("missing", "json_invalid")
        got_s = "" if unquoted else f", got {quote(got)}"
        loc = tuple(first["loc"])
        where = label(loc) if label is not None else (fmt_loc(loc) if loc else "")
        parts.append(f"{where}: {msg}{got_s}" if where else f"{msg}{got_s}")
    more = len(err.errors()) - limit
    if more > 0:
        parts.append(f"(+{more} more)")
    return "; ".join(parts)
