"""The paired statistics on hand-made per-conversation tables."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from pytest_ragdive.core.records import Conversation, Turn
from pytest_ragdive.gate.paired import (
    ConvValue,
    Table,
    alpha_for_look,
    bootstrap,
    conversation_value,
    decide,
    holm,
    pair,
    paired_tests,
    t_pvalue,
    table,
)
from pytest_ragdive.gate.power import power, spread, unstable, worse
from pytest_ragdive.gate.tdist import t_cdf, t_ppf


def cv(*vals: float, count: int = 1) -> list[ConvValue]:
    return [ConvValue(value=v, count=count) for v in vals]


def test_conversation_value_is_the_mean_over_scored_turns_with_the_count() -> None:
    conv = Conversation(
        id="c", turns=[Turn(rag_input="a", scores={"correctness": 1.0}), Turn(rag_input="b", scores={"correctness": None}),
                       Turn(rag_input="c", scores={"correctness": 0.0}), Turn(rag_input="d", scores={"correctness": 1.0})],
        scores={"forgetfulness": 1.0},
    )
    assert conversation_value(conv, "correctness") == ConvValue(value=2 / 3, count=3)
    assert conversation_value(conv, "forgetfulness") == ConvValue(value=1.0, count=1)
    assert conversation_value(conv, "faithfulness") is None
    runs = [conv.model_copy(update={"run": 1}), conv, conv.model_copy(update={"id": "b", "error": "boom"})]
    assert table(runs, "correctness") == {"c": [ConvValue(value=2 / 3, count=3)] * 2}


def test_pairing_counts_new_and_missing_conversations_and_weights_by_turns() -> None:
    base: Table = {"a": cv(1.0, 1.0, count=2), "b": cv(0.5, 0.5, count=2), "gone": cv(1.0)}
    cur: Table = {"a": cv(0.5, count=2), "b": cv(0.5, count=4), "fresh": cv(0.0)}
    p = pair(base, cur, "higher")
    assert p.ids == ["a", "b"] and p.new == ["fresh"] and p.missing == ["gone"]
    assert p.drops == [0.5, 0.0] and p.weights == [2.0, 4.0]
    assert p.drop == pytest.approx(0.5 * 2 / 6)
    # lower-is-better: a rise is the drop
    assert pair({"a": cv(0.2)}, {"a": cv(0.5)}, "lower").drops == [pytest.approx(0.3)]


def test_bootstrap_bound_matches_normal_theory_and_is_stable_to_three_decimals() -> None:
    drops = [0.1 * math.sin(1.7 * i) for i in range(40)]  # spread in [-0.1, 0.1]
    w = [1.0] * 40
    mean = sum(drops) / 40
    sd = math.sqrt(sum((d - mean) ** 2 for d in drops) / 39)  # the unbiased variance (the scaled bootstrap's)
    normal_upper = mean + NormalDist().inv_cdf(0.95) * sd / math.sqrt(40)
    uppers = []
    for seed in (0, 1, 2):
        b = bootstrap(drops, w, seed=seed)
        uppers.append(float(b[int(0.95 * len(b))]))
    assert uppers[0] == pytest.approx(normal_upper, abs=0.001)
    assert max(uppers) - min(uppers) < 0.0005  # stable to 3 decimals across seeds
    assert list(bootstrap(drops, w, seed=0)) == list(bootstrap(drops, w, seed=0))  # fixed seed: reproducible


@pytest.mark.parametrize("n", [4, 10])
def test_bootstrap_has_the_unbiased_variance_with_few_conversations(n: int) -> None:
    """The small-sample correction: the resampled means' spread is s / sqrt(n) with the
    unbiased s (the plain bootstrap's would be sqrt((n - 1) / n) of it: 13% narrower at
    n = 4, 5% at n = 10), centred on the observed mean."""
    drops = [1.0 if i % 3 == 0 else 0.0 for i in range(n)]  # forgetfulness-like 0/1 drops
    mean = sum(drops) / n
    s = math.sqrt(sum((d - mean) ** 2 for d in drops) / (n - 1))
    b = bootstrap(drops, [1.0] * n)
    boot_mean = float(sum(b) / len(b))
    boot_sd = math.sqrt(float(sum((x - boot_mean) ** 2 for x in b)) / len(b))
    assert boot_mean == pytest.approx(mean, abs=0.005)
    assert boot_sd == pytest.approx(s / math.sqrt(n), rel=0.02)
    assert abs(boot_sd - s / math.sqrt(n) * math.sqrt((n - 1) / n)) > 0.02 * s / math.sqrt(n)  # not the plain one
    assert list(bootstrap(drops, [2.0] * n).round(12)) == list(b.round(12))  # only relative weights count
    assert len(set(bootstrap([0.3, 0.3, 0.3], [1.0, 2.0, 3.0]).round(12))) == 1  # no spread stays no spread


def test_holm_step_down() -> None:
    out = holm({"a": 0.01, "b": 0.04, "c": 0.03}, 0.05)
    assert out["a"] == (True, pytest.approx(0.05 / 3))
    assert out["c"] == (False, pytest.approx(0.025))  # 0.03 > 0.025: stop here
    assert out["b"] == (False, pytest.approx(0.05))  # would pass alone, but follows an acceptance
    assert all(r for r, _ in holm({"a": 0.001, "b": 0.02, "c": 0.04}, 0.05).values())
    # Bonferroni would reject only the first of these; Holm rejects both
    assert holm({"a": 0.02, "b": 0.04}, 0.05) == {"a": (True, 0.025), "b": (True, 0.05)}


def test_holm_applies_to_the_suites_metrics_in_the_paired_test() -> None:
    base = {f"c{i:02d}": cv(0.7, 0.9) for i in range(30)}
    small = {f"c{i:02d}": cv((0.64 if i % 2 else 0.88) + 0.004 * (i % 7 - 3)) for i in range(30)}  # drop 0.04, p 0.04
    none = {f"c{i:02d}": cv(0.6 if i % 2 else 1.0) for i in range(30)}  # no drop, noisy
    alone = paired_tests({"m": pair(base, small, "higher")}, {"m": 0.1})["m"]
    both = paired_tests({"m": pair(base, small, "higher"), "n": pair(base, none, "higher")}, {"m": 0.1, "n": 0.1})
    assert 0.05 / 2 < alone.p_drop <= 0.05
    assert alone.significant and alone.level == 0.05
    assert not both["m"].significant and both["m"].level == pytest.approx(0.025)
    assert both["m"].low < alone.low  # reported at the stricter Holm level


def test_verdict_table() -> None:
    assert decide("improvement", True, False, 0.5, 0.03) == "improvement"
    assert decide("regression", True, True, 0.02, 0.03) == "pass"  # a consistent drop within tolerance
    assert decide("regression", True, False, 0.05, 0.03) == "regression"
    assert decide("regression", False, False, 0.05, 0.03) == "inconclusive"
    assert decide("pass", True, False, 0.02, 0.03) == "inconclusive"
    assert decide("pass", False, False, 0.04, 0.03, more_looks=True) == "inconclusive"  # weak evidence: look again
    assert decide("pass", False, False, 0.04, 0.03) == "pass"  # ... but at the last look the band's pass stands
    assert decide("pass", False, False, 0.01, 0.03, more_looks=True) == "pass"


def test_deterministic_tables_reduce_to_the_band() -> None:
    base = {"a": cv(1.0, 1.0), "b": cv(0.0, 0.0), "c": cv(0.5, 0.5)}
    for cur, band, verdict in [
        ({"a": cv(1.0), "b": cv(0.0), "c": cv(0.41)}, "pass", "pass"),  # drop 0.03 = tol
        ({"a": cv(0.0), "b": cv(1.0), "c": cv(0.5)}, "pass", "pass"),  # heterogeneous, mean unchanged
        ({"a": cv(1.0), "b": cv(0.0), "c": cv(0.35)}, "regression", "regression"),  # drop 0.05
    ]:
        p = pair(base, cur, "higher")
        assert p.noise_free
        r = paired_tests({"m": p}, {"m": 0.03})["m"]
        assert r.low == r.high == r.drop
        assert decide(band, r.significant, r.within, r.drop, 0.03) == verdict  # type: ignore[arg-type]
    # a single noisy value anywhere and the bootstrap is used
    assert not pair({**base, "a": cv(1.0, 0.9)}, {"a": cv(1.0), "b": cv(0.0)}, "higher").noise_free


def test_pooled_rerun_decides_an_inconclusive_first_look() -> None:
    base = {f"c{i:02d}": cv(0.7, 0.9, 0.8, 0.7, 0.9) for i in range(20)}
    first = {f"c{i:02d}": cv(0.7 if i % 2 else 0.82) for i in range(20)}  # drop 0.04: significant, not within
    a = alpha_for_look(2)
    assert a == pytest.approx(0.05 / 3)
    r1 = paired_tests({"m": pair(base, first, "higher")}, {"m": 0.03}, alpha=a)["m"]
    assert r1.significant and not r1.within
    assert decide("pass", r1.significant, r1.within, r1.drop, 0.03) == "inconclusive"
    pooled = {k: v + cv(0.8 if int(k[1:]) % 2 else 0.9, 0.85) for k, v in first.items()}  # two reruns
    r3 = paired_tests({"m": pair(base, pooled, "higher")}, {"m": 0.03}, alpha=a)["m"]
    assert r3.drop == pytest.approx(-0.02)
    assert r3.within and decide("pass", r3.significant, r3.within, r3.drop, 0.03) == "pass"
    # the same reruns with a real drop: regression once pooled
    worse_runs = {k: v + cv(0.7, 0.72) for k, v in first.items()}
    r3b = paired_tests({"m": pair(base, worse_runs, "higher")}, {"m": 0.03}, alpha=a)["m"]
    assert r3b.significant and not r3b.within and r3b.drop > 0.03


def test_power_figure() -> None:
    def z(p: float) -> float:  # Student's t with 49 degrees of freedom (50 conversations), as the test uses
        return t_ppf(p, 49)

    base = {f"c{i:02d}": cv(0.6, 1.0) for i in range(50)}  # s^2 = 0.08 per conversation, 2 runs
    se = math.sqrt(50 * 0.08 * (1 + 1 / 2)) / 50
    pw = power(base, 0.05, 0.05)
    assert pw.se == pytest.approx(se)
    assert pw.mdr == pytest.approx((z(0.95) + z(0.8)) * se)
    assert pw.mdr == pytest.approx(0.1237, abs=1e-4)  # (1.6766 + 0.8490) * se; the normal's 1.6449 + 0.8416 gave 0.1218
    assert pw.too_small and pw.conversations_needed == math.ceil(50 * (pw.mdr / 0.05) ** 2) == 307
    assert pw.runs_needed is None  # two baseline runs bound the noise from below: more PR runs cannot do it
    # Holm's strictest level with 3 metrics
    assert power(base, 0.05, 0.05, metrics=3).mdr == pytest.approx((z(1 - 0.05 / 3) + z(0.8)) * se)
    # five baseline runs: more PR runs can
    base5 = {f"c{i:02d}": cv(0.7, 0.9, 0.8, 0.7, 0.9) for i in range(50)}
    pw5 = power(base5, 0.027, 0.05)
    assert pw5.mdr == pytest.approx((z(0.95) + z(0.8)) * math.sqrt(0.01 * 1.2 / 50))
    assert pw5.too_small and pw5.runs_needed == 3
    assert not power(base5, 0.05, 0.05).too_small
    # unknown noise (one baseline run) and no noise
    assert power({"a": cv(1.0)}, 0.03, 0.05).mdr is None
    assert power({"a": cv(1.0, 1.0)}, 0.03, 0.05).mdr == 0.0


def test_spread_unstable_and_what_got_worse() -> None:
    base = {"a": cv(0.0, 0.5, 1.0), "b": cv(0.9, 0.9, 0.9), "c": cv(0.2, 0.4), "d": cv(1.0)}
    s = spread(base)
    assert s == {"a": pytest.approx(0.8), "b": 0.0, "c": pytest.approx(0.16)}
    assert unstable(s, 0.1) == ["a", "c"]
    p = pair({"a": cv(1.0, count=1), "b": cv(1.0, count=3), "c": cv(0.5)}, {"a": cv(0.0), "b": cv(0.5, count=3), "c": cv(0.9)}, "higher")
    rows = worse(p)
    assert [r.id for r in rows] == ["b", "a"]  # b: 0.5 x 3 turns outweighs a: 1.0 x 1
    assert rows[0].contribution == pytest.approx(1.5 / 5) and rows[1].contribution == pytest.approx(1.0 / 5)
    assert rows[1].drop == 1.0


def test_student_t_matches_the_tables() -> None:
    assert t_ppf(0.975, 9) == pytest.approx(2.262157, abs=1e-6)
    assert t_ppf(0.95, 4) == pytest.approx(2.131847, abs=1e-6)
    assert t_ppf(0.995, 29) == pytest.approx(2.756386, abs=1e-6)
    assert t_ppf(0.00556, 29) == pytest.approx(-2.712222, abs=1e-5)
    assert t_cdf(-2.0, 5) == pytest.approx(0.0509697, abs=1e-7)
    assert t_cdf(0.0, 3) == pytest.approx(0.5) and t_cdf(1.0, 1) == pytest.approx(0.75)  # Cauchy
    assert t_ppf(0.95, 10_000) == pytest.approx(NormalDist().inv_cdf(0.95), abs=1e-3)  # tends to the normal


def test_small_samples_get_students_levels() -> None:
    """The bounds are read at Phi(t_{n-1}^{-1}(q)) of the scaled bootstrap, the p-value on
    Student's scale: with 10 conversations the 95% bound is about t_9 / z = 1.12 times
    farther from the drop than the normal bound, and a p-value of 0.01 becomes 0.0225."""
    drops = [0.1 * math.sin(1.3 * i) + 0.02 for i in range(10)]
    p = pair({f"c{i}": cv(1.0, 0.9) for i in range(10)}, {f"c{i}": cv(0.95 - d) for i, d in enumerate(drops)}, "higher")
    assert not p.noise_free
    r = paired_tests({"m": p}, {"m": 0.5})["m"]
    b = bootstrap(p.drops, p.weights)
    plain = float(b[int(0.95 * len(b))]) - r.drop  # the scaled bootstrap's own 95% quantile
    assert (r.high - r.drop) / plain == pytest.approx(t_ppf(0.95, 9) / NormalDist().inv_cdf(0.95), rel=0.03)
    assert r.p_drop == pytest.approx(t_pvalue(float((b <= 1e-9).mean()), 9))
    assert t_pvalue(0.01, 9) == pytest.approx(t_cdf(NormalDist().inv_cdf(0.01), 9)) and 0.022 < t_pvalue(0.01, 9) < 0.023
    assert t_pvalue(0.0, 9) == 0.0 and t_pvalue(1.0, 9) == 1.0 and t_pvalue(0.2, 0) == 0.2


def test_the_paired_text_never_prints_a_negative_zero() -> None:
    from pytest_ragdive.gate.paired import PairedResult
    from pytest_ragdive.gate.rows import GateRow

    tiny = -1e-17  # what float sums of equal values leave behind
    paired = PairedResult(n=30, drop=tiny, low=tiny, high=tiny, p_drop=1.0, level=0.017, alpha=0.017,
                          significant=False, within=True, noise_free=True)
    row = GateRow(suite="core", metric="answer_f1", direction="higher", baseline_mean=0.77, band_low=0.74,
                  band_high=0.80, tolerance=0.03, current=0.77, delta=tiny, verdict="pass", paired=paired)
    assert "-0.0000" not in row.paired_text + row.delta_text
    assert "bounds +0.0000 (98.3%) to +0.0000 (98.3%)" in row.paired_text
