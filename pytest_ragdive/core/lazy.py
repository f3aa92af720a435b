"""Lazy public names (PEP 562), the one mechanism of the package's ``__init__`` modules:
a name is imported from its module when first used, so importing a package costs
nothing until then (the plugin is imported in every pytest run of a user's project)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` whose public names live in the modules
    ``exports`` maps them to (relative to the package: ``"client"``, ``"..core.errors"``).
    Nothing is cached in the package's globals: the module in sys.modules is the source
    of truth."""

    def __getattr__(name: str) -> Any:
        mod = exports.get(name)
        if mod is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(mod if mod.startswith(".") else f".{mod}", package), name)

    def __dir__() -> list[str]:
        import sys

        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
