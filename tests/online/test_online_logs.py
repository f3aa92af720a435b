"""The request log, conversations rebuilt from it, logs-to-suite and score-logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ragdive.cli import main
from pytest_ragdive.core.errors import GoldenError
from pytest_ragdive.core.records import Context, TargetResponse
from pytest_ragdive.online import monitored, read_logs
from pytest_ragdive.online.logs import FeedbackEvent, RequestEvent
from pytest_ragdive.online.replay import conversations
from pytest_ragdive.online.score_logs import percentile, summarize
from pytest_ragdive.online.to_suite import select
from pytest_ragdive.sources.golden import load_conversations, scripted_conversation

DOCS = {
    "sky": "The sky is blue on a clear day.",
    "grass": "Grass is green in spring.",
    "snow": "Snow is white and cold.",
}


def toy(messages: list[dict[str, str]]) -> TargetResponse:
    last = messages[-1]["content"].lower()
    if "explode" in last:
        raise RuntimeError("toy bot exploded")
    hits = [d for d in DOCS if d in last]
    if not hits:
        return TargetResponse(answer="I can't find that in the help centre.")
    doc = hits[-1]
    if "unsure" in last:
        return TargetResponse(answer=f"It is probably this: {DOCS[doc]}", contexts=[Context(id=doc, text=DOCS[doc])])
    if "invent" in last:
        return TargetResponse(answer="Our warranty covers meteor strikes.", contexts=[Context(id=doc, text=DOCS[doc])])
    return TargetResponse(answer=f"{DOCS[doc]} [{doc}]", contexts=[Context(id=doc, text=DOCS[doc], score=1.0)])


def talk(bot, *questions: str, cid: str | None = None) -> list[str]:
    """One client conversation: the history grows with the bot's answers; returns the request ids."""
    history: list[dict[str, str]] = []
    ids = []
    for n, q in enumerate(questions):
        history.append({"role": "user", "content": q})
        rid = f"{cid or questions[0][:8]}-{n}"
        ids.append(rid)
        try:
            answer = bot(history, request_id=rid, conversation_id=cid).answer
        except RuntimeError:
            history.pop()
            continue
        history.append({"role": "assistant", "content": answer})
    return ids


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "requests.jsonl"
    bot = monitored(toy, log=path, background=False)
    talk(bot, "Tell me about the sky.", "And the grass?", cid="healthy")
    talk(bot, "What about xyzzy?", cid="empty")
    ids = talk(bot, "Tell me about snow.", "Is snow cold?", cid="feedback")
    bot.record_feedback("wrong_answer", request_id=ids[1])
    talk(bot, "I am unsure about grass.", cid="hedged")
    talk(bot, "Invent something about snow.", cid="ungrounded")
    talk(bot, "Please explode.", "Tell me about the sky.", cid="error")
    for i in range(6):
        talk(bot, f"Tell me about the sky, question {i}.", cid=f"plain-{i}")
    return path


def test_the_log_is_the_documented_jsonl(log: Path) -> None:
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    first = lines[0]
    assert first["v"] == 1 and first["kind"] == "request" and first["time"].endswith("Z")
    assert set(first) == {"v", "kind", "time", "request_id", "conversation_id", "messages", "response", "error", "timings"}
    assert first["messages"] == [{"role": "user", "content": "Tell me about the sky."}]
    assert first["response"]["answer"] == "The sky is blue on a clear day. [sky]"
    assert set(first["timings"]) == {"retrieval_s", "generation_s", "total_s"} and first["timings"]["total_s"] >= 0
    kinds = [line["kind"] for line in lines]
    assert kinds.count("feedback") == 1
    errors = [line for line in lines if line.get("error")]
    assert [e["error"] for e in errors] == ["RuntimeError: toy bot exploded"] and errors[0]["response"] is None
    parsed = read_logs([log])
    assert len(parsed.requests) == len(lines) - 1 and isinstance(parsed.requests[0], RequestEvent)
    assert isinstance(parsed.feedback[0], FeedbackEvent)


def test_conversations_are_rebuilt_from_the_stateless_requests(log: Path) -> None:
    convs = {c.id: c for c in conversations(read_logs([log]))}
    assert len(convs) == 13  # one per client conversation (the failed call and its retry are two)
    healthy = convs["healthy"]
    assert [t.rag_input for t in healthy.turns] == ["Tell me about the sky.", "And the grass?"]
    assert [t.answer for t in healthy.turns] == ["The sky is blue on a clear day. [sky]", "Grass is green in spring. [grass]"]
    assert [t.request_id for t in healthy.turns] == ["healthy-0", "healthy-1"]
    assert healthy.turns[0].cited == ["sky"]
    assert convs["feedback"].turns[1].feedback == ["wrong_answer"]
    assert convs["feedback"].turns[0].feedback == []
    # the failed call was retried with another question: the failure stays its own conversation
    assert [t.error for t in convs["error"].turns] == ["RuntimeError: toy bot exploded"]
    assert convs["error-2"].turns[0].rag_input == "Tell me about the sky."


