"""monitored(): same answers, raising targets still raise, monitoring failures counted, metrics."""

from __future__ import annotations

import asyncio
import math
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("prometheus_client")

from pytest_ragdive.core.records import Context, TargetResponse  # noqa: E402
from pytest_ragdive.online import Monitor, RagMetrics, monitored, read_logs, stage  # noqa: E402
from pytest_ragdive.online.config import OnlineConfig  # noqa: E402
from pytest_ragdive.run.target import as_async  # noqa: E402

CTX = Context(id="c#0", doc_id="c", text="Returns are accepted within 30 days.", score=3.0)
Q = [{"role": "user", "content": "How long do I have to return it?"}]


def cited(messages: list[dict[str, str]]) -> TargetResponse:
    with stage("retrieval"):
        time.sleep(0.002)
        contexts = [] if "xyzzy" in messages[-1]["content"] else [CTX]
    with stage("generation"):
        answer = "Returns are accepted within 30 days [c]." if contexts else "I can't find that in the help centre."
    return TargetResponse(answer=answer, contexts=contexts)


def sample(m: RagMetrics, name: str, **labels: str) -> float | None:
    return m.registry.get_sample_value(name, labels)


def test_sync_wrapper_returns_the_same_object_and_records_everything(tmp_path: Path) -> None:
    out = TargetResponse(answer="Returns are accepted within 30 days [c].", contexts=[CTX])
    m = RagMetrics()
    bot = monitored(lambda msgs: out, metrics=m, log=tmp_path / "log.jsonl")
    assert bot(Q, request_id="r1") is out
    assert bot.monitor.flush()
    assert sample(m, "rag_requests_total") == 1.0
    assert sample(m, "rag_retrieval_empty_total") == 0.0
    assert sample(m, "rag_citation_rate") == 1.0
    assert sample(m, "rag_response_latency_seconds_count", stage="total") == 1.0
    assert sample(m, "rag_response_latency_seconds_count", stage="retrieval") == 0.0  # not marked by this target
    log = read_logs([tmp_path / "log.jsonl"])
    assert [r.request_id for r in log.requests] == ["r1"]
    assert log.requests[0].response == out
    bot.monitor.close()


def test_stage_timings_and_empty_retrieval() -> None:
    m = RagMetrics()
    bot = monitored(cited, metrics=m, background=False)
    bot(Q)
    bot([{"role": "user", "content": "xyzzy"}])
    assert sample(m, "rag_retrieval_empty_total") == 1.0
    assert sample(m, "rag_response_latency_seconds_count", stage="retrieval") == 2.0
    assert sample(m, "rag_response_latency_seconds_sum", stage="retrieval") >= 0.004
    total = sample(m, "rag_response_latency_seconds_sum", stage="total")
    assert total >= sample(m, "rag_response_latency_seconds_sum", stage="retrieval")
    assert sample(m, "rag_citation_rate") == 0.5
    assert sample(m, "rag_citation_window_responses") == 2.0


def test_stage_outside_a_monitored_call_only_runs_the_block() -> None:
    ran = []
    with stage("retrieval"):
        ran.append(1)
    assert ran == [1]
    with pytest.raises(ValueError, match="stage must be one of"):
        with stage("rerank"):
            pass


def test_async_wrapper_is_async_and_keeps_concurrent_timings_apart() -> None:
    seen: dict[str, float | None] = {}

    async def bot(messages: list[dict[str, str]]) -> TargetResponse:
        delay = float(messages[-1]["content"])
        with stage("retrieval"):
            await asyncio.sleep(delay)
        return TargetResponse(answer="ok", contexts=[CTX])

    mon = Monitor(background=False, on_signals=lambda rid, s: seen.__setitem__(rid, s.retrieval_s))
    wrapped = monitored(bot, monitor=mon)

    async def main() -> list[TargetResponse]:
        return await asyncio.gather(
            wrapped([{"role": "user", "content": "0.05"}], request_id="slow"),
            wrapped([{"role": "user", "content": "0.0"}], request_id="fast"),
        )

    results = asyncio.run(main())
    assert [r.answer for r in results] == ["ok", "ok"]
    assert seen["slow"] is not None and seen["slow"] >= 0.05
    assert seen["fast"] is not None and seen["fast"] < 0.04


def test_a_raising_target_still_raises_and_is_counted(tmp_path: Path) -> None:
    m = RagMetrics()

    def boom(messages: list[dict[str, str]]) -> TargetResponse:
        raise KeyError("index down")

    bot = monitored(boom, metrics=m, log=tmp_path / "log.jsonl", background=False)
    with pytest.raises(KeyError, match="index down"):
        bot(Q)
    assert sample(m, "rag_requests_total") == 1.0
    assert sample(m, "rag_request_errors_total") == 1.0
    assert sample(m, "rag_monitoring_errors_total") == 0.0
    assert math.isnan(sample(m, "rag_citation_rate"))  # no response yet
    (req,) = read_logs([tmp_path / "log.jsonl"]).requests
    assert req.response is None and req.error == "KeyError: 'index down'"

    async def aboom(messages: list[dict[str, str]]) -> TargetResponse:
        raise RuntimeError("llm down")

    abot = monitored(aboom, metrics=m, background=False)
    with pytest.raises(RuntimeError, match="llm down"):
        asyncio.run(abot(Q))
    assert sample(m, "rag_request_errors_total") == 2.0


def test_a_cancelled_call_is_not_recorded() -> None:
    m = RagMetrics()

    async def slow(messages: list[dict[str, str]]) -> TargetResponse:
        await asyncio.sleep(10)
        return TargetResponse(answer="late")

    bot = monitored(slow, metrics=m, background=False)

    async def main() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(bot(Q), 0.01)

    asyncio.run(main())
    assert sample(m, "rag_requests_total") == 0.0
    assert bot.monitor.failures == 0


