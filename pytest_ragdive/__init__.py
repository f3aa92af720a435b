"""pytest-ragdive: gate CI on the quality of a RAG chatbot.

What a user's conftest and scripts import is here: the records a target returns
and a check reads, the decorator that declares a metric of one's own (``metric``), the config, the stand-alone API, the baseline and its
assertion helpers, the ready-made HTTP target and the production wrapper.
The packages behind them are named by concern (``plugin``, ``core``, ``run``,
``sources``, ``metrics``, ``gate``, ``reports``, ``sharded``, ``llm``, ``online``,
``cli``, ``testing``; see docs/architecture.md).

The package is imported in every pytest run of a project that installs the
plugin, so its public names load lazily (PEP 562): importing
``pytest_ragdive`` costs nothing until a name is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .core.lazy import lazy_exports

__version__ = "0.1.0"

# public name -> the module (under pytest_ragdive) that defines it
_EXPORTS = {
    # records
    "CallInfo": "core.records",
    "Context": "core.records",
    "Conversation": "core.records",
    "Document": "core.records",
    "Message": "core.records",
    "TargetResponse": "core.records",
    "Turn": "core.records",
    "Verdict": "core.records",
    "Baseline": "core.results",
    "BaselineMetric": "core.results",
    "MetricValue": "core.results",
    "SuiteResult": "core.results",
    # config
    "RagdiveConfig": "core.config",
    "load_config": "core.config",
    "RecordMode": "core.config_models",
    # a team's own metrics (conftest.py, a module of metric_modules, an entry point)
    "metric": "metrics.registry",
    "MetricSpec": "metrics.registry",
    # the chatbot under test
    "Target": "run.target",
    "http_target": "run.http_target",
    "langchain_target": "run.frameworks",
    "llamaindex_target": "run.frameworks",
    "openai_target": "run.http_target",
    "serve_bot": "run.serve",
    # running outside pytest
    "run_suite": "run.api",
    # the gate
    "GateRow": "gate.rows",
    "load_baseline": "gate.baseline",
    "assert_in_band": "gate.assertions",
    "assert_no_regression": "gate.assertions",
    # production
    "monitored": "online.monitor",
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
    "MetricSpec",
    "MetricValue",
    "RagdiveConfig",
    "RecordMode",
    "SuiteResult",
    "Target",
    "TargetResponse",
    "Turn",
    "Verdict",
    "__version__",
    "assert_in_band",
    "assert_no_regression",
    "http_target",
    "langchain_target",
    "llamaindex_target",
    "load_baseline",
    "load_config",
    "metric",
    "monitored",
    "openai_target",
    "run_suite",
    "serve_bot",
]

if TYPE_CHECKING:
    from .core.config import RagdiveConfig, load_config
    from .core.config_models import RecordMode
    from .core.records import CallInfo, Context, Conversation, Document, Message, TargetResponse, Turn, Verdict
    from .core.results import Baseline, BaselineMetric, MetricValue, SuiteResult
    from .gate.assertions import assert_in_band, assert_no_regression
    from .gate.baseline import load_baseline
    from .gate.rows import GateRow
    from .metrics.registry import MetricSpec, metric
    from .online.monitor import monitored
    from .run.api import run_suite
    from .run.frameworks import langchain_target, llamaindex_target
    from .run.http_target import http_target, openai_target
    from .run.serve import serve_bot
    from .run.target import Target


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
