"""The example bot in production (example_project/serve.py, Starlette) and the loop back to CI:
production log -> logs-to-suite -> review -> a scripted suite the same bot passes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("prometheus_client")
pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

from pytest_ragdive.cli import main  # noqa: E402
from pytest_ragdive.core.config import RagdiveConfig
from pytest_ragdive.core.config_models import SuiteConfig  # noqa: E402
from pytest_ragdive.run.api import run_suite  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "example_project"
if str(EXAMPLE) not in sys.path:
    sys.path.insert(0, str(EXAMPLE))

from example_rag import make_bot  # noqa: E402
from serve import create_app  # noqa: E402


def chat(client: TestClient, *questions: str, cid: str) -> list[dict]:
    history: list[dict[str, str]] = []
    out = []
    for q in questions:
        history.append({"role": "user", "content": q})
        res = client.post("/chat", json={"messages": history, "conversation_id": cid})
        assert res.status_code == 200, res.text
        out.append(res.json())
        history.append({"role": "assistant", "content": res.json()["answer"]})
    return out


def metric(text: str, line_start: str) -> float:
    (line,) = [ln for ln in text.splitlines() if ln.startswith(line_start + " ")]
    return float(line.split()[-1])


@pytest.fixture(scope="module")
def bot():
    return make_bot()


def test_the_app_answers_as_the_bot_does_and_serves_metrics(bot, tmp_path: Path) -> None:
    app = create_app(bot, log=str(tmp_path / "requests.jsonl"))
    with TestClient(app) as client:
        (first,) = chat(client, "How many API requests per minute does the Pro plan allow?", cid="a")
        direct = bot([{"role": "user", "content": "How many API requests per minute does the Pro plan allow?"}])
        assert first["answer"] == direct.answer and first["citations"] == direct.citations
        chat(client, "xyzzy plugh?", cid="b")
        assert client.post("/feedback", json={"request_id": first["request_id"], "category": "wrong_answer"}).status_code == 204
        assert client.post("/chat", json={"nothing": 1}).status_code == 422
        app.state.bot.monitor.flush()
        res = client.get("/metrics")
        assert res.status_code == 200 and res.headers["content-type"].startswith("text/plain")
        text = res.text
    assert metric(text, "rag_requests_total") == 2.0
    assert metric(text, "rag_retrieval_empty_total") == 1.0
    assert metric(text, 'rag_negative_feedback_total{category="wrong_answer"}') == 1.0
    assert metric(text, 'rag_response_latency_seconds_count{stage="retrieval"}') == 2.0  # the bot marks its stages
    assert metric(text, 'rag_response_latency_seconds_count{stage="generation"}') == 2.0
    assert metric(text, "rag_citation_rate") == 0.5
    assert (tmp_path / "requests.jsonl").read_text().count('"kind":"request"') == 2


def test_round_trip_production_log_to_a_suite(bot, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "requests.jsonl"
    app = create_app(bot, log=str(log))
    with TestClient(app) as client:
        chat(client, "Can I get a full refund if I return the Lumio Hub?", "How long is the inspection once it arrives?", cid="hub")
        replies = chat(client, "How many API requests per minute does the Pro plan allow?", "And on the Business plan?", cid="api")
        client.post("/feedback", json={"request_id": replies[1]["request_id"], "category": "outdated"})
        chat(client, "Do you ship to Atlantis by zeppelin?", cid="atlantis")
        chat(client, "xyzzy plugh?", cid="gibberish")
    # the app's shutdown flushed the log
    cands = tmp_path / "candidates.yaml"
    assert main(["logs-to-suite", str(log), "-o", str(cands), "--config", str(tmp_path / "x.yaml")]) == 4
    assert "--config file" in capsys.readouterr().err
    (tmp_path / "ragdive.yaml").write_text("online: {}\n")
    assert main(["logs-to-suite", str(log), "-o", str(cands), "--sample", "2", "--config", str(tmp_path / "ragdive.yaml")]) == 0
    assert "wrote 4 of 4 conversations" in capsys.readouterr().out
    text = cands.read_text()
    assert "  - id: gibberish\n" in text and "empty_retrieval (turn 1)" in text
    assert "negative_feedback (turn 2: outdated)" in text
    assert main(["score-logs", str(log)]) == 0
    assert "requests" in capsys.readouterr().out

    cfg = RagdiveConfig(suites={"core": SuiteConfig(conversations=[str(cands)])}, base_dir=str(tmp_path))
    with pytest.raises(Exception, match="reviewed: false"):
        run_suite(bot, cfg)
    # the review: here the drafts are accepted as they are
    cands.write_text(text.replace("reviewed: false", "reviewed: true"))
    convs: list = []
    result = run_suite(bot, cfg, conversations=convs)
    assert result.conversations == 4 and result.errors == 0
    # the same bot reproduces every production answer it gave
    assert result.value("answer_f1") == 1.0
    # and a regression of the bot shows on the new cases
    forgetful = make_bot(history="none", top_k=1)
    assert run_suite(forgetful, cfg).value("answer_f1") < 1.0


def test_suite_results_of_older_results_files_still_load() -> None:
    from pytest_ragdive.core.results import SuiteResult

    old = SuiteResult.model_validate({"suite": "core", "meta": {"notes": ["a note"]}})
    assert old.notes == ["a note"]
    assert SuiteResult.model_validate({"suite": "core", "meta": {}}).notes == []
    assert "meta" not in SuiteResult(suite="core").model_dump()
