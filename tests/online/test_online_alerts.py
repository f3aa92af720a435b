"""The alert rules: built from [tool.ragdive.online], checked and unit-tested with promtool."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml

from pytest_ragdive.cli import main
from pytest_ragdive.online.alerts import ALERT_NAMES, alert_rules, render_rules
from pytest_ragdive.online.config import OnlineConfig


def tool(name: str) -> str:
    """The binary's path; skipped when missing outside CI, a failure in CI (CI=true)."""
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{name} is not installed (Debian package 'prometheus'; .ci/run installs it)")
        pytest.skip(f"{name} not installed (apt-get install prometheus)")
    return path


def rules_of(cfg: OnlineConfig) -> dict[str, dict]:
    return {r["alert"]: r for r in alert_rules(cfg)["groups"][0]["rules"]}


def test_the_four_alerts_of_the_source_with_its_defaults() -> None:
    rules = rules_of(OnlineConfig())
    assert list(rules) == list(ALERT_NAMES)
    assert rules["RAGRetrievalEmptyRateHigh"]["for"] == "5m" and "> 0.1" in rules["RAGRetrievalEmptyRateHigh"]["expr"]
    assert rules["RAGCitationRateLow"]["for"] == "10m" and "rag_citation_rate < 0.7" in rules["RAGCitationRateLow"]["expr"]
    assert rules["RAGResponseLatencyHigh"]["for"] == "3m" and ") > 5" in rules["RAGResponseLatencyHigh"]["expr"]
    assert rules["RAGResponseLatencyHigh"]["labels"]["severity"] == "critical"
    assert "offset 1d" in rules["RAGNegativeFeedbackSpike"]["expr"] and "> 2 *" in rules["RAGNegativeFeedbackSpike"]["expr"]


def test_thresholds_and_durations_come_from_the_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pyproject.toml").write_text(
        textwrap.dedent(
            """
            [tool.ragdive.online]
            empty_retrieval_rate = 0.25
            empty_retrieval_for = "1m"
            citation_rate_min = 0.9
            latency_p95_s = 2.5
            latency_window = "2m"
            feedback_ratio = 3
            feedback_offset = "7d"
            labels = { team = "search" }
            """
        )
    )
    out = tmp_path / "rules.yaml"
    assert main(["alert-rules", "--config", str(tmp_path / "pyproject.toml"), "-o", str(out)]) == 0
    rules = {r["alert"]: r for r in yaml.safe_load(out.read_text())["groups"][0]["rules"]}
    assert "> 0.25" in rules["RAGRetrievalEmptyRateHigh"]["expr"] and rules["RAGRetrievalEmptyRateHigh"]["for"] == "1m"
    assert "< 0.9" in rules["RAGCitationRateLow"]["expr"]
    assert "[2m]" in rules["RAGResponseLatencyHigh"]["expr"] and ") > 2.5" in rules["RAGResponseLatencyHigh"]["expr"]
    assert "> 3 *" in rules["RAGNegativeFeedbackSpike"]["expr"] and "offset 7d" in rules["RAGNegativeFeedbackSpike"]["expr"]
    assert all(r["labels"]["team"] == "search" for r in rules.values())
    # without -o: the same text on stdout
    capsys.readouterr()
    assert main(["alert-rules", "--config", str(tmp_path / "pyproject.toml")]) == 0
    assert capsys.readouterr().out == out.read_text()


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ('empty_retrieval_for = "5 minutes"', "Prometheus duration"),
        ("citation_rate_min = 1.5", "less than or equal to 1"),
        ("latency_buckets = [1.0, 0.5]", "increasing"),
        ('feedback_categories = ["wrong"]', "including 'other'"),
        ("unknown_key = 1", "unknown key 'online.unknown_key'"),
    ],
)
def test_a_bad_setting_is_one_line_and_exit_4(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setting: str, message: str
) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.ragdive.online]\n{setting}\n")
    assert main(["alert-rules", "--config", str(tmp_path / "pyproject.toml")]) == 4
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err


def test_promtool_check_rules(tmp_path: Path) -> None:
    promtool = tool("promtool")
    for cfg in (OnlineConfig(), OnlineConfig(empty_retrieval_window="10s", empty_retrieval_for="0s", evaluation_interval="1s")):
        path = tmp_path / "rules.yaml"
        path.write_text(render_rules(cfg))
        res = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stdout + res.stderr
        assert "SUCCESS: 4 rules found" in res.stdout + res.stderr


