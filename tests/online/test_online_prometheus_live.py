"""A real scrape: the Prometheus server (Debian's `prometheus`) on loopback scrapes the
monitored example bot, and the empty-retrieval alert goes pending or firing.

Skipped when the binary is missing outside CI; in CI (CI=true) a missing binary fails.
Everything the test starts, it stops, also on failure.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("prometheus_client")

from pytest_ragdive.online import RagMetrics, monitored, render_rules  # noqa: E402
from pytest_ragdive.online.config import OnlineConfig  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "example_project"
if str(EXAMPLE) not in sys.path:
    sys.path.insert(0, str(EXAMPLE))

from example_rag import make_bot  # noqa: E402

pytestmark = pytest.mark.slow  # starts processes of its own

DEADLINE_S = 20.0


def binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{name} is not installed (Debian package 'prometheus'; .ci/run installs it)")
        pytest.skip(f"{name} not installed (apt-get install prometheus)")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def api(base: str, path: str, **params: str) -> dict:
    url = f"{base}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
    with urllib.request.urlopen(url, timeout=2) as res:
        return json.loads(res.read())


def test_prometheus_scrapes_the_bot_and_the_empty_retrieval_alert_goes_off(tmp_path: Path) -> None:
    prometheus = binary("prometheus")
    metrics = RagMetrics()
    bot = monitored(make_bot(), metrics=metrics)
    server = metrics.serve()
    log = open(tmp_path / "prometheus.log", "wb")  # noqa: SIM115 - closed in finally
    proc: subprocess.Popen[bytes] | None = None
    try:
        # test-sized rules: 5 s windows, 1 s evaluation
        cfg = OnlineConfig(evaluation_interval="1s", empty_retrieval_window="5s", empty_retrieval_for="1s")
        (tmp_path / "rules.yaml").write_text(render_rules(cfg))
        (tmp_path / "prometheus.yml").write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "rule_files: [rules.yaml]\n"
            "scrape_configs:\n"
            f"  - job_name: ragbot\n    static_configs: [{{targets: ['127.0.0.1:{server.port}']}}]\n"
        )
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        proc = subprocess.Popen(
            [
                prometheus,
                f"--config.file={tmp_path / 'prometheus.yml'}",
                f"--storage.tsdb.path={tmp_path / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        deadline = time.monotonic() + DEADLINE_S
        ready = False
        while time.monotonic() < deadline and not ready:
            assert proc.poll() is None, (tmp_path / "prometheus.log").read_text()
            try:
                ready = urllib.request.urlopen(f"{base}/-/ready", timeout=1).status == 200
            except OSError:
                time.sleep(0.1)
        assert ready, "prometheus did not get ready"

        # a bounded burst: one in three questions retrieves nothing (33% > 10%)
        questions = ["How many API requests per minute does the Pro plan allow?", "xyzzy plugh?", "How do I reset my camera?"]
        sent, state, series = 0, None, []
        while time.monotonic() < deadline and state not in ("pending", "firing"):
            for q in questions:
                bot([{"role": "user", "content": q}])
                sent += 1
            time.sleep(0.25)
            series = api(base, "/api/v1/query", query="rag_requests_total")["data"]["result"]
            alerts = [a for a in api(base, "/api/v1/alerts")["data"]["alerts"] if a["labels"]["alertname"] == "RAGRetrievalEmptyRateHigh"]
            state = alerts[0]["state"] if alerts else None
        assert state in ("pending", "firing"), f"alert state {state!r} after {sent} requests"
        assert alerts[0]["labels"]["job"] == "ragbot" and alerts[0]["labels"]["severity"] == "warning"
        assert series and series[0]["metric"]["job"] == "ragbot" and float(series[0]["value"][1]) > 0
        empty = api(base, "/api/v1/query", query="rag_retrieval_empty_total")["data"]["result"]
        assert float(empty[0]["value"][1]) > 0
        latency = api(base, "/api/v1/query", query='rag_response_latency_seconds_count{stage="retrieval"}')["data"]["result"]
        assert latency and float(latency[0]["value"][1]) > 0
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        log.close()
        server.close()
        bot.monitor.close()
    assert proc.returncode is not None
