"""The scoring memos, scoped to a session.

Offline scoring memoises pure functions of text (tokens, windows, supports, key facts,
personal-data scans, HTML escaping), as the judges' prompts memoise fencing untrusted text
(``llm/prompts._fence_short``): each is bounded and keyed by the text itself, so an
entry is never stale, but a module-level cache lives as long as the process, and its
entries and memory would outlive the pytest session that filled them (pytester's
in-process runs, a command line calling :func:`pytest_ragdive.run_suite` several times).
The project's rule is no global mutable state outside the session: :func:`memo` is that
cache, registered here, and the session clears every one at its start and its end
(``plugin/hooks.py``; ``run_suite`` inside :class:`MemoScope`).

:func:`memo` returns ``functools.lru_cache``'s own wrapper (no frame of ours around it):
a call costs exactly the C lru_cache's lookup. The registry is filled at import time
only, as a plugin registry is. Left out, as per-process resources or read-only data
rather than session state: the prompt files (``llm/prompts.py``), the bundled attack and
poison data (``attacks/``), the ragas import (``metrics/ragas_backend.py``), the embedded
model (``metrics/semantic.embedder``: its rows per text are the session's, emptied with the
memos through :func:`hold_with_memos`) and the combined judge's reply classes
(``metrics/judged/combined.py``); ``tests/core/test_memo.py`` holds the list.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import TracebackType
from typing import Any, ParamSpec, Protocol, TypeVar

__all__ = ["MemoScope", "Memoised", "clear_memos", "hold_with_memos", "memo", "memo_sizes"]

P = ParamSpec("P")
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Memoised(Protocol[P, T_co]):
    """A memoised function as mypy sees it: the function's own signature, and lru_cache's
    ``cache_info``/``cache_clear`` (typeshed's ``_lru_cache_wrapper`` keeps only the return type)."""

    __module__: str
    __qualname__: str

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> T_co: ...

    def cache_info(self) -> functools._CacheInfo: ...

    def cache_clear(self) -> None: ...


_MEMOS: list[Memoised[..., Any]] = []


def memo(maxsize: int) -> Callable[[Callable[P, T]], Memoised[P, T]]:
    """``functools.lru_cache(maxsize=maxsize)``, registered so that the session clears it."""

    def decorate(fn: Callable[P, T]) -> Memoised[P, T]:
        cached: Memoised[P, T] = functools.lru_cache(maxsize=maxsize)(fn)
        name = _name(cached)
        # a module imported again (pytester's in-process runs restore sys.modules) replaces its memos
        _MEMOS[:] = [m for m in _MEMOS if _name(m) != name]
        _MEMOS.append(cached)
        return cached

    return decorate


def _name(m: Memoised[..., Any]) -> str:
    return f"{m.__module__}.{m.__qualname__}"


#: other session caches an object keeps of its own (the embedded model's per-text rows):
#: name -> (its size, how to empty it), emptied with the memos
_HELD: dict[str, tuple[Callable[[], int], Callable[[], None]]] = {}


def hold_with_memos(name: str, size: Callable[[], int], clear: Callable[[], None]) -> None:
    """A cache an object of the process keeps (not a function's): sized and emptied with the memos."""
    _HELD[name] = (size, clear)


def clear_memos() -> None:
    """Empty every memo (at a session's start and end)."""
    for m in _MEMOS:
        m.cache_clear()
    for _, clear in _HELD.values():
        clear()


def memo_sizes() -> dict[str, int]:
    """Each memo's entries, by qualified name (``module.function``)."""
    return {**{_name(m): m.cache_info().currsize for m in _MEMOS}, **{k: size() for k, (size, _) in _HELD.items()}}


class MemoScope:
    """A run outside pytest (:func:`pytest_ragdive.run_suite`): it starts and ends with empty memos."""

    def __enter__(self) -> MemoScope:
        clear_memos()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        clear_memos()
