"""The ragdive_conversation fixture, target sources, and the public helpers."""

from __future__ import annotations

import pytest
from conftest import PYPROJECT, results


def test_user_test_is_parametrized_over_conversations(toy: pytest.Pytester) -> None:
    toy.makepyfile(
        test_mine="""
        def test_every_answer_is_short(ragdive_conversation):
            assert ragdive_conversation.error is None
            for turn in ragdive_conversation.turns:
                assert turn.answer is not None
                assert len(turn.answer) < 40, turn.answer
        """
    )
    res = toy.runpytest("-v", "-p", "no:cacheprovider", "test_mine.py")
    res.assert_outcomes(passed=5)
    res.stdout.fnmatch_lines(["*test_every_answer_is_short?core.c-colours?*PASSED*"])


def test_user_test_sees_scores_and_can_fail(toy: pytest.Pytester) -> None:
    toy.makepyfile(
        test_mine="""
        def test_no_forgetting(ragdive_conversation):
            assert ragdive_conversation.scores.get("forgetfulness") in (None, 0.0)
        """
    )
    toy.runpytest("test_mine.py").assert_outcomes(passed=5)
    import os

    os.environ["TOY_FORGET"] = "1"
    try:
        toy.runpytest("test_mine.py").assert_outcomes(passed=3, failed=2)
    finally:
        del os.environ["TOY_FORGET"]


def test_async_target_and_config_target_string(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        mybot="""
        import asyncio
        from pytest_ragdive import TargetResponse, Context

        async def answer(messages):
            await asyncio.sleep(0.01)
            return {"answer": "The sky is blue.", "contexts": [{"id": "sky#1", "doc_id": "sky", "text": "The sky is blue."}]}
        """
    )
    (pytester.path / "single.jsonl").write_text(
        '{"question_id": "q1", "question": "What colour is the sky?", "expected_answer": "blue", "relevant_doc_ids": ["sky"]}\n'
    )
    pytester.makefile(
        ".toml",
        pyproject='[tool.ragdive]\ntarget = "mybot:answer"\nreport_dir = "report"\n[tool.ragdive.suites.core]\nsingle_turn = ["single.jsonl"]\n',
    )
    pytester.runpytest("--ragdive-suite=core").assert_outcomes(passed=1)
    data = results(pytester)
    assert data["suites"]["core"]["recall_at_k"] == 1.0
    assert data["conversations"][0]["turns"][0]["contexts"][0]["doc_id"] == "sky"


def test_missing_target_is_explained(pytester: pytest.Pytester) -> None:
    (pytester.path / "single.jsonl").write_text('{"question_id": "q1", "question": "hi"}\n')
    pytester.makefile(".toml", pyproject='[tool.ragdive.suites.core]\nsingle_turn = ["single.jsonl"]\n')
    res = pytester.runpytest("--ragdive-suite=core")
    # one line before any item runs (tests/plugin/test_preflight.py), not one error per item
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["ERROR: *no target: override the `ragdive_target` fixture in conftest.py*"])


def test_conftest_target_in_subdirectory_is_found(toy: pytest.Pytester) -> None:
    """Running from a parent directory: the config dir's conftest still provides the target."""
    sub = toy.path / "proj"
    sub.mkdir()
    for name in ("conftest.py", "pyproject.toml"):
        (toy.path / name).rename(sub / name)
    (toy.path / "data").rename(sub / "data")
    toy.makeini("[pytest]\n")
    res = toy.runpytest("proj", "--ragdive-suite=core", "--ragdive-config=proj/pyproject.toml")
    res.assert_outcomes(passed=5)


def test_deselecting_with_k_runs_a_subset(toy: pytest.Pytester) -> None:
    res = toy.runpytest("--ragdive-suite=core", "-k", "c-colours")
    res.assert_outcomes(passed=1)
    assert [c["id"] for c in results(toy)["conversations"]] == ["c-colours"]


def test_markers_select_suites(toy: pytest.Pytester) -> None:
    toy.makefile(".toml", pyproject=PYPROJECT.format(extra="") + '[tool.ragdive.suites.extended]\nsingle_turn = ["data/single.jsonl"]\n')
    res = toy.runpytest("--ragdive-suite=all", "-m", "ragdive_extended")
    res.assert_outcomes(passed=3)
    res = toy.runpytest("--ragdive-suite=all")
    res.assert_outcomes(passed=8)
    assert set(results(toy)["suites"]) == {"core", "extended"}


def test_ragdive_logs_replay_as_scripted_conversations(toy: pytest.Pytester) -> None:
    """Conversations in the RAG-DIVE reference format (from the reference tool,
    or ragdive_<suite>.json of an LLM run) become a replayable suite."""
    import json

    from pytest_ragdive import Conversation, Document, Turn
    from pytest_ragdive.sources.ragdive_format import export_ragdive

    conv = Conversation(
        id="log-1", source="generated", role="referrer", document_id="snow",
        turns=[
            Turn(index=0, rag_input="Tell me about snow.", standalone_question="Tell me about snow.",
                 ground_truth="Snow is white and cold.", answer="recorded answer"),
            Turn(index=1, rag_input="What colour is it?", standalone_question="What colour is snow?",
                 ground_truth="white", question_type="Follow-up", answer="recorded answer"),
        ],
    )
    docs = [Document(id="snow", title="Snow", text="Snow is white and cold.")]
    (toy.path / "logs.json").write_text(json.dumps(export_ragdive([conv], docs)))
    toy.makefile(".toml", pyproject=PYPROJECT.format(extra="") + '[tool.ragdive.suites.extended]\nragdive_logs = ["logs.json"]\n')
    toy.runpytest("--ragdive-suite=extended").assert_outcomes(passed=1)
    data = results(toy)
    (ran,) = data["conversations"]
    assert ran["id"] == "log-1" and ran["source"] == "ragdive_log"
    assert [t["answer"] for t in ran["turns"]] == ["Snow is white and cold.", "Snow is white and cold."]
    assert data["suites"]["extended"]["forgetfulness"] == 0.0
