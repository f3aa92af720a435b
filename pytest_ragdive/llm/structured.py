"""Structured output: how a pydantic schema is asked for and how a reply is read.

Modes (``cfg.llm.structured_output``)
    ``json_schema`` sends the model's JSON schema as the OpenAI
    ``response_format`` (``strict: false``); ``json_object`` asks for JSON mode
    and puts the schema into the prompt; ``prompt`` puts the schema into the
    prompt only; ``auto`` means json_schema when the transport says the model
    supports it (litellm's ``supports_response_schema``; always with the lean
    HTTP path) and json_object otherwise. A json_schema request chosen by
    ``auto`` that the server refuses with HTTP 400 switches that model to
    json_object (:class:`ModeChooser`).

Replies
    ```json fences are stripped, a JSON object wrapped in prose is found,
    and the result is validated against the schema (:func:`parse_json_output`);
    a reply that fails gets one repair call quoting the error
    (:func:`repair_messages`).
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..core.errors import one_line
from .keys import CachedResponse, canonical_json
from .transport import Request, Transport

__all__ = [
    "JSON_INSTRUCTIONS",
    "REPAIR_INSTRUCTIONS",
    "ModeChooser",
    "build_request",
    "parse_json_output",
    "parse_reply",
    "repair_messages",
    "strip_fences",
    "usable_reply",
]

T = TypeVar("T", bound=BaseModel)

JSON_INSTRUCTIONS = (
    "Reply with one JSON object and nothing else: no prose, no code fences. "
    "It must conform to this JSON schema:\n{schema}"
)
REPAIR_INSTRUCTIONS = (
    "Your previous reply could not be used: {error}\n"
    "Reply again with only one JSON object (no prose, no code fences) that conforms to this JSON schema:\n{schema}"
)

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
        return None, "schema mismatch: " + one_line(
            e, limit=5, label=lambda loc: ".".join(map(str, loc)) or "(root)", inputs=False
        )


def usable_reply(schema: type[BaseModel] | None, resp: CachedResponse) -> bool:
    """Whether a reply may be stored: any text reply; a structured one that parses
    (the parse is kept on the reply for :func:`parse_reply`)."""
    if schema is None:
        return True
    parsed = parse_json_output(resp.content, schema)
    resp._parsed = (schema, parsed)
    return parsed[0] is not None


def parse_reply(resp: CachedResponse, schema: type[T]) -> tuple[T | None, str | None]:
    """``parse_json_output`` of a reply, once: the parse :func:`usable_reply` made is
    taken (by the first caller only: callers sharing a reply get their own instances)."""
    memo, resp._parsed = resp._parsed, None
    if memo is not None and memo[0] is schema:
        return memo[1]
    return parse_json_output(resp.content, schema)


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


def build_request(
    messages: list[dict[str, Any]],
    *,
    mode: str | None,
    temperature: float,
    seed: int | None,
    schema: type[BaseModel] | None,
    json_schema: dict[str, Any] | None,
    max_tokens: int | None = None,
    messages_text: str | None = None,
    formats: Formats | None = None,
) -> Request:
    """The request of one call: sampling parameters (``max_tokens`` when capped), and for a
    structured call (``mode`` set) the response_format and/or the schema in the system prompt.
    ``messages_text``: ``canonical_json(messages)``, reused in the body when the messages go as given;
    ``formats``: the client's encoded response formats (:class:`Formats`)."""
    params: dict[str, Any] = {"temperature": temperature}
    if max_tokens:
        params["max_tokens"] = max_tokens
    if seed is not None:
        params["seed"] = seed
    msgs = messages
    fmt_text = None
    if mode is not None and json_schema is not None and schema is not None:
        if mode == "json_schema":
            params["response_format"], fmt_text = (formats or Formats()).of(schema, json_schema)
        else:
            msgs = _with_instructions(messages, JSON_INSTRUCTIONS.format(schema=canonical_json(json_schema)))
            if mode == "json_object":
                params["response_format"] = {"type": "json_object"}
    return Request(msgs, params, mode, fmt_text, messages_text if msgs is messages else None)


