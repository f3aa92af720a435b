"""The sharded diagnosis in real pytest sessions (pytester): one item per question,
condition and run, the decomposition in the terminal and summary.md, results.json
with the revealed shards, and sharded_gap gated against a baseline."""

from __future__ import annotations

import json
import textwrap

import pytest
from conftest import results

BOT = textwrap.dedent(
    '''
    import os
    import pytest
    from pytest_ragdive import Context, TargetResponse

    FACTS = {"sky": "blue", "grass": "green"}

    def bot(messages):
        users = [m["content"].lower() for m in messages if m["role"] == "user"]
        text = users[-1] if os.environ.get("TOY_FORGET") else " ".join(users)
        for thing, colour in FACTS.items():
            if thing in text and "colour" in text:
                ctx = Context(id=thing + "#0", doc_id=thing, text=f"The {thing} is {colour}.")
                return TargetResponse(answer=f"The {thing} is {colour}.\\nAnswer: {colour}", contexts=[ctx])
        return TargetResponse(answer="Which thing do you mean?")

    @pytest.fixture(scope="session")
    def ragdive_target():
        return bot
    '''
)

QUESTIONS = [
    {"id": "sq-sky", "question": "What colour is the sky?", "answer": "blue", "supporting_doc_ids": ["sky"],
     "shards": [{"shard_id": 1, "shard": "What colour is it?"}, {"shard_id": 2, "shard": "It is the sky."}]},
    {"id": "sq-grass", "question": "What colour is the grass?", "answer": "green", "supporting_doc_ids": ["grass"],
     "shards": [{"shard_id": 1, "shard": "What colour is it?"}, {"shard_id": 2, "shard": "It is the grass."}]},
]

PYPROJECT = """
[tool.ragdive]
report_dir = "report"
[tool.ragdive.gate]
sharded_gap = 0.05
[tool.ragdive.suites.core]
sharded = ["data/sharded.jsonl"]
sharded_conditions = ["full", "concat", "sharded"]
sharded_answer_line = true
"""


@pytest.fixture
def sharded_toy(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("TOY_FORGET", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    pytester.makeconftest(BOT)
    data = pytester.mkdir("data")
    (data / "sharded.jsonl").write_text("\n".join(json.dumps(q) for q in QUESTIONS) + "\n")
    pytester.makefile(".toml", pyproject=PYPROJECT)
    return pytester


def test_sharded_items_report_and_gate(sharded_toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    first = sharded_toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline", "-p", "no:cacheprovider", "-v")
    first.assert_outcomes(passed=2 * 3 * 5)  # questions x conditions x the sharded part's 5 runs
    first.stdout.fnmatch_lines(["*sq-sky.sharded?run4?*PASSED*", "*sharded diagnosis, suite core (5 runs*",
                                "*SHARDED*1.000*", "*sharded_gap (FULL - SHARDED): +0.000*"])
    stored = json.loads((sharded_toy.path / "b.json").read_text())["suites"]["core"]
    assert stored["sharded_gap"]["max"] == 0.0 and stored["sharded_gap"]["runs"] == 5
    assert stored["sharded_gap"]["direction"] == "lower"
    data = results(sharded_toy)
    conv = next(c for c in data["conversations"] if c["id"] == "sq-sky.sharded" and c["run"] == 0)
    assert [t["sharded"]["new_shard"] for t in conv["turns"]] == [1, 2]
    assert [t["sharded"]["response_class"] for t in conv["turns"]] == ["clarification", "answer_attempt"]
    assert conv["turns"][1]["sharded"]["extracted_answer"] == "blue"
    assert conv["sharded"]["stop_reason"] == "correct"
    md = (sharded_toy.path / "report" / "summary.md").read_text()
    assert "## Sharded diagnosis: core" in md and "| SHARDED | 1.000 |" in md

    monkeypatch.setenv("TOY_FORGET", "1")  # the bot now sees the last message only
    bad = sharded_toy.runpytest("--ragdive-baseline=b.json", "-p", "no:cacheprovider")
    assert bad.ret == 1
    bad.stdout.fnmatch_lines(["*sharded_gap (FULL - SHARDED): +1.000*", "*sharded_gap*REGRESSION*"])


def test_bad_sharded_file_is_a_usage_error(sharded_toy: pytest.Pytester) -> None:
    bad = dict(QUESTIONS[0], shards=[{"shard_id": 1, "shard": "Is it blue?"}, {"shard_id": 2, "shard": "The sky."}])
    (sharded_toy.path / "data" / "sharded.jsonl").write_text(json.dumps(bad) + "\n")
    res = sharded_toy.runpytest("--ragdive-suite=core", "-p", "no:cacheprovider")
    assert res.ret == 4
    res.stderr.fnmatch_lines(["*sharded.jsonl:1: question 'sq-sky': P2: shard 1 contains the answer*"])


def test_gate_entries_apply_per_suite() -> None:
    from pytest_ragdive.core.config import RagdiveConfig

    cfg = RagdiveConfig.model_validate({
        "gate": {"correctness": 0.03, "sharded_gap": 0.05, "unreliability": 0.05},
        "suites": {"core": {"single_turn": ["a.jsonl"]}, "diagnosis": {"sharded": ["s.jsonl"]},
                   "mixed": {"single_turn": ["a.jsonl"], "sharded": ["s.jsonl"]}, "bare": {}},
    })
    assert set(cfg.gated_metrics("core")) == {"correctness", "assertion_pass_rate"}  # (zero tolerance, where recorded)
    assert set(cfg.gated_metrics("diagnosis")) == {"sharded_gap", "unreliability"}
    assert set(cfg.gated_metrics("mixed")) == {"correctness", "assertion_pass_rate", "sharded_gap", "unreliability"}
    assert set(cfg.gated_metrics("bare")) == {"correctness", "assertion_pass_rate"}
