"""The fake server's default replies (:mod:`pytest_ragdive.testing`): a minimal
instance of the JSON schema a structured call asks for, an echo for text calls.
Handlers of tests build on :func:`example_from_schema` for the parts they do not script."""

from __future__ import annotations

from typing import Any

__all__ = ["default_handler", "example_from_schema"]


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


def default_handler(body: dict[str, Any]) -> str | dict[str, Any]:
    """Echo for text calls; a minimal schema instance when a json_schema is requested."""
    rf = body.get("response_format") or {}
    if rf.get("type") == "json_schema":
        schema = (rf.get("json_schema") or {}).get("schema") or {}
        return example_from_schema(schema) or {}
    if rf.get("type") == "json_object":
        return {}
    msgs = body.get("messages") or []
    last = msgs[-1].get("content", "") if msgs else ""
    return f"echo: {last}" if isinstance(last, str) else "echo"
