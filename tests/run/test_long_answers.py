"""Large answers and large golden files (issue 32, case 7). Before: a 200 KB answer took about
a minute to score, on the event loop; at 1 MB the watchdog ended the run blaming "a blocking
call inside an async target" while the stack was in the plugin's grounding code; a 200 MB
golden file took 1.5 GB and died with a MemoryError traceback."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_ragdive.core.config import RagdiveConfig
from pytest_ragdive.core.errors import GoldenError
from pytest_ragdive.run.api import run_suite
from pytest_ragdive.run.watchdog import Watchdog, own_code
from pytest_ragdive.sources import golden

SENTENCES = [f"Refund request {i} is reviewed by team {i % 7} within {i % 30 + 1} days." for i in range(20_000)]


def _config(tmp_path: Path, **extra: Any) -> RagdiveConfig:
    rows = [{"question_id": "q-long", "question": "How are refunds reviewed?",
             "expected_answer": "Refund requests are reviewed within 5 days."}]
    (tmp_path / "cases.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    cfg = RagdiveConfig.model_validate({"suites": {"core": {"single_turn": ["cases.jsonl"]}}, **extra})
    cfg.base_dir = str(tmp_path)
    return cfg


def test_a_long_answer_is_scored_on_its_first_characters_off_the_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_ragdive.metrics import offline

    answer = " ".join(SENTENCES)[:300_000]  # 300 KB of distinct sentences
    seen: list[tuple[str, int]] = []
    real = offline.score_conversation

    def spy(conv: Any, **kw: Any) -> None:
        seen.append((threading.current_thread().name, len(conv.turns[0].answer)))
        real(conv, **kw)

    monkeypatch.setattr(offline, "score_conversation", spy)
    convs: list[Any] = []
    t0 = time.perf_counter()
    res = run_suite(lambda messages: answer, _config(tmp_path, score_max_answer_chars=20_000), conversations=convs)
    took = time.perf_counter() - t0
    assert seen and seen[0][0] != "ragdive-loop" and seen[0][1] == 20_000  # a worker thread, the first 20,000
    assert convs[0].turns[0].answer == answer  # the answer itself is kept whole
    assert convs[0].turns[0].scores["faithfulness"] is not None
    assert any("score_max_answer_chars = 20,000" in n and "q-long" in n for n in res.notes), res.notes
    assert took < 60, took


def test_the_default_cap_is_generous_and_normal_answers_are_not_cut(tmp_path: Path) -> None:
    assert RagdiveConfig().score_max_answer_chars == 100_000
    res = run_suite(lambda messages: "Refund requests are reviewed within 5 days.", _config(tmp_path))
    assert not [n for n in res.notes if "score_max_answer_chars" in n]


def test_the_watchdog_names_the_plugins_own_code_when_the_stall_is_there() -> None:
    """A stack with no target call on it, inside the plugin's metrics: the plugin is blamed."""
    frames: dict[str, Any] = {}
    release = threading.Event()
    # a function whose frame reads as the plugin's grounding code (its module's name)
    space: dict[str, Any] = {"__name__": "pytest_ragdive.metrics.grounding", "sys": sys, "frames": frames,
                             "release": release}
    exec("def _unit_evidence():\n    frames['frame'] = sys._getframe()\n    release.wait(10)\n", space)  # noqa: S102
    plugin_fn = space["_unit_evidence"]
    t = threading.Thread(target=plugin_fn, daemon=True)
    t.start()
    deadline = time.monotonic() + 5
    while "frame" not in frames and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        where = own_code(sys._current_frames()[t.ident])  # type: ignore[index]
        assert where is not None and where.startswith("pytest_ragdive/metrics/grounding.py:")

        import asyncio

        loop = asyncio.new_event_loop()
        dog = Watchdog(loop, t, 1.0, lambda m: None)
        msg = dog._blocked(12.0)
        loop.close()
        assert "the plugin's own code blocks it at pytest_ragdive/metrics/grounding.py:" in msg
        assert "blocking call inside an async target" not in msg
    finally:
        release.set()
        t.join(5)


def test_a_target_on_the_stack_is_still_the_targets_fault() -> None:
    assert own_code(sys._getframe()) is None  # no plugin frame at all: the target's (or the user's) code


def test_a_huge_golden_file_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(golden, "MAX_GOLDEN_BYTES", 1000)
    path = tmp_path / "cases.jsonl"
    row = json.dumps({"question_id": "q", "question": "Sky?", "expected_answer": "blue"})
    path.write_text("\n".join(row.replace('"q"', f'"q{i}"') for i in range(100)) + "\n")
    with pytest.raises(GoldenError) as e:
        golden.load_single_turn(path)
    assert str(path) in str(e.value) and "split it" in str(e.value) and "\n" not in str(e.value)