class Formats:
    """Schema class -> (its JSON schema, the response_format, that format's JSON text): the
    body's largest part, encoded once per schema instead of once per request. One per client
    (its :class:`.send.Sender`), bounded."""

    LIMIT = 256

    def __init__(self) -> None:
        self._by: dict[type[BaseModel], tuple[dict[str, Any], dict[str, Any], str]] = {}

    def of(self, schema: type[BaseModel], json_schema: dict[str, Any]) -> tuple[dict[str, Any], str]:
        got = self._by.get(schema)
        if got is None or got[0] is not json_schema:
            fmt = {"type": "json_schema",
                   "json_schema": {"name": _schema_name(schema), "schema": json_schema, "strict": False}}
            if len(self._by) >= self.LIMIT:
                self._by.clear()
            got = self._by[schema] = (json_schema, fmt, json.dumps(fmt))
        return got[1], got[2]


def repair_messages(
    messages: list[dict[str, Any]], reply: str, error: str, json_schema: dict[str, Any]
) -> list[dict[str, Any]]:
    """The conversation of the one repair call: the reply and what was wrong with it."""
    return [
        *messages,
        {"role": "assistant", "content": reply},
        {"role": "user", "content": REPAIR_INSTRUCTIONS.format(error=error, schema=canonical_json(json_schema))},
    ]


class ModeChooser:
    """The structured mode each model gets (``auto`` resolved once per model, and
    json_object from the first json_schema refusal on)."""

    def __init__(self) -> None:
        self._no_schema: set[str] = set()  # models that refused json_schema (auto fallback)
        self._modes: dict[str, str] = {}

    def mode(self, model: str, configured: str, transport: Transport) -> str:
        if configured != "auto":
            return configured
        if model in self._no_schema:
            return "json_object"
        mode = self._modes.get(model)
        if mode is None:
            mode = "json_schema" if transport.supports_schema(model) else "json_object"
            self._modes[model] = mode
        return mode

    def can_fall_back(self, configured: str | None, req: Request, status: int | None) -> bool:
        """Whether a refusal of ``req`` is the server refusing json_schema that ``auto`` chose."""
        return status == 400 and configured == "auto" and req.mode == "json_schema"

    def refused_schema(self, model: str) -> None:
        self._no_schema.add(model)


# -- a minimal instance of a schema (the cost estimate's placeholder reply, the fake server's default) --

_LEAVES = {"string": "fake", "integer": 0, "number": 0.0, "boolean": True}
_FILLED_LEAVES = {"string": "a fake statement", "integer": 1, "number": 1.0, "boolean": True}


def example_from_schema(schema: dict[str, Any], defs: dict[str, Any] | None = None, *, fill: bool = False) -> Any:
    """A minimal instance of a JSON schema (enough for pydantic models' schemas).

    ``fill``: an instance with content instead (two items in every array, a
    sentence in every string, defaults ignored), for a benchmark whose judges
    must have claims and statements to score."""
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        ref = schema["$ref"].split("/")[-1]
        return example_from_schema(defs.get(ref, {}), defs, fill=fill)
    if "const" in schema and not fill:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    if "default" in schema and not fill:
        return schema["default"]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema and schema[key]:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return example_from_schema(options[0], defs, fill=fill)
    typ = schema.get("type")
    if isinstance(typ, list):
        typ = next((t for t in typ if t != "null"), "null")
    if typ == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {k: example_from_schema(v, defs, fill=fill) for k, v in props.items()}
    if typ == "array":
        return [example_from_schema(schema.get("items", {}), defs, fill=fill) for _ in range(2)] if fill else []
    if fill:
        return _FILLED_LEAVES.get(str(typ), "fake")
    return _LEAVES.get(str(typ))
