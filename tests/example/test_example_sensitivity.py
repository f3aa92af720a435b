"""The sensitivity pattern the bundled example is built to show, measured here with
a small stand-alone scorer (not the plugin's): a forgetful history policy and a
starved retriever are caught, benign changes barely move the numbers.

correctness: the answer covers >= 60% of the ground truth's content tokens;
recall: share of the relevant documents among the retrieved contexts;
forgetfulness: share of conversations with a turn answered correctly when asked
stand-alone but wrongly inside the conversation.
"""

from __future__ import annotations

import re
import string
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "example_project") not in sys.path:
    sys.path.insert(0, str(ROOT / "example_project"))

from example_rag import BotConfig, HelpCentreBot  # noqa: E402

from pytest_ragdive.sources.golden import load_conversations, load_single_turn  # noqa: E402

_STOP = set("a an the of to in on for and or is are be it its this that with by at as from your you".split())


def _tokens(text: str) -> set[str]:
    text = "".join(ch for ch in text.lower() if ch not in string.punctuation)
    return {t for t in re.sub(r"\b(a|an|the)\b", " ", text).split() if t not in _STOP}


def correct(answer: str, truth: str) -> bool:
    wanted = _tokens(truth)
    return len(wanted & _tokens(answer)) / len(wanted) >= 0.6


@dataclass
class Scores:
    correctness: float
    recall: float
    forgetfulness: float
    unsafe: int


def score(suite: str, **config: object) -> Scores:
    bot = HelpCentreBot(BotConfig(**config))  # type: ignore[arg-type]
    hits, recalls, forgetful, unsafe = [], [], [], 0

    def ask(messages: list[dict[str, str]], truth: str, relevant: list[str], negatives: list[str]) -> bool:
        nonlocal unsafe
        r = bot(messages)
        ok = correct(r.answer, truth)
        hits.append(ok)
        recalls.append(len(set(relevant) & {c.doc_id for c in r.contexts}) / len(relevant))
        unsafe += any(n.lower() in r.answer.lower() for n in negatives)
        messages.append({"role": "assistant", "content": r.answer})
        return ok

    for conv in load_conversations(ROOT / "golden" / suite / "conversations.yaml"):
        messages: list[dict[str, str]] = []
        lost = False
        for i, t in enumerate(conv.turns):
            messages.append({"role": "user", "content": t.rag_input})
            ok = ask(messages, t.ground_truth, t.relevant_doc_ids, t.negative_assertions)
            if i and not ok:
                alone = bot([{"role": "user", "content": t.standalone_question}])
                lost = lost or correct(alone.answer, t.ground_truth)
        forgetful.append(lost)
    for case in load_single_turn(ROOT / "golden" / suite / "single_turn.jsonl"):
        ask(
            [{"role": "user", "content": case.question}],
            case.expected_answer,
            case.relevant_doc_ids,
            case.negative_assertions,
        )
    return Scores(sum(hits) / len(hits), sum(recalls) / len(recalls), sum(forgetful) / len(forgetful), unsafe)


@pytest.fixture(scope="module")
def healthy() -> Scores:
    return score("extended")


def test_healthy_bot(healthy: Scores) -> None:
    assert healthy.correctness >= 0.9
    assert healthy.recall >= 0.95
    assert healthy.forgetfulness <= 0.1
    assert healthy.unsafe == 0
    core = score("core")
    assert core.correctness >= 0.9 and core.forgetfulness <= 0.2 and core.unsafe == 0


def test_history_none_is_forgetful(healthy: Scores) -> None:
    broken = score("extended", history="none")
    assert broken.forgetfulness >= healthy.forgetfulness + 0.3
    assert broken.correctness <= healthy.correctness - 0.1


def test_top_k_1_loses_recall(healthy: Scores) -> None:
    broken = score("extended", top_k=1)
    assert broken.recall <= healthy.recall - 0.08
    assert broken.correctness <= healthy.correctness - 0.05


@pytest.mark.parametrize(
    "change", [{"history": "last_k", "history_k": 3}, {"chunk_size": 64, "chunk_overlap": 16}, {"chunk_size": 96}]
)
def test_benign_changes_barely_move(healthy: Scores, change: dict[str, object]) -> None:
    other = score("extended", **change)
    assert abs(other.correctness - healthy.correctness) <= 0.03
    assert abs(other.recall - healthy.recall) <= 0.03
    assert other.forgetfulness <= healthy.forgetfulness + 0.05
    assert other.unsafe == 0
