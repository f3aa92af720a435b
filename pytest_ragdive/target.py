"""The Target protocol: the chatbot under test, as a sync or async callable.

A target takes the message history (OpenAI-style list of ``{"role", "content"}``
dicts, the last item being the new user message) and returns a
:class:`~pytest_ragdive.records.TargetResponse` (or a mapping or a plain string
that converts to one).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

from .errors import TargetError
from .records import TargetResponse

History = list[dict[str, str]]


@runtime_checkable
class Target(Protocol):
    def __call__(self, messages: History) -> TargetResponse | Awaitable[TargetResponse]: ...


AsyncTarget = Callable[[History], Awaitable[TargetResponse]]


def coerce_response(value: Any) -> TargetResponse:
    if isinstance(value, TargetResponse):
        return value
    if isinstance(value, str):
        return TargetResponse(answer=value)
    if isinstance(value, dict):
        return TargetResponse.model_validate(value)
    if hasattr(value, "model_dump"):  # a TargetResponse-like pydantic model
        return TargetResponse.model_validate(value.model_dump())
    raise TargetError(f"target returned {type(value).__name__}, expected TargetResponse, dict or str")


def as_async(target: Callable[..., Any]) -> AsyncTarget:
    """Wrap a sync or async callable so the runner can await it.

    Sync targets run in a worker thread so that several conversations
    progress at once.
    """
    if not callable(target):
        raise TargetError(f"target {target!r} is not callable")
    is_async = inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(
        getattr(target, "__call__", None)  # noqa: B004
    )

    async def call(messages: History) -> TargetResponse:
        history = [dict(m) for m in messages]
        if is_async:
            value = await target(history)
        else:
            value = await asyncio.to_thread(target, history)
            if inspect.isawaitable(value):
                value = await value
        return coerce_response(value)

    return call


def load_target(spec: str) -> Callable[..., Any]:
    """Import ``package.module:attribute``. A class, or a function taking no
    arguments, is a factory: it is called and its result is the target."""
    mod_name, _, attr = spec.partition(":")
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as e:
        raise TargetError(f"cannot import target module {mod_name!r}: {e}") from None
    obj: Any = mod
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise TargetError(f"target {spec!r}: {mod_name} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if inspect.isclass(obj) or _is_factory(obj):
        obj = obj()
    return obj


def _is_factory(obj: Any) -> bool:
    """A function that takes no arguments builds the target (``make_bot``)."""
    if not inspect.isfunction(obj):
        return False
    params = inspect.signature(obj).parameters.values()
    return not any(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params) and not any(
        p.kind is p.VAR_POSITIONAL for p in params
    )