def test_monitoring_failures_are_counted_never_raised() -> None:
    m = RagMetrics()

    def explode(rid: str, signals: object) -> None:
        raise RuntimeError("callback bug")

    bot = monitored(lambda msgs: 42, monitor=Monitor(metrics=m, background=False))  # not a TargetResponse
    assert bot(Q) == 42  # the answer is untouched even though it cannot be scored
    bot2 = monitored(cited, monitor=Monitor(metrics=m, background=False, on_signals=explode))
    assert bot2(Q).answer.startswith("Returns")
    assert bot.monitor.failures == 1 and bot2.monitor.failures == 1
    assert sample(m, "rag_monitoring_errors_total") == 2.0


def test_a_failing_sink_leaves_the_others_working(tmp_path: Path) -> None:
    m = RagMetrics()
    seen: list[str] = []
    # the log path is a directory: every log write fails
    mon = Monitor(metrics=m, log=tmp_path, background=False, on_signals=lambda rid, s: seen.append(rid))
    bot = monitored(cited, monitor=mon)
    assert bot(Q, request_id="r1").answer.startswith("Returns")
    bot.record_feedback("outdated", request_id="r1")
    assert mon.failures == 2  # the request line and the feedback line
    assert sample(m, "rag_requests_total") == 1.0 and seen == ["r1"]
    assert sample(m, "rag_negative_feedback_total", category="outdated") == 1.0


def test_a_full_queue_drops_and_counts_instead_of_blocking() -> None:
    m = RagMetrics()
    gate = threading.Event()
    mon = Monitor(metrics=m, queue_size=2, on_signals=lambda rid, s: gate.wait(5))
    bot = monitored(cited, monitor=mon)
    t0 = time.perf_counter()
    for _ in range(6):
        bot(Q)
    assert time.perf_counter() - t0 < 1.0  # never waited on the stuck worker
    gate.set()
    assert mon.flush()
    assert mon.dropped >= 3
    assert sample(m, "rag_monitoring_dropped_total") == mon.dropped
    assert sample(m, "rag_requests_total") == 6 - mon.dropped
    mon.close()


def test_citation_rate_is_a_sliding_window() -> None:
    m = RagMetrics(OnlineConfig(citation_window=4, citation_min_responses=2))
    answers = iter(["a [c]", "b [c]", "c", "d", "e", "f"])
    bot = monitored(lambda msgs: TargetResponse(answer=next(answers), contexts=[CTX]), metrics=m, background=False)
    rates = []
    for _ in range(6):
        bot(Q)
        rates.append(sample(m, "rag_citation_rate"))
    assert rates == [1.0, 1.0, 2 / 3, 0.5, 0.25, 0.0]
    assert sample(m, "rag_citation_window_responses") == 4.0


def test_feedback_by_category_unknown_ones_count_as_other(tmp_path: Path) -> None:
    m = RagMetrics()
    bot = monitored(cited, metrics=m, log=tmp_path / "log.jsonl", background=False)
    bot.record_feedback("wrong_answer", request_id="r1")
    bot.record_feedback("wrong_answer")
    bot.record_feedback("some free text")
    assert sample(m, "rag_negative_feedback_total", category="wrong_answer") == 2.0
    assert sample(m, "rag_negative_feedback_total", category="other") == 1.0
    assert sample(m, "rag_negative_feedback_total", category="outdated") == 0.0  # exported from the start
    fb = read_logs([tmp_path / "log.jsonl"]).feedback
    assert [(f.request_id, f.category) for f in fb] == [("r1", "wrong_answer"), (None, "wrong_answer"), (None, "other")]


def test_metric_names_follow_prometheus_conventions() -> None:
    text = RagMetrics().exposition()[0].decode()
    types = dict(line.split()[2:4] for line in text.splitlines() if line.startswith("# TYPE"))
    assert types["rag_requests_total"] == "counter"
    assert types["rag_retrieval_empty_total"] == "counter"
    assert types["rag_request_errors_total"] == "counter"
    assert types["rag_negative_feedback_total"] == "counter"
    assert types["rag_response_latency_seconds"] == "histogram"
    assert types["rag_citation_rate"] == "gauge"
    assert 'rag_response_latency_seconds_bucket{le="5.0",stage="total"}' in text


def test_the_monitored_target_is_a_target_the_plugin_can_run() -> None:
    seen: list[str] = []
    bot = monitored(cited, monitor=Monitor(background=False, on_signals=lambda rid, s: seen.append(rid)))
    resp = asyncio.run(as_async(bot)(Q))
    assert resp.answer.startswith("Returns") and resp.contexts == [CTX]

    async def acited(messages: list[dict[str, str]]) -> TargetResponse:
        return cited(messages)

    abot = monitored(acited, monitor=bot.monitor)
    assert asyncio.run(as_async(abot)(Q)) == resp
    assert len(seen) == 2


def test_metrics_server_serves_and_stops() -> None:
    import urllib.request

    m = RagMetrics()
    with m.serve() as server:
        body = urllib.request.urlopen(server.url, timeout=5).read().decode()
        assert "rag_requests_total 0.0" in body
    with pytest.raises(OSError):
        urllib.request.urlopen(server.url, timeout=2)


def test_the_plugin_does_not_import_prometheus_client() -> None:
    code = (
        "import sys, pytest_ragdive.plugin.hooks, pytest_ragdive.online, pytest_ragdive.online.monitor;"
        "print('prometheus_client' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
