"""Aptitude, unreliability, BEST and the paired question-cluster bootstrap on hand-made tables."""

from __future__ import annotations

import pytest
from factories import sharded_conversation

from pytest_ragdive.core.records import Conversation
from pytest_ragdive.sharded.aptitude import (
    aptitude,
    best,
    mean_over_questions,
    paired_difference,
    percentile,
    question_ratio,
    unreliability,
)
from pytest_ragdive.sharded.diagnosis import build_report, gate_metrics


def test_percentile_interpolates_linearly_between_order_statistics() -> None:
    xs = [0.0, 0.2, 0.4, 0.6, 1.0]  # rank of p90 = 0.9 * 4 = 3.6 -> 0.6 + 0.6 * 0.4
    assert percentile(xs, 90) == pytest.approx(0.84)
    assert percentile(xs, 10) == pytest.approx(0.08)  # rank 0.4 -> 0 + 0.4 * 0.2
    assert percentile([3.0], 90) == 3.0
    assert percentile(list(reversed(xs)), 50) == pytest.approx(0.4)  # order does not matter
    with pytest.raises(ValueError):
        percentile([], 50)


def test_aptitude_and_unreliability_of_one_question() -> None:
    scores = [1.0, 0.0, 0.5, 0.5, 1.0]  # sorted 0, .5, .5, 1, 1
    assert aptitude(scores) == pytest.approx(1.0)
    assert unreliability(scores) == pytest.approx(1.0 - 0.2)  # p10: rank 0.4 -> 0.2
    assert unreliability([0.7] * 5) == 0.0


def test_condition_values_average_over_questions() -> None:
    table = {"q1": [1.0, 0.0, 0.5, 0.5, 1.0], "q2": [0.3] * 5, "q3": []}
    assert mean_over_questions(table, aptitude) == pytest.approx((1.0 + 0.3) / 2)
    assert mean_over_questions(table, unreliability) == pytest.approx((0.8 + 0.0) / 2)


def test_best_is_the_maximum_and_zero_without_attempts() -> None:
    assert best([0.2, None, 0.7, 0.1]) == 0.7
    assert best([None, None]) == 0.0
    assert best([]) == 0.0


def test_paired_bootstrap_resamples_questions_with_all_their_runs() -> None:
    # q1's runs all gain 0.5, q2's gain 0.1: every resample mixes whole questions, so the
    # mean difference stays within [0.1, 0.5] and the point estimate is 0.3
    pairs = {"q1": [(0.9, 0.4)] * 3, "q2": [(0.5, 0.4)] * 3}
    est = paired_difference(pairs, n_boot=500, seed=1)
    assert est.value == pytest.approx(0.3)
    assert est.questions == 2 and est.pairs == 6
    assert est.ci_low is not None and est.ci_high is not None
    assert 0.1 - 1e-9 <= est.ci_low < 0.3 < est.ci_high <= 0.5 + 1e-9
    assert paired_difference(pairs, n_boot=500, seed=1) == est  # fixed seed: same interval
    reordered = {"q2": pairs["q2"], "q1": pairs["q1"]}
    assert paired_difference(reordered, n_boot=500, seed=1) == est  # clusters sorted by id


def test_identical_conditions_give_a_zero_interval_and_one_question_none() -> None:
    same = {"a": [(0.5, 0.5)], "b": [(0.2, 0.2)]}
    est = paired_difference(same, n_boot=200)
    assert (est.value, est.ci_low, est.ci_high) == (0.0, 0.0, 0.0)
    one = paired_difference({"a": [(1.0, 0.0)]})
    assert one.value == 1.0 and one.ci_low is None
    value, lo, hi = question_ratio({}, {})
    assert (value, lo, hi) == (None, None, None)


def _conv(
    q: str, cond: str, run: int, f1: float, final: float | None = None, judged: float | None = None
) -> Conversation:
    return sharded_conversation(q, cond, run, f1, final_f1=f1 if final is None else final, best_judged=judged,
                                final_judged=judged)


