"""The fake server's default replies (:mod:`pytest_ragdive.testing`): a minimal
instance of the JSON schema a structured call asks for, an echo for text calls.
Handlers of tests build on :func:`example_from_schema` for the parts they do not script."""

from __future__ import annotations

from typing import Any

__all__ = ["default_handler", "example_from_schema"]


def example_from_schema(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> Any:
    """A minimal instance of a JSON schema (enough for pydantic models' schemas)."""
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        ref = schema["$ref"].split("/")[-1]
        return example_from_schema(defs.get(ref, {}), defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema and schema[key]:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return example_from_schema(options[0], defs)
    typ = schema.get("type")
    if isinstance(typ, list):
        typ = next((t for t in typ if t != "null"), "null")
    if typ == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {k: example_from_schema(v, defs) for k, v in props.items()}
    if typ == "array":
        return []
    if typ == "string":
        return "fake"
    if typ == "integer":
        return 0
    if typ == "number":
        return 0.0
    if typ == "boolean":
        return True
    return None


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
