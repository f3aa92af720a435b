"""What the cache stores: keys (sha256 of the canonical JSON of everything that can
change an answer; see :mod:`.cache` for what goes in and what never does) and values
(:class:`CachedResponse`)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, PrivateAttr

__all__ = ["KEY_VERSION", "CachedResponse", "cache_key", "canonical_json", "key_extra"]

#: bump when the meaning of a key changes (e.g. the client's JSON instructions)
KEY_VERSION = 1


def canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def cache_key(
    *,
    model: str,
    messages: list[dict[str, Any]],
    temperature: float | None,
    seed: int | None,
    schema: dict[str, Any] | None = None,
    structured: str | None = None,
    prompt_id: str | None = None,
    prompt_version: str | None = None,
    extra: dict[str, Any] | None = None,
    schema_text: str | None = None,
    messages_text: str | None = None,
) -> str:
    """sha256 hex of the canonical JSON of everything that can change the answer.

    ``schema_text``: ``canonical_json(schema)`` when the caller keeps it (the client does,
    per schema: it is most of a key's JSON); ``messages_text``: ``canonical_json(messages)``
    when the caller made it (the client does, and sends the same text in the request body). The text is put together field by field in
    ``sort_keys`` order, the very text ``canonical_json`` of the whole dict gives (so keys
    never change; tests/llm/test_cache.py checks both ways)."""
    c = canonical_json
    parts = [f'"extra":{c(extra)}'] if extra else []
    parts += [
        f'"messages":{messages_text if messages_text is not None else c(messages)}',
        f'"model":{c(model)}',
        f'"prompt_id":{c(prompt_id)}',
        f'"prompt_version":{c(prompt_version)}',
        f'"schema":{schema_text if schema_text is not None and schema is not None else c(schema)}',
        f'"seed":{c(seed)}',
        f'"structured":{c(structured if schema is not None else None)}',
        f'"temperature":{c(temperature)}',
        f'"v":{KEY_VERSION}',
    ]
    return hashlib.sha256(("{" + ",".join(parts) + "}").encode("utf-8")).hexdigest()


def key_extra(repair: bool, max_tokens: int | None, tag: str | None = None) -> dict[str, Any] | None:
    """The key's ``extra`` part of one call: the repair call, an output cap, a caller's tag
    (``judge_prompts = "combined"``: its judge calls never share an entry with the
    per-metric mode's); each absent when unset, so that a plain call keeps its key."""
    extra: dict[str, Any] = {}
    if repair:
        extra["repair"] = 1
    if max_tokens:
        extra["max_tokens"] = max_tokens
    if tag:
        extra["tag"] = tag
    return extra or None


class CachedResponse(BaseModel):
    """What the cache keeps of one chat completion."""

    model_config = ConfigDict(extra="ignore")

    content: str
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    cost_usd: float | None = None
    created: float = 0.0
    # (schema, parse result) of a structured reply, parsed once when it was checked for storing
    # and taken by the call that asked for it; never stored
    _parsed: Any = PrivateAttr(default=None)
