"""``python -m pytest_ragdive shard``: two LLM steps per question (fake server), checks, review marks, cache."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pytest_ragdive.cli import main
from pytest_ragdive.sharded.questions import load_sharded
from pytest_ragdive.testing import FAKE_KEY_ENV, FAKE_MODEL, FakeLLMServer

QUESTIONS = [
    {"id": "q-rate", "question": "How many API requests per minute does the Business plan allow?", "answer": "600",
     "supporting_doc_ids": ["api-rate-limits"]},
    {"question_id": "q-leak", "question": "Is the Pro price $12 per month?", "expected_answer": "$12 per month",
     "relevant_doc_ids": ["plans-and-pricing"]},
]


def handler(body: dict[str, Any]) -> dict[str, Any]:
    text = "\n".join(m["content"] for m in body["messages"])
    if "You review shards" in text:  # the judged check (P1, P2, P5)
        if "Business" in text:
            return {"dropped": [], "added": [], "intermediate": [], "packed": [], "reason": "fine"}
        return {"dropped": ["Pro"], "added": [], "intermediate": [], "packed": [3, 9], "reason": "loses the plan"}
    if "Divide the question's informational content" in text:
        if "Business" in text:
            return {"segments": ["It is the Business plan.", "How many API requests per minute does the plan allow?"]}
        return {"segments": ["Is the price per month?", "It is $12 per month.", "It is the Pro plan."]}
    if "Business" in text:
        return {"intent_index": 1, "opening": "How many API requests per minute does the plan allow?"}
    return {"intent_index": 0, "opening": "Is the price per month?"}


def test_shard_command_proposes_checks_and_marks_for_review(tmp_path: Path) -> None:
    src = tmp_path / "questions.jsonl"
    src.write_text("\n".join(json.dumps(q) for q in QUESTIONS) + "\n")
    out = tmp_path / "sharded.jsonl"
    os.environ.setdefault(FAKE_KEY_ENV, "sk-fake")
    with FakeLLMServer(handler) as server:
        argv = ["shard", str(src), "-o", str(out), "--model", FAKE_MODEL, "--api-base", server.url,
                "--api-key-env", FAKE_KEY_ENV, "--cache-dir", str(tmp_path / "cache"), "--transport", "openai_http"]
        assert main(argv) == 0
        assert server.request_count == 6  # segment + intent + the judged review per question
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert [r["id"] for r in rows] == ["q-rate", "q-leak"]
        assert all(r["reviewed"] is False for r in rows)
        assert [s["shard"] for s in rows[0]["shards"]] == [
            "How many API requests per minute does the plan allow?", "It is the Business plan."]
        assert rows[0]["notes"].startswith("passes the mechanical checks")
        assert "P4: the follow-ups come in the question's dependency order" in rows[0]["notes"]  # for the reviewer
        # the deterministic flags (API in the intent) and no judged one
        assert rows[0]["flags"] == ["P3: the first shard names API: make sure it is not an identifying specific"]
        assert "contains the answer" in rows[1]["notes"]  # "It is $12 per month." leaks the answer
        assert "judged P1: no shard carries 'Pro'" in rows[1]["flags"]
        assert "judged P5: shard 3 packs more than one clue" in rows[1]["flags"]
        assert not any("shard 9" in f for f in rows[1]["flags"])  # an id that is not a follow-up is ignored
        notes: list[str] = []
        assert load_sharded(out, notes=notes) == []  # nothing is used before review
        assert "not reviewed" in notes[0]

        rows[0]["reviewed"] = True  # a person accepts the first one
        out.write_text("".join(json.dumps(r) + "\n" for r in rows))
        assert main(argv) == 0
        assert server.request_count == 6  # the unreviewed one again: served from the cache
        assert [q.id for q in load_sharded(out)] == ["q-rate"]


def test_shard_command_rejects_a_row_without_answer(tmp_path: Path, capsys: Any) -> None:
    src = tmp_path / "questions.jsonl"
    src.write_text(json.dumps({"id": "q", "question": "What?"}) + "\n")
    code = main(["shard", str(src), "-o", str(tmp_path / "o.jsonl"), "--model", FAKE_MODEL])
    assert code == 4
    assert "questions.jsonl:1: a question needs an id and an answer" in capsys.readouterr().err
