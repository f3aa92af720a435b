"""Prometheus metrics of a monitored chatbot (``prometheus_client``, the ``online`` extra).

Every metric lives in the :class:`RagMetrics` object's own ``CollectorRegistry``
(pass ``registry=prometheus_client.REGISTRY`` to use the process-wide one):

=======================================  =========  ==============================================
metric                                   type       meaning
=======================================  =========  ==============================================
rag_requests_total                       counter    target calls (those that raised included)
rag_request_errors_total                 counter    target calls that raised
rag_retrieval_empty_total                counter    responses with no retrieved context
rag_hedged_responses_total               counter    responses with a hedging phrase
rag_response_latency_seconds{stage}      histogram  stage durations; stage = retrieval, generation,
                                                    total (retrieval/generation when the target
                                                    marks them with ``online.stage``)
rag_response_grounding                   histogram  offline faithfulness of answers in their contexts
rag_citation_rate                        gauge      share of the last ``citation_window`` responses
                                                    that cite a source (NaN before the first)
rag_citation_window_responses            gauge      responses in that window (the alert waits for
                                                    ``citation_min_responses``)
rag_negative_feedback_total{category}    counter    ``record_feedback`` calls; categories outside
                                                    ``feedback_categories`` count as ``other``
rag_monitoring_errors_total              counter    failures inside the monitoring (never raised)
rag_monitoring_dropped_total             counter    requests not recorded because the queue was full
=======================================  =========  ==============================================
"""

from __future__ import annotations

import math
import threading
from collections import deque
from types import TracebackType
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import start_http_server

from .config import OnlineConfig
from .signals import RequestSignals

__all__ = ["STAGES", "MetricsServer", "RagMetrics"]

#: the ``stage`` label values of ``rag_response_latency_seconds``
STAGES: tuple[str, ...] = ("retrieval", "generation", "total")
_GROUNDING_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


class RagMetrics:
    """The Prometheus metrics of one monitored target; thread-safe."""

    def __init__(self, config: OnlineConfig | None = None, *, registry: CollectorRegistry | None = None) -> None:
        self.config = config or OnlineConfig()
        self.registry = registry if registry is not None else CollectorRegistry()
        reg = self.registry
        self.requests = Counter("rag_requests", "Target calls, those that raised included", registry=reg)
        self.errors = Counter("rag_request_errors", "Target calls that raised", registry=reg)
        self.retrieval_empty = Counter("rag_retrieval_empty", "Responses with no retrieved context", registry=reg)
        self.hedged = Counter("rag_hedged_responses", "Responses containing a hedging phrase", registry=reg)
        self.latency = Histogram(
            "rag_response_latency_seconds",
            "Duration of each pipeline stage of a response",
            ["stage"],
            buckets=self.config.latency_buckets,
            registry=reg,
        )
        self.grounding = Histogram(
            "rag_response_grounding",
            "Offline faithfulness of answers in their retrieved contexts",
            buckets=_GROUNDING_BUCKETS,
            registry=reg,
        )
        self.citation_rate = Gauge(
            "rag_citation_rate", "Share of the most recent responses that cite a source", registry=reg
        )
        self.citation_window = Gauge(
            "rag_citation_window_responses", "Responses in the citation-rate window", registry=reg
        )
        self.negative_feedback = Counter(
            "rag_negative_feedback", "Negative user feedback events", ["category"], registry=reg
        )
        self.monitoring_errors = Counter(
            "rag_monitoring_errors", "Failures inside the monitoring (never raised to the caller)", registry=reg
        )
        self.monitoring_dropped = Counter(
            "rag_monitoring_dropped", "Requests not recorded because the monitoring queue was full", registry=reg
        )
        # every label value exported from the start, so rates see a 0 -> n step
        for s in STAGES:
            self.latency.labels(stage=s)
        for c in self.config.feedback_categories:
            self.negative_feedback.labels(category=c)
        self.citation_rate.set(math.nan)
        self._cited: deque[bool] = deque(maxlen=self.config.citation_window)
        self._lock = threading.Lock()

    def observe(self, signals: RequestSignals) -> None:
        """Record one answered request."""
        self.requests.inc()
        self._observe_latency(signals.retrieval_s, signals.generation_s, signals.total_s)
        if signals.empty_retrieval:
            self.retrieval_empty.inc()
        if signals.hedging:
            self.hedged.inc()
        if signals.grounding is not None:
            self.grounding.observe(signals.grounding)
        with self._lock:
            self._cited.append(signals.has_citation)
            n = len(self._cited)
            rate = sum(self._cited) / n
        self.citation_rate.set(rate)
        self.citation_window.set(n)

    def observe_error(self, retrieval_s: float | None, generation_s: float | None, total_s: float | None) -> None:
        """Record one request whose target raised."""
        self.requests.inc()
        self.errors.inc()
        self._observe_latency(retrieval_s, generation_s, total_s)

    def _observe_latency(self, retrieval_s: float | None, generation_s: float | None, total_s: float | None) -> None:
        for name, value in zip(STAGES, (retrieval_s, generation_s, total_s), strict=True):
            if value is not None:
                self.latency.labels(stage=name).observe(value)

    def feedback_category(self, category: str) -> str:
        """The label value a feedback category is counted under (``other`` when unknown)."""
        return category if category in self.config.feedback_categories else "other"

    def record_feedback(self, category: str) -> str:
        """Count one negative feedback event; returns the category it was counted under."""
        label = self.feedback_category(category)
        self.negative_feedback.labels(category=label).inc()
        return label

    def monitoring_failure(self) -> None:
        self.monitoring_errors.inc()

    def dropped(self) -> None:
        self.monitoring_dropped.inc()

    def exposition(self) -> tuple[bytes, str]:
        """The text exposition of every metric and its content type (for a ``/metrics`` route)."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST

    def serve(self, port: int = 0, addr: str = "127.0.0.1") -> MetricsServer:
        """Serve ``/metrics`` from a background HTTP server (port 0: a free port)."""
        server, thread = start_http_server(port, addr=addr, registry=self.registry)
        return MetricsServer(server, thread)


class MetricsServer:
    """A running metrics HTTP server; ``close()`` (or leaving the ``with`` block) stops it."""

    def __init__(self, server: Any, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread
        self.host, self.port = server.server_address[:2]

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> MetricsServer:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
