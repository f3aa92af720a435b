"""Records survive JSON round trips; the public helpers raise gate-row messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ragdive import (
    Baseline,
    BaselineMetric,
    Context,
    Conversation,
    Document,
    Message,
    MetricValue,
    SuiteResult,
    TargetResponse,
    Turn,
    Verdict,
    assert_in_band,
    assert_no_regression,
    run_suite,
)


def _examples() -> list:
    ctx = Context(id="d1#0", doc_id="d1", text="Refunds take 5 days.", score=3.2)
    turn = Turn(
        index=1, rag_input="and how long?", standalone_question="How long do refunds take?", ground_truth="5 days",
        question_type="Follow-up", relevant_doc_ids=["d1"], answer="5 days.", contexts=[ctx],
        scores={"faithfulness": 1.0, "mrr": None}, verdicts={"faithfulness": Verdict(value=1.0, reason="ok", model="m")},
        meta={"x": [1, 2]},
    )
    conv = Conversation(id="c1", suite="core", run=2, role="default", turns=[turn], scores={"forgetfulness": 0.0})
    mv = MetricValue(value=0.5, n=3, ci_low=0.1, ci_high=0.9, per_run=[0.4, None], per_turn_index={"0": 0.5})
    return [
        Document(id="d1", title="Refunds", text="Refunds take 5 days."),
        Message(role="user", content="hi"),
        ctx,
        TargetResponse(answer="5 days", contexts=[ctx], citations=["d1"]),
        turn,
        conv,
        SuiteResult(suite="core", runs=2, conversations=1, metrics={"answer_f1": mv}),
        Baseline(config_hash="abc", suites={"core": {"answer_f1": BaselineMetric(mean=0.5, min=0.4, max=0.6)}}),
    ]


@pytest.mark.parametrize("record", _examples(), ids=lambda r: type(r).__name__)
def test_json_round_trip(record) -> None:
    again = type(record).model_validate_json(record.model_dump_json())
    assert again == record
    assert again.model_dump_json() == record.model_dump_json()


def test_records_reject_unknown_fields() -> None:
    with pytest.raises(ValueError):
        Turn.model_validate({"rag_input": "x", "bogus": 1})


def test_assert_in_band_direction() -> None:
    assert_in_band(0.8, (0.7, 0.9), "higher")
    assert_in_band(0.95, (0.7, 0.9), "higher")  # improvement passes
    with pytest.raises(AssertionError, match="REGRESSION"):
        assert_in_band(0.6, (0.7, 0.9), "higher", name="faithfulness")
    with pytest.raises(AssertionError, match="REGRESSION"):
        assert_in_band(0.95, (0.0, 0.9), "lower", name="forgetfulness")
    with pytest.raises(AssertionError, match="NO DATA"):
        assert_in_band(None, (0.0, 0.9), "lower")


def test_assert_no_regression_lists_every_bad_metric() -> None:
    bl = Baseline(
        suites={
            "core": {
                "correctness": BaselineMetric(mean=0.8, min=0.78, max=0.82, tolerance=0.02),
                "forgotten_turn_share": BaselineMetric(mean=0.1, min=0.1, max=0.1, direction="lower", tolerance=0.05),
            }
        }
    )
    good = SuiteResult(suite="core", metrics={"correctness": MetricValue(value=0.77), "forgotten_turn_share": MetricValue(value=0.14)})
    assert len(assert_no_regression(good, bl)) == 2
    bad = SuiteResult(suite="core", metrics={"correctness": MetricValue(value=0.70), "forgotten_turn_share": MetricValue(value=0.3)})
    with pytest.raises(AssertionError) as e:
        assert_no_regression(bad, bl)
    assert "core/correctness" in str(e.value) and "core/forgotten_turn_share" in str(e.value)
    with pytest.raises(AssertionError, match="not in the baseline"):
        assert_no_regression(SuiteResult(suite="extended"), bl)


def test_run_suite_programmatically(tmp_path: Path) -> None:
    (tmp_path / "s.jsonl").write_text(
        '{"question_id": "q1", "question": "What colour is the sky?", "expected_answer": "blue", "relevant_doc_ids": ["sky"]}\n'
    )
    (tmp_path / "pyproject.toml").write_text('[tool.ragdive.suites.core]\nsingle_turn = ["s.jsonl"]\n')

    def bot(messages):
        return TargetResponse(answer="It is blue.", contexts=[Context(id="sky", text="The sky is blue.")])

    convs: list[Conversation] = []
    res = run_suite(bot, tmp_path / "pyproject.toml", runs=2, conversations=convs)
    assert res.runs == 2 and len(convs) == 2
    assert res.value("correctness") == 1.0
    assert res.metrics["recall_at_k"].per_run == [1.0, 1.0]


def test_every_public_name_resolves_and_loads_lazily() -> None:
    """What a conftest or script imports is at the top (pytest_ragdive.X), and each name resolves."""
    import subprocess
    import sys

    import pytest_ragdive

    for name in pytest_ragdive.__all__:
        assert getattr(pytest_ragdive, name) is not None, name
    assert set(pytest_ragdive.__all__) <= set(dir(pytest_ragdive))
    for name in ("load_config", "RagdiveConfig", "run_suite", "load_baseline", "assert_no_regression", "http_target", "monitored"):
        assert name in pytest_ragdive.__all__
    code = "import sys, pytest_ragdive; print(sorted(m for m in ('pydantic', 'numpy', 'litellm', 'yaml') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_load_baseline_takes_a_str(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pytest_ragdive import Baseline, load_baseline
    from pytest_ragdive.gate.baseline import write_baseline

    p = tmp_path / "b.json"
    write_baseline(p, Baseline(format_version=2))
    assert load_baseline(str(p)) == load_baseline(p)
