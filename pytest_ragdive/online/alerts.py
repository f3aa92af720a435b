"""The Prometheus alert rules of the four production alerts, and the ``alert-rules`` command.

``python -m pytest_ragdive alert-rules [-o rules.yaml] [--config pyproject.toml]``
writes one rule group, ``rag_quality_alerts``, over the metrics of
``online.prometheus`` with thresholds and durations from ``[tool.ragdive.online]``
(defaults shown):

- ``RAGRetrievalEmptyRateHigh``: empty retrievals / requests over
  ``empty_retrieval_window`` (10m) above ``empty_retrieval_rate`` (0.10) for
  ``empty_retrieval_for`` (5m).
- ``RAGCitationRateLow``: ``rag_citation_rate`` under ``citation_rate_min`` (0.70)
  for ``citation_for`` (10m), once the window holds ``citation_min_responses`` (20).
- ``RAGResponseLatencyHigh``: p95 of the total latency over ``latency_window`` (5m)
  above ``latency_p95_s`` (5 s) for ``latency_for`` (3m); severity critical.
- ``RAGNegativeFeedbackSpike``: negative feedback events in the last
  ``feedback_window`` (1h) more than ``feedback_ratio`` (2) times those of the same
  window ``feedback_offset`` (1d) earlier, and at least ``feedback_min_events`` (5),
  for ``feedback_for`` (15m). With no data a day ago (a new deployment) it stays silent.

Rates are summed per ``job`` (all replicas of one deployment); the citation gauge is
per instance.
"""

from __future__ import annotations

from typing import Any

from .config import OnlineConfig

__all__ = ["ALERT_NAMES", "GROUP_NAME", "alert_rules", "render_rules"]

GROUP_NAME = "rag_quality_alerts"
ALERT_NAMES = ("RAGRetrievalEmptyRateHigh", "RAGCitationRateLow", "RAGResponseLatencyHigh", "RAGNegativeFeedbackSpike")


def _num(x: float) -> str:
    return f"{x:g}"


def alert_rules(cfg: OnlineConfig) -> dict[str, Any]:
    """The rules file as a mapping (``groups: [...]``), ready for YAML."""
    fb = "rag_negative_feedback_total"
    now_fb = f"sum by (job) (increase({fb}[{cfg.feedback_window}]))"
    then_fb = f"sum by (job) (increase({fb}[{cfg.feedback_window}] offset {cfg.feedback_offset}))"

    def labels(severity: str) -> dict[str, str]:
        return {"severity": severity, **cfg.labels}

    rules: list[dict[str, Any]] = [
        {
            "alert": "RAGRetrievalEmptyRateHigh",
            "expr": (
                f"sum by (job) (rate(rag_retrieval_empty_total[{cfg.empty_retrieval_window}]))\n"
                f"  / sum by (job) (rate(rag_requests_total[{cfg.empty_retrieval_window}]))\n"
                f"  > {_num(cfg.empty_retrieval_rate)}"
            ),
            "for": cfg.empty_retrieval_for,
            "labels": labels("warning"),
            "annotations": {
                "summary": f"RAG empty-retrieval rate above {cfg.empty_retrieval_rate:.0%}",
                "description": (
                    "Empty-retrieval rate: {{ $value | humanizePercentage }}. Check the index, "
                    "the embedding model (re-embed the documents after a model change) and query preprocessing."
                ),
            },
        },
        {
            "alert": "RAGCitationRateLow",
            "expr": (
                f"rag_citation_rate < {_num(cfg.citation_rate_min)}\n"
                f"  and rag_citation_window_responses >= {cfg.citation_min_responses}"
            ),
            "for": cfg.citation_for,
            "labels": labels("warning"),
            "annotations": {
                "summary": f"RAG citation rate below {cfg.citation_rate_min:.0%}",
                "description": (
                    "Citation rate over the last responses: {{ $value | humanizePercentage }}. "
                    "Check the citation instruction in the prompt and the retrieval quality."
                ),
            },
        },
        {
            "alert": "RAGResponseLatencyHigh",
            "expr": (
                "histogram_quantile(0.95,\n"
                f'  sum by (job, le) (rate(rag_response_latency_seconds_bucket{{stage="total"}}[{cfg.latency_window}]))\n'
                f") > {_num(cfg.latency_p95_s)}"
            ),
            "for": cfg.latency_for,
            "labels": labels("critical"),
            "annotations": {
                "summary": f"RAG p95 response latency above {_num(cfg.latency_p95_s)} s",
                "description": "p95 total latency: {{ $value | humanizeDuration }}.",
            },
        },
        {
            "alert": "RAGNegativeFeedbackSpike",
            "expr": (
                f"{now_fb}\n  > {_num(cfg.feedback_ratio)} * {then_fb}\n"
                f"and {now_fb} >= {cfg.feedback_min_events}"
            ),
            "for": cfg.feedback_for,
            "labels": labels("warning"),
            "annotations": {
                "summary": (
                    f"RAG negative feedback more than {_num(cfg.feedback_ratio)}x the same "
                    f"{cfg.feedback_window} {cfg.feedback_offset} earlier"
                ),
                "description": f"Negative feedback events in the last {cfg.feedback_window}: " + "{{ $value | printf \"%.0f\" }}.",
            },
        },
    ]
    return {"groups": [{"name": GROUP_NAME, "interval": cfg.evaluation_interval, "rules": rules}]}


class _Literal(str):
    """A string YAML writes as a block literal (``|``)."""


def render_rules(cfg: OnlineConfig) -> str:
    """The rules file as YAML text (multi-line expressions as block literals)."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def literal(d: yaml.SafeDumper, s: str) -> yaml.Node:
        return d.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None)

    Dumper.add_representer(_Literal, literal)
    data = alert_rules(cfg)
    for group in data["groups"]:
        for rule in group["rules"]:
            rule["expr"] = _Literal(rule["expr"] + "\n")
    header = "# Generated by `python -m pytest_ragdive alert-rules` from [tool.ragdive.online].\n"
    return header + yaml.dump(data, Dumper=Dumper, sort_keys=False, width=120, allow_unicode=True)