# Each alert firing on one job and not on the others, on synthetic series
# (interval 1m). Expected annotations pin the values the alerts compute.
PROMTOOL_TESTS = """
rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  - name: empty retrieval rate
    interval: 1m
    input_series:
      - {series: 'rag_requests_total{job="bad"}', values: '0+10x30'}
      - {series: 'rag_retrieval_empty_total{job="bad"}', values: '0+2x30'}     # 20%
      - {series: 'rag_requests_total{job="good"}', values: '0+10x30'}
      - {series: 'rag_retrieval_empty_total{job="good"}', values: '0+0.5x30'}  # 5%
      - {series: 'rag_requests_total{job="idle"}', values: '0x30'}              # no traffic
      - {series: 'rag_retrieval_empty_total{job="idle"}', values: '0x30'}
    alert_rule_test:
      - {eval_time: 4m, alertname: RAGRetrievalEmptyRateHigh, exp_alerts: []}  # pending, not yet 5m
      - eval_time: 20m
        alertname: RAGRetrievalEmptyRateHigh
        exp_alerts:
          - exp_labels: {severity: warning, team: chatbot, job: bad}
            exp_annotations:
              summary: RAG empty-retrieval rate above 10%
              description: >-
                Empty-retrieval rate: 20%. Check the index, the embedding model (re-embed the documents
                after a model change) and query preprocessing.
  - name: citation rate
    interval: 1m
    input_series:
      - {series: 'rag_citation_rate{job="bot",instance="low"}', values: '0.5x20'}
      - {series: 'rag_citation_window_responses{job="bot",instance="low"}', values: '100x20'}
      - {series: 'rag_citation_rate{job="bot",instance="ok"}', values: '0.9x20'}
      - {series: 'rag_citation_window_responses{job="bot",instance="ok"}', values: '100x20'}
      - {series: 'rag_citation_rate{job="bot",instance="new"}', values: '0.5x20'}        # too few responses yet
      - {series: 'rag_citation_window_responses{job="bot",instance="new"}', values: '5x20'}
    alert_rule_test:
      - {eval_time: 9m, alertname: RAGCitationRateLow, exp_alerts: []}
      - eval_time: 15m
        alertname: RAGCitationRateLow
        exp_alerts:
          - exp_labels: {severity: warning, team: chatbot, job: bot, instance: low}
            exp_annotations:
              summary: RAG citation rate below 70%
              description: >-
                Citation rate over the last responses: 50%. Check the citation instruction in the prompt
                and the retrieval quality.
  - name: p95 latency
    interval: 1m
    input_series:
      # slow: every request between 5 and 10 s; fast: every request under 1 s
      - {series: 'rag_response_latency_seconds_bucket{job="slow",stage="total",le="1"}', values: '0x20'}
      - {series: 'rag_response_latency_seconds_bucket{job="slow",stage="total",le="5"}', values: '0x20'}
      - {series: 'rag_response_latency_seconds_bucket{job="slow",stage="total",le="10"}', values: '0+10x20'}
      - {series: 'rag_response_latency_seconds_bucket{job="slow",stage="total",le="+Inf"}', values: '0+10x20'}
      - {series: 'rag_response_latency_seconds_bucket{job="fast",stage="total",le="1"}', values: '0+10x20'}
      - {series: 'rag_response_latency_seconds_bucket{job="fast",stage="total",le="5"}', values: '0+10x20'}
      - {series: 'rag_response_latency_seconds_bucket{job="fast",stage="total",le="10"}', values: '0+10x20'}
      - {series: 'rag_response_latency_seconds_bucket{job="fast",stage="total",le="+Inf"}', values: '0+10x20'}
      # a slow retrieval stage alone does not count: the rule reads stage="total"
      - {series: 'rag_response_latency_seconds_bucket{job="fast",stage="retrieval",le="10"}', values: '0+10x20'}
      - {series: 'rag_response_latency_seconds_bucket{job="fast",stage="retrieval",le="+Inf"}', values: '0+10x20'}
    alert_rule_test:
      - {eval_time: 3m, alertname: RAGResponseLatencyHigh, exp_alerts: []}
      - eval_time: 10m
        alertname: RAGResponseLatencyHigh
        exp_alerts:
          - exp_labels: {severity: critical, team: chatbot, job: slow}
            exp_annotations:
              summary: RAG p95 response latency above 5 s
              description: "p95 total latency: 9.75s."
  - name: negative feedback versus the same hour yesterday
    interval: 1m
    input_series:
      # spike: 3 an hour yesterday, 12 an hour today
      - {series: 'rag_negative_feedback_total{job="spike",category="wrong_answer"}', values: '0+0.05x1440 72+0.2x120'}
      # steady: 3 an hour all along
      - {series: 'rag_negative_feedback_total{job="steady",category="wrong_answer"}', values: '0+0.05x1560'}
      # few: 8x yesterday's rate, but under 5 events an hour
      - {series: 'rag_negative_feedback_total{job="few",category="wrong_answer"}', values: '0+0.005x1440 7.2+0.04x120'}
    alert_rule_test:
      - {eval_time: 1460m, alertname: RAGNegativeFeedbackSpike, exp_alerts: []}
      - eval_time: 1500m
        alertname: RAGNegativeFeedbackSpike
        exp_alerts:
          - exp_labels: {severity: warning, team: chatbot, job: spike}
            exp_annotations:
              summary: RAG negative feedback more than 2x the same 1h 1d earlier
              description: "Negative feedback events in the last 1h: 12."
"""


def test_promtool_unit_tests_each_alert_firing_and_not(tmp_path: Path) -> None:
    promtool = tool("promtool")
    (tmp_path / "rules.yaml").write_text(render_rules(OnlineConfig()))
    (tmp_path / "tests.yaml").write_text(PROMTOOL_TESTS)
    res = subprocess.run(
        [promtool, "test", "rules", "tests.yaml"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout + res.stderr


def test_promtool_unit_tests_fail_on_a_wrong_expectation(tmp_path: Path) -> None:
    """The harness can fail: the same tests against rules with a 30% threshold miss the 20% job."""
    promtool = tool("promtool")
    (tmp_path / "rules.yaml").write_text(render_rules(OnlineConfig(empty_retrieval_rate=0.3)))
    (tmp_path / "tests.yaml").write_text(PROMTOOL_TESTS)
    res = subprocess.run([promtool, "test", "rules", "tests.yaml"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode != 0
    assert "RAGRetrievalEmptyRateHigh" in res.stdout + res.stderr
