"""The LLM client and what it is made of, one concern per module:

- :mod:`.client`: ``LLMClient`` (the one entry point) and ``LLMResult``
- :mod:`.structured`: JSON schema / JSON mode requests, parsing, the repair call
- :mod:`.coalesce`: identical requests in flight share one fetch (in-process and across processes)
- :mod:`.retry`: per-attempt timeout, backoff with jitter, Retry-After
- :mod:`.transport`: litellm and the lean OpenAI-compatible HTTP path
- :mod:`.redact`: the API key of a call, secrets scrubbed from every outgoing text
- :mod:`.cache`: the on-disk response cache (diskcache), keys, claim markers
- :mod:`.stats`: per-role accounting, mergeable across xdist workers

Importing this package is cheap: names load lazily (PEP 562), and litellm,
aiohttp and diskcache are imported only when a request or a cache needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy import lazy_exports

_EXPORTS = {
    "LLMClient": "client",
    "LLMResult": "client",
    "LLMStats": "stats",
    "RoleStats": "stats",
    "UsageStats": "stats",
    "CacheStats": "stats",
    "ROLES": "stats",
    "parse_json_output": "structured",
    "strip_fences": "structured",
    "JSON_INSTRUCTIONS": "structured",
    "REPAIR_INSTRUCTIONS": "structured",
    "LLMCache": "cache",
    "CachedResponse": "keys",
    "cache_key": "cache",
    "BudgetExceeded": "..core.errors",
    "CacheMissError": "..core.errors",
    "LLMCallError": "..core.errors",
    "LLMConfigError": "..core.errors",
    "LLMError": "..core.errors",
}

__all__ = [
    "BudgetExceeded",
    "CacheMissError",
    "CacheStats",
    "CachedResponse",
    "JSON_INSTRUCTIONS",
    "LLMCache",
    "LLMCallError",
    "LLMClient",
    "LLMConfigError",
    "LLMError",
    "LLMResult",
    "LLMStats",
    "REPAIR_INSTRUCTIONS",
    "ROLES",
    "RoleStats",
    "UsageStats",
    "cache_key",
    "parse_json_output",
    "strip_fences",
]

if TYPE_CHECKING:
    from ..core.errors import BudgetExceeded, CacheMissError, LLMCallError, LLMConfigError, LLMError
    from .cache import LLMCache, cache_key
    from .client import LLMClient, LLMResult
    from .keys import CachedResponse
    from .stats import ROLES, CacheStats, LLMStats, RoleStats, UsageStats
    from .structured import JSON_INSTRUCTIONS, REPAIR_INSTRUCTIONS, parse_json_output, strip_fences


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
