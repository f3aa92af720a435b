"""pytest-ragdive: gate CI on the quality of a RAG chatbot.

The package is imported in every pytest run of a project that installs the
plugin, so its public names load lazily (PEP 562): importing
``pytest_ragdive`` costs nothing until a name is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "Baseline": "records",
    "BaselineMetric": "records",
    "CallInfo": "records",
    "Context": "records",
    "Conversation": "records",
    "Document": "records",
    "Message": "records",
    "MetricValue": "records",
    "SuiteResult": "records",
    "TargetResponse": "records",
    "Turn": "records",
    "Verdict": "records",
    "Target": "target",
    "assert_in_band": "baseline",
    "assert_no_regression": "baseline",
    "load_baseline": "baseline",
    "GateRow": "baseline",
    "run_suite": "api",
}

__all__ = [
    "Baseline",
    "BaselineMetric",
    "CallInfo",
    "Context",
    "Conversation",
    "Document",
    "GateRow",
    "Message",
    "MetricValue",
    "SuiteResult",
    "Target",
    "TargetResponse",
    "Turn",
    "Verdict",
    "__version__",
    "assert_in_band",
    "assert_no_regression",
    "load_baseline",
    "run_suite",
]

if TYPE_CHECKING:
    from .api import run_suite
    from .baseline import GateRow, assert_in_band, assert_no_regression, load_baseline
    from .records import (
        Baseline,
        BaselineMetric,
        CallInfo,
        Context,
        Conversation,
        Document,
        Message,
        MetricValue,
        SuiteResult,
        TargetResponse,
        Turn,
        Verdict,
    )
    from .target import Target


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'pytest_ragdive' has no attribute {name!r}")
    # not cached in globals(): the module in sys.modules is the source of truth
    return getattr(importlib.import_module(f".{mod}", __name__), name)