def test_report_decomposes_the_gap_and_its_recovery() -> None:
    table = {  # question -> condition -> per-run BEST
        "q1": {"full": [1.0, 1.0], "concat": [0.8, 0.8], "sharded": [0.2, 0.4], "recap": [0.6, 0.7]},
        "q2": {"full": [0.6, 0.6], "concat": [0.6, 0.6], "sharded": [0.6, 0.2], "recap": [0.6, 0.4]},
    }
    recap_turn = {"q1": [0.2, 0.7], "q2": [0.6, 0.0]}  # what the recap turn itself scored (BEST is above)
    convs = [_conv(q, c, r, v, recap_turn[q][r] if c == "recap" else None)
             for q, byc in table.items() for c, vs in byc.items() for r, v in enumerate(vs)]
    rep = build_report("core", convs, n_boot=300)
    assert rep is not None and rep.runs == 2
    assert rep.gap is not None and rep.wording is not None and rep.delivery is not None
    # FULL 0.8, CONCAT 0.7, SHARDED 0.35, RECAP 0.575 (means over all four pairs)
    assert rep.gap.value == pytest.approx(0.8 - 0.35)
    assert rep.wording.value == pytest.approx(0.1)
    assert rep.delivery.value == pytest.approx(0.35)
    assert rep.gap.value == pytest.approx(rep.wording.value + rep.delivery.value)
    # RECAP is scored on its recap turn (mean 0.375); BEST over the conversation (0.575) is the second figure
    assert rep.recovery["recap"].value == pytest.approx((0.375 - 0.35) / 0.45)
    assert rep.recovery_best["recap"].value == pytest.approx((0.575 - 0.35) / 0.45)
    assert rep.conditions["recap"].mean_score == pytest.approx(0.375)
    assert rep.conditions["recap"].mean_best == pytest.approx(0.575)
    # CONCAT / FULL: 2.8 / 3.2
    assert rep.concat_preservation is not None and rep.concat_preservation.value == pytest.approx(2.8 / 3.2)
    sh = rep.conditions["sharded"]
    # q1 [0.2, 0.4]: p90 0.38, p10 0.22; q2 [0.6, 0.2]: p90 0.56, p10 0.24
    assert sh.aptitude is not None and sh.unreliability is not None
    assert sh.aptitude.value == pytest.approx((0.38 + 0.56) / 2)
    assert sh.unreliability.value == pytest.approx((0.16 + 0.32) / 2)
    assert sh.unreliability.ci_low is not None and sh.unreliability.ci_low <= 0.24 <= sh.unreliability.ci_high
    assert rep.conditions["full"].unreliability is not None and rep.conditions["full"].unreliability.value == 0.0
    # per run: run 0 gap (1.0-0.2 + 0.6-0.6)/2 = 0.4, run 1 (1.0-0.4 + 0.6-0.2)/2 = 0.5
    assert rep.gap_per_run == pytest.approx([0.4, 0.5])
    gm = gate_metrics(rep)
    assert gm["sharded_gap"].value == pytest.approx(0.45) and gm["sharded_gap"].ci_low is not None
    assert gm["sharded_gap"].per_run == pytest.approx([0.4, 0.5])  # the baseline band's runs
    assert gm["unreliability"].value == pytest.approx(0.24) and gm["unreliability"].per_run == [gm["unreliability"].value]
    assert build_report("core", [Conversation(id="x")]) is None


def test_judge_robustness_difference_and_correlation() -> None:
    # F1 gaps per question: q1 0.6, q2 0.2, q3 0.4; the judge sees gaps 1, 0, 1
    f1 = {"q1": (0.9, 0.3), "q2": (0.5, 0.3), "q3": (0.8, 0.4)}
    judged = {"q1": (1.0, 0.0), "q2": (1.0, 1.0), "q3": (1.0, 0.0)}
    convs = []
    for q in f1:
        for run in range(2):
            for i, cond in enumerate(("full", "sharded")):
                convs.append(_conv(q, cond, run, f1[q][i], judged=judged[q][i]))
    rep = build_report("core", convs, n_boot=400)
    assert rep is not None and rep.gap is not None and rep.gap_judged is not None
    assert rep.gap.value == pytest.approx(0.4) and rep.gap_judged.value == pytest.approx(2 / 3)
    diff = rep.judge_gap_difference
    assert diff is not None and diff.value == pytest.approx(0.4 - 2 / 3)
    assert diff.ci_low is not None and diff.ci_high is not None and diff.ci_low <= diff.value <= diff.ci_high
    assert diff.pairs == 6 and diff.questions == 3
    from pytest_ragdive.sharded.diagnosis import pearson

    assert rep.judge_gap_correlation == pytest.approx(pearson([0.6, 0.2, 0.4], [1.0, 0.0, 1.0]))
    assert pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert pearson([1, 2], [1, 2]) is None and pearson([1, 1, 1], [1, 2, 3]) is None


def test_judge_robustness_needs_the_judge_on_every_pair() -> None:
    convs = [_conv("q1", "full", 0, 0.9, judged=1.0), _conv("q1", "sharded", 0, 0.3, judged=None),
             _conv("q2", "full", 0, 0.9, judged=1.0), _conv("q2", "sharded", 0, 0.3, judged=0.0)]
    rep = build_report("core", convs, n_boot=100)
    assert rep is not None and rep.gap_judged is None and rep.judge_gap_difference is None


def test_sharded_statistics_default_to_the_studys_5000_resamples() -> None:
    import inspect

    from pytest_ragdive.sharded import aptitude as apt

    assert apt.DEFAULT_BOOT == 5000
    assert inspect.signature(build_report).parameters["n_boot"].default == 5000