def test_selection_keeps_every_flagged_conversation_and_a_seeded_sample(log: Path) -> None:
    convs = conversations(read_logs([log]))
    picked = select(convs, low_grounding=0.5, sample=2, seed=0)
    why = {c.id: r for c, r in picked}
    assert why["empty"] == ["empty_retrieval (turn 1)"]
    assert why["feedback"] == ["negative_feedback (turn 2: wrong_answer)"]
    assert why["hedged"] == ["hedged (turn 1)"]
    assert why["ungrounded"] == ["low_grounding (turn 1: 0.00)"]
    assert why["error"] == ["error (turn 1)"]
    sampled = [cid for cid, r in why.items() if r == ["sampled"]]
    assert len(sampled) == 2
    assert "healthy" not in why or why["healthy"] == ["sampled"]
    # the same seed picks the same sample; all of them with a large sample
    assert select(convs, low_grounding=0.5, sample=2, seed=0) == picked
    assert len(select(convs, low_grounding=0.5, sample=100, seed=0)) == len(convs)
    assert {c.id for c, _ in select(convs, low_grounding=0.5, sample=0, seed=0)} == {
        "empty", "feedback", "hedged", "ungrounded", "error"
    }


def test_logs_to_suite_writes_drafts_that_load_once_reviewed(log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "candidates.yaml"
    assert main(["logs-to-suite", str(log), "-o", str(out), "--sample", "1", "--config", str(tmp_path / "none.toml")]) == 4
    capsys.readouterr()
    (tmp_path / "ragdive.yaml").write_text("online:\n  sample: 1\n")
    assert main(["logs-to-suite", str(log), "-o", str(out), "--config", str(tmp_path / "ragdive.yaml")]) == 0
    assert "wrote 6 of 13 conversations" in capsys.readouterr().out
    text = out.read_text()
    assert text.count("\n    reviewed: false\n") == 6
    assert "# kept for: negative_feedback (turn 2: wrong_answer)" in text
    with pytest.raises(GoldenError, match="reviewed: false"):
        load_conversations(out)
    out.write_text(text.replace("reviewed: false", "reviewed: true"))
    convs = {c.id: c for c in load_conversations(out)}
    fb = scripted_conversation(convs["feedback"], "core", 0)
    assert [t.rag_input for t in fb.turns] == ["Tell me about snow.", "Is snow cold?"]
    assert [t.ground_truth for t in fb.turns] == ["Snow is white and cold. [snow]"] * 2
    assert fb.turns[0].relevant_doc_ids == ["snow"] and fb.turns[1].question_type == "Follow-up"
    assert convs["empty"].turns[0].relevant_doc_ids == []
    # an existing file is not overwritten without --force
    assert main(["logs-to-suite", str(log), "-o", str(out)]) == 4
    assert "--force" in capsys.readouterr().err


def test_bad_logs_are_one_line_and_exit_4(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"v": 1, "kind": "request", "time": "t", "request_id": "a", "messages": []}\n{"oops": 1}\n')
    assert main(["score-logs", str(bad)]) == 4
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{bad}:2:" in err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert main(["logs-to-suite", str(empty), "-o", str(tmp_path / "c.yaml")]) == 4
    assert "no request" in capsys.readouterr().err
    assert main(["score-logs", str(tmp_path / "missing.jsonl")]) == 4
    assert "file not found" in capsys.readouterr().err
    assert main(["logs-to-suite", str(bad), "-o", str(tmp_path / "c.yaml"), "--sample", "-1"]) == 4
    assert "sample: Input should be greater than or equal to 0, got -1" in capsys.readouterr().err


def test_score_logs_summarises_the_signals(log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    s = summarize(read_logs([log]))
    assert s.requests == 15 and s.answered == 14 and s.conversations == 13
    assert s.error_rate == pytest.approx(1 / 15)
    assert s.empty_retrieval_rate == pytest.approx(1 / 14)
    assert s.hedging_rate == pytest.approx(1 / 14)
    assert s.citation_rate == pytest.approx(11 / 14)
    assert s.abstention_rate == pytest.approx(1 / 14)
    assert s.low_grounding_rate == pytest.approx(1 / 13)  # the abstention has no grounding
    assert s.negative_feedback == {"wrong_answer": 1}
    assert s.languages == {"en": 14}
    assert main(["score-logs", str(log), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["requests"] == 15
    assert main(["score-logs", str(log)]) == 0
    table = capsys.readouterr().out
    assert "empty-retrieval rate" in table and "7.1%" in table


def test_percentile_interpolates() -> None:
    assert percentile([], 0.5) is None
    assert percentile([3.0], 0.95) == 3.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert percentile([float(i) for i in range(101)], 0.95) == 95.0
