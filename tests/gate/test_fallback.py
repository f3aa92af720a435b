"""The keyless gate's pieces (gate/fallback.py): which metrics a suite is gated on when
its judge calls could not be made, and the baseline over the conversations that ran."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ragdive import load_baseline
from pytest_ragdive.core.records import Conversation, JudgeCalls, Turn
from pytest_ragdive.core.results import Baseline, BaselineMetric
from pytest_ragdive.gate.baseline import dumps_baseline
from pytest_ragdive.gate.fallback import keyless_gate, restrict
from pytest_ragdive.metrics.registry import METRICS, OFFLINE_TWINS, TWIN_OF


def test_every_twin_is_registered_like_its_judged_metric() -> None:
    for metric, twin in OFFLINE_TWINS.items():
        assert TWIN_OF[twin] == metric
        a, b = METRICS[metric], METRICS[twin]
        assert (a.direction, a.level, a.dimension) == (b.direction, b.level, b.dimension)


def _conv(cid: str, unjudged: int = 0, not_run: bool = False, suite: str = "core") -> Conversation:
    return Conversation(id=cid, suite=suite, turns=[] if not_run else [Turn(rag_input="q", answer="a")],
                        judge_calls=JudgeCalls(not_judged=unjudged), not_run="not run (no key)" if not_run else None)


def test_a_suite_with_an_unjudged_item_is_gated_on_the_twins() -> None:
    gates = {"core": {"faithfulness": 0.03, "answer_f1": 0.05, "forgetfulness": 0.0}, "extended": {"faithfulness": 0.03}}
    got = keyless_gate([_conv("a", unjudged=2), _conv("b"), _conv("x", suite="extended")], gates)
    assert got.gates["core"] == {"faithfulness_offline": 0.03, "answer_f1": 0.05, "forgetfulness_offline": 0.0}
    assert got.gates["extended"] == {"faithfulness": 0.03}  # everything judged there: unchanged
    assert got.twins == {"core": {"faithfulness_offline": "faithfulness", "forgetfulness_offline": "forgetfulness"}}
    assert len(got.notes) == 1 and "2 judge call(s) not cached" in got.notes[0] and "not judged (no key)" in got.notes[0]
    assert not got.ran
    nothing = keyless_gate([_conv("a"), _conv("b")], gates)
    assert nothing.gates == gates and not nothing.notes


def test_conversations_not_run_narrow_the_baseline_to_those_that_ran() -> None:
    got = keyless_gate([_conv("a"), _conv("b"), _conv("g", not_run=True)], {"core": {"answer_f1": 0.05}})
    assert got.ran == {"core": ["a", "b"]} and "1 generated conversation(s) not run" in got.notes[0]
    # two baseline runs; conversation g pulled the suite mean down in both
    bm = BaselineMetric(mean=0.6, min=0.55, max=0.65, runs=2, conversations={
        "a": [(0.9, 1), (0.8, 1)], "b": [(0.7, 2), (0.8, 2)], "g": [(0.1, 1), (0.2, 1)]})
    narrowed = restrict(bm, got.ran["core"])
    assert narrowed is not None
    runs = [(0.9 + 0.7 * 2) / 3, (0.8 + 0.8 * 2) / 3]  # weighted by scored turns, as the suite mean is
    assert narrowed.min == pytest.approx(min(runs)) and narrowed.max == pytest.approx(max(runs))
    assert narrowed.mean == pytest.approx(sum(runs) / 2) and narrowed.conversations == bm.conversations
    plain = BaselineMetric(mean=0.6, min=0.5, max=0.7)  # no per-conversation values: left as it is
    assert restrict(plain, ["a"]) is plain and restrict(None, ["a"]) is None


def test_load_baseline_takes_a_str(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    path.write_text(dumps_baseline(Baseline(suites={"core": {"answer_f1": BaselineMetric(mean=0.5, min=0.5, max=0.5)}})))
    assert load_baseline(str(path)).suites["core"]["answer_f1"].mean == 0.5


def test_a_judged_only_metric_is_not_gated_on_a_keyless_run_and_said_so() -> None:
    """answer_relevance and a rubric judge have no offline scorer: an unjudged suite cannot decide
    them (they would read "no data" and fail every fork's PR), so they leave its gate with a note."""
    from pytest_ragdive.metrics.registry import BUILTINS, MetricSpec

    rubric = MetricSpec("polite", "higher", "turn", "a rubric", "answer", kind="rubric", origin="[tool.ragdive.judges.polite]")
    gates = {"core": {"faithfulness": 0.02, "answer_relevance": 0.03, "polite": 0.05}}
    with BUILTINS.extended([rubric]).active():
        got = keyless_gate([_conv("a", unjudged=1)], gates)
        judged = keyless_gate([_conv("a")], gates)
    assert got.gates["core"] == {"faithfulness_offline": 0.02}
    assert any("answer_relevance, polite not judged (no key) and without an offline twin: not gated" in n for n in got.notes)
    assert judged.gates == gates  # everything judged: every metric gated
