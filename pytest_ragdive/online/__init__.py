"""Production signals: the target the tests use, monitored on live traffic.

- :mod:`.signals`: ``request_signals`` - the quality signals of one request (pure).
- :mod:`.monitor`: ``monitored(target, ...)`` and ``stage(name)`` - the wrapper.
- :mod:`.prometheus`: ``RagMetrics`` - the Prometheus metrics (needs ``prometheus_client``,
  the ``online`` extra).
- :mod:`.alerts`: the four alert rules (``alert-rules`` command).
- :mod:`.logs`: the JSONL request log; :mod:`.to_suite` (``logs-to-suite``) and
  :mod:`.score_logs` (``score-logs``) read it.

Names load lazily: importing this package imports neither prometheus_client nor the
metrics modules until a name is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy import lazy_exports

_EXPORTS = {
    "RequestSignals": "signals",
    "request_signals": "signals",
    "Monitor": "monitor",
    "monitored": "monitor",
    "stage": "monitor",
    "RagMetrics": "prometheus",
    "alert_rules": "alerts",
    "render_rules": "alerts",
    "read_logs": "logs",
    "RequestEvent": "logs",
    "FeedbackEvent": "logs",
}

__all__ = [
    "FeedbackEvent",
    "Monitor",
    "RagMetrics",
    "RequestEvent",
    "RequestSignals",
    "alert_rules",
    "monitored",
    "read_logs",
    "render_rules",
    "request_signals",
    "stage",
]

if TYPE_CHECKING:
    from .alerts import alert_rules, render_rules
    from .logs import FeedbackEvent, RequestEvent, read_logs
    from .monitor import Monitor, monitored, stage
    from .prometheus import RagMetrics
    from .signals import RequestSignals, request_signals


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
