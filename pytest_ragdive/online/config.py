"""``[tool.ragdive.online]``: the production monitoring settings (alert thresholds,
the monitor's windows and buckets, what ``logs-to-suite`` keeps)."""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from ..core.config_models import Strict

_PROM_DURATION_RE = re.compile(r"^(?:\d+y)?(?:\d+w)?(?:\d+d)?(?:\d+h)?(?:\d+m)?(?:\d+s)?(?:\d+ms)?$")


class OnlineConfig(Strict):
    """``[tool.ragdive.online]``: production monitoring (``pytest_ragdive.online``).

    Thresholds and durations of the four alert rules (durations are Prometheus
    durations such as ``30s``, ``5m``, ``1h``, ``1d``), the monitor's sliding
    window and histogram buckets, and how ``logs-to-suite`` picks conversations.
    """

    evaluation_interval: str = "30s"  # how often Prometheus evaluates the alert group
    labels: dict[str, str] = Field(default_factory=lambda: {"team": "chatbot"})  # labels added to every alert (beside severity)
    empty_retrieval_rate: float = Field(0.10, ge=0, le=1)  # alert when the share of responses with no context exceeds this
    empty_retrieval_window: str = "10m"  # the rate window of the empty-retrieval alert
    empty_retrieval_for: str = "5m"  # how long the empty-retrieval rate must stay high before the alert fires
    citation_rate_min: float = Field(0.70, ge=0, le=1)  # alert when the share of recent responses that cite a source falls below this
    citation_for: str = "10m"  # how long the citation rate must stay low before the alert fires
    citation_window: int = Field(100, ge=1)  # the last responses rag_citation_rate is computed over
    citation_min_responses: int = Field(20, ge=1)  # the citation alert waits until its window holds this many responses
    latency_p95_s: float = Field(5.0, gt=0)  # alert (critical) when the p95 total response latency exceeds this many seconds
    latency_window: str = "5m"  # the rate window of the latency quantile
    latency_for: str = "3m"  # how long the p95 latency must stay high before the alert fires
    latency_buckets: list[float] = Field(default_factory=lambda: [0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0])  # histogram buckets (seconds) of rag_response_latency_seconds
    feedback_ratio: float = Field(2.0, gt=0)  # alert when negative feedback exceeds this multiple of the same window one offset earlier
    feedback_window: str = "1h"  # the window negative feedback is counted over
    feedback_offset: str = "1d"  # how far back the comparison window lies
    feedback_for: str = "15m"  # how long the feedback spike must last before the alert fires
    feedback_min_events: int = Field(5, ge=0)  # the feedback alert needs at least this many events in the window
    feedback_categories: list[str] = Field(  # record_feedback categories (label values); any other is counted as other
        default_factory=lambda: ["wrong_answer", "no_answer", "outdated", "unhelpful", "unsafe", "other"]
    )
    low_grounding: float = Field(0.5, ge=0, le=1)  # logs-to-suite and score-logs: a response grounded below this is low
    sample: int = Field(5, ge=0)  # logs-to-suite: conversations kept at random beside the flagged ones
    seed: int = 0  # logs-to-suite: the seed of that sample

    @field_validator(
        "evaluation_interval", "empty_retrieval_window", "empty_retrieval_for", "citation_for",
        "latency_window", "latency_for", "feedback_window", "feedback_offset", "feedback_for",
    )
    @classmethod
    def _duration(cls, v: str) -> str:
        if not v or not _PROM_DURATION_RE.match(v):
            raise ValueError("expected a Prometheus duration such as '30s', '5m', '1h' or '1d'")
        return v

    @field_validator("latency_buckets")
    @classmethod
    def _buckets(cls, v: list[float]) -> list[float]:
        if not v or any(b <= a for a, b in zip(v, v[1:], strict=False)) or v[0] <= 0:
            raise ValueError("expected increasing positive bucket bounds in seconds")
        return v

    @field_validator("feedback_categories")
    @classmethod
    def _categories(cls, v: list[str]) -> list[str]:
        if "other" not in v or any(not re.fullmatch(r"[a-z][a-z0-9_]*", c) for c in v):
            raise ValueError("expected snake_case category names including 'other'")
        return v
