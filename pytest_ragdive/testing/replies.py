"""The fake server's default replies (:mod:`pytest_ragdive.testing`): a minimal
instance of the JSON schema a structured call asks for (:func:`example_from_schema`,
which lives in :mod:`pytest_ragdive.llm.structured` because the cost estimate uses it
too), an echo for text calls. Handlers of tests build on it for the parts they do not script."""

from __future__ import annotations

from typing import Any

from ..llm.structured import example_from_schema

__all__ = ["default_handler", "example_from_schema"]


def default_handler(body: dict[str, Any]) -> str | dict[str, Any]:
    """Echo for text calls; a minimal schema instance when a json_schema is requested."""
    rf = body.get("response_format") or {}
    if rf.get("type") == "json_schema":
        schema = (rf.get("json_schema") or {}).get("schema") or {}
        if schema.get("title") == "CombinedJudgment":  # judge_prompts = "combined": a verdict per context
            from ..metrics.judged.combined import placeholder_reply

            return placeholder_reply(schema, body.get("messages") or [])
        return example_from_schema(schema) or {}
    if rf.get("type") == "json_object":
        return {}
    msgs = body.get("messages") or []
    last = msgs[-1].get("content", "") if msgs else ""
    return f"echo: {last}" if isinstance(last, str) else "echo"
