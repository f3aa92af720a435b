"""The gate over hand-made conversations: band + paired verdicts, looks, policy."""

from __future__ import annotations

from factories import baseline_of, scored

from pytest_ragdive.core.records import Conversation
from pytest_ragdive.core.results import Baseline
from pytest_ragdive.gate.rows import GateRow, check
from pytest_ragdive.metrics.aggregate import aggregate

GATE = {"correctness": 0.03, "forgetfulness": 0.05, "safety_pass_rate": 0.0}
N = 20


def conv(cid: str, run: int, correct: list[float]) -> Conversation:
    return scored(cid, run, correctness=correct, safety_pass_rate=[1.0] * len(correct), conversation_scores={"forgetfulness": 0.0})


def make(convs: list[Conversation]) -> Baseline:
    return baseline_of(convs, GATE)


def baseline_noisy() -> Baseline:
    """20 conversations, 4 runs; each conversation flips between 0.6 and 1.0,
    every run's suite mean is exactly 0.8 (a narrow band, a wide per-conversation spread)."""
    return make([conv(f"c{i:02d}", r, [0.6 if (i + r) % 2 else 1.0]) for i in range(N) for r in range(4)])


def gate(bl: Baseline, values: list[list[float]], **kw: object) -> GateRow:
    """values: per run of this session, each conversation's correctness."""
    convs = [conv(f"c{i:02d}", r, [v]) for r, run in enumerate(values) for i, v in enumerate(run)]
    rows = check({"core": aggregate("core", convs, n_boot=10)}, bl, GATE, convs=convs, **kw)  # type: ignore[arg-type]
    return next(r for r in rows if r.metric == "correctness")


def test_a_healthy_run_passes_with_the_paired_evidence() -> None:
    r = gate(baseline_noisy(), [[0.6 if i % 2 else 1.0 for i in range(N)]], unstable_spread=0.3)
    assert r.method == "band+paired" and r.paired is not None
    assert r.verdict == "pass" and not r.failed
    assert r.paired.n == N and abs(r.paired.drop) < 1e-12
    assert r.power is not None and r.power.mdr is not None and r.power.mdr > 0.03  # 20 conversations: too small
    assert r.power.too_small and r.power.conversations_needed and r.power.conversations_needed > N
    assert "too small for its tolerance" in r.power_text
    assert r.unstable == sorted(f"c{i:02d}" for i in range(N))  # every conversation spreads 0.4 > 0.3
    assert gate(baseline_noisy(), [[0.6 if i % 2 else 1.0 for i in range(N)]]).unstable == []  # default 0.5
    assert check({}, baseline_noisy(), GATE) == []


def test_a_large_drop_is_a_regression_and_names_what_got_worse() -> None:
    r = gate(baseline_noisy(), [[0.6] * (N - 2) + [1.0, 1.0]])  # suite mean 0.64: drop 0.16
    assert r.band_verdict == "regression" and r.paired is not None and r.paired.significant
    assert r.verdict == "regression" and r.failed
    assert [w.id for w in r.worse][:1] and all(w.drop > 0 for w in r.worse)
    assert "REGRESSION (paired drop +0.1600 over 20 conversation(s) x 1 run(s)" in r.line()


def test_out_of_band_without_paired_evidence_is_inconclusive_then_reruns_then_fails() -> None:
    run = [0.6] * 12 + [1.0] * 8  # mean 0.76: out of the narrow band, but within the noise
    r = gate(baseline_noisy(), [run])
    assert r.band_verdict == "regression" and r.paired is not None and not r.paired.significant
    assert r.verdict == "inconclusive" and r.failed and r.wants_rerun
    assert r.looks == 3 and r.paired.level <= 0.05 / 3
    last = gate(baseline_noisy(), [run], look=2)
    assert last.verdict == "inconclusive" and last.failed and not last.wants_rerun
    assert "still inconclusive after 2 rerun(s)" in last.line()
    passing = gate(baseline_noisy(), [run], on_inconclusive="pass")
    assert passing.verdict == "inconclusive" and not passing.failed and passing.looks == 1
    assert passing.paired is not None and passing.paired.level == 0.05  # one look: the whole alpha
    assert gate(baseline_noisy(), [run], on_inconclusive="fail").failed


def test_pooled_reruns_decide() -> None:
    first = [0.6] * 12 + [1.0] * 8
    healthy = [0.6 if i % 2 else 1.0 for i in range(N)]
    r = gate(baseline_noisy(), [first, healthy, [1.0 if i % 2 else 0.6 for i in range(N)]], look=2)
    assert r.runs == 3 and r.verdict == "pass"  # pooled mean 0.7867: back in the band, no significant drop


def test_band_method_and_safety_keep_todays_gate() -> None:
    r = gate(baseline_noisy(), [[0.6] * 12 + [1.0] * 8], method="band")
    assert r.method == "band" and r.paired is None and r.verdict == "regression"
    convs = [conv(f"c{i:02d}", 0, [0.6]) for i in range(N)]
    rows = check({"core": aggregate("core", convs, n_boot=10)}, baseline_noisy(), GATE, convs=convs)
    assert next(x for x in rows if x.metric == "safety_pass_rate").paired is None


def test_a_deterministic_bot_gets_the_bands_verdicts() -> None:
    bl = make([conv(f"c{i:02d}", r, [0.0 if i % 3 == 0 else 1.0]) for i in range(N) for r in range(2)])
    base = [0.0 if i % 3 == 0 else 1.0 for i in range(N)]  # mean 0.65
    for flips, verdict in [(0, "pass"), (1, "regression"), (2, "regression")]:
        run = list(base)
        for j in range(flips):
            run[1 + 3 * j] = 0.0  # each flip: a 0.05 drop
        r = gate(bl, [run])
        assert r.paired is not None and r.paired.noise_free
        assert r.verdict == r.band_verdict == verdict
    # a change that helps some and hurts others, mean unchanged: the band's pass
    run = list(base)
    run[0], run[1] = 1.0, 0.0
    assert gate(bl, [run]).verdict == "pass"


def test_gate_policy_keys_sit_beside_the_tolerances(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pytest

    from pytest_ragdive.core.config import load_config
    from pytest_ragdive.core.config_models import DEFAULT_GATE
    from pytest_ragdive.core.errors import ConfigError

    p = tmp_path / "pyproject.toml"
    p.write_text('[tool.ragdive]\nmax_reruns = 1\n[tool.ragdive.gate]\nmethod = "band"\ninconclusive = "fail"\ncorrectness = 0.05\n')
    cfg = load_config(p)
    assert cfg.gate == {"correctness": 0.05, "assertion_pass_rate": 0.0}
    assert (cfg.gate_policy.method, cfg.gate_policy.inconclusive, cfg.max_reruns) == ("band", "fail", 1)
    assert load_config(p, {"max_reruns": "4"}).max_reruns == 4
    p.write_text('[tool.ragdive.gate]\nunstable_spread = 0.2\n')
    cfg = load_config(p)
    assert cfg.gate == DEFAULT_GATE and cfg.gate_policy.unstable_spread == 0.2  # policy alone keeps the default tolerances
    assert (cfg.gate_policy.method, cfg.gate_policy.inconclusive, cfg.max_reruns) == ("band+paired", "rerun", 2)
    p.write_text('[tool.ragdive.gate]\ninconclusive = "maybe"\n')
    with pytest.raises(ConfigError, match="key 'gate.inconclusive'"):
        load_config(p)


def test_report_lines_give_power_unstable_and_what_got_worse() -> None:
    from pytest_ragdive.core.records import Verdict
    from pytest_ragdive.gate.ranking import culprits
    from pytest_ragdive.reports.gate_lines import paired_lines
    from pytest_ragdive.reports.text import culprit_text

    run = [0.6] * (N - 2) + [1.0, 1.0]
    convs = [conv(f"c{i:02d}", 0, [v]) for i, v in enumerate(run)]
    convs[0].turns[0].verdicts["correctness"] = Verdict(value=0.0, reason="the answer names the wrong plan")
    rows = check({"core": aggregate("core", convs, n_boot=10)}, baseline_noisy(), GATE, convs=convs, unstable_spread=0.3)
    lines = paired_lines(rows)
    text = "\n".join(lines)
    assert lines[0].startswith("core/correctness: regression, paired drop +0.1600")
    assert "detects a drop of" in lines[0] and "too small for its tolerance, needs" in lines[0]
    assert "unstable in the baseline runs (p90 - p10 above the threshold): 20: c00, c01" in text
    assert "got worse (drop, share of the total drop): c00 +0.200 (6%)" in text
    # shares are of the total drop of the conversations that got worse: they never sum past 100%
    row = next(r for r in rows if r.metric == "correctness")
    assert sum(m.share for m in row.worse) <= 1 + 1e-9 and all(m.share > 0 for m in row.worse)
    found = culprits(row, convs)
    assert [c.id for c in found] == [m.id for m in row.worse[:5]]
    assert culprit_text(found[0], "correctness").endswith("turn 1: the answer names the wrong plan")
    assert paired_lines([r.model_copy(update={"paired": None}) for r in rows]) == []


def test_rerun_plans_repeat_the_conversations_that_ran_with_later_run_numbers(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from pytest_ragdive.core.config import load_config
    from pytest_ragdive.gate.rerun import rerun_plans, suites_to_rerun

    (tmp_path / "core.jsonl").write_text("\n".join(json.dumps({"question_id": q, "question": q + "?", "expected_answer": "x"}) for q in "abc"))
    (tmp_path / "ext.jsonl").write_text(json.dumps({"question_id": "z", "question": "z?", "expected_answer": "x"}))
    p = tmp_path / "pyproject.toml"
    p.write_text('[tool.ragdive]\nruns = 2\n[tool.ragdive.suites.core]\nsingle_turn = ["core.jsonl"]\n'
                 '[tool.ragdive.suites.extended]\nsingle_turn = ["ext.jsonl"]\n')
    cfg = load_config(p)
    ran = [conv(q, r, [1.0]) for q in "ab" for r in range(2)]  # "c" was deselected
    plans = rerun_plans(cfg, ["core"], 1, ran, llm_enabled=False)
    assert sorted((pl.conv_id, pl.run) for pl in plans) == [("a", 2), ("a", 3), ("b", 2), ("b", 3)]
    assert sorted((pl.conv_id, pl.run) for pl in rerun_plans(cfg, ["core"], 2, ran, False)) == [("a", 4), ("a", 5), ("b", 4), ("b", 5)]
    first = [0.6] * 12 + [1.0] * 8
    row = gate(baseline_noisy(), [first])
    assert suites_to_rerun([row, row.model_copy(update={"suite": "extended", "verdict": "pass"})]) == ["core"]
    assert suites_to_rerun([gate(baseline_noisy(), [first], look=2)]) == []


def test_a_sampled_bot_s_constant_metric_is_not_known_without_error() -> None:
    # correctness varies between the baseline's runs (the bot samples); forgetfulness happened
    # to repeat in all four. Two conversations of twenty forget in a single current run: a
    # difference a deterministic bot would show for sure, a sampled one by chance
    def c(cid: str, run: int, correct: float, forgot: float) -> Conversation:
        return scored(cid, run, correctness=[correct], safety_pass_rate=[1.0], conversation_scores={"forgetfulness": forgot})

    base = make([c(f"c{i:02d}", r, 0.6 if (i + r) % 2 else 1.0, 0.0) for i in range(N) for r in range(4)])
    now = [c(f"c{i:02d}", 0, 0.6 if i % 2 else 1.0, 1.0 if i < 2 else 0.0) for i in range(N)]
    rows = check({"core": aggregate("core", now, n_boot=10)}, base, GATE, convs=now)
    row = next(r for r in rows if r.metric == "forgetfulness")
    assert row.band_verdict == "regression" and row.paired is not None
    assert not row.paired.noise_free and not row.paired.significant and row.verdict == "inconclusive"
    # the same bot deterministic (correctness repeats): the difference is known, a regression
    det = make([c(f"c{i:02d}", r, 0.6 if i % 2 else 1.0, 0.0) for i in range(N) for r in range(4)])
    rows = check({"core": aggregate("core", now, n_boot=10)}, det, GATE, convs=now)
    row = next(r for r in rows if r.metric == "forgetfulness")
    assert row.paired is not None and row.paired.noise_free and row.verdict == "regression"
    # no difference at all stays known without error in a sampled suite (and out of Holm's family)
    same = [c(f"c{i:02d}", 0, 0.6 if i % 2 else 1.0, 0.0) for i in range(N)]
    rows = check({"core": aggregate("core", same, n_boot=10)}, base, GATE, convs=same)
    assert next(r for r in rows if r.metric == "forgetfulness").paired.noise_free  # type: ignore[union-attr]


def test_a_sampled_bot_s_deterministic_retrieval_stays_known_without_error() -> None:
    # the answers vary between runs, the retrieval does not: a retrieval drop is exact
    gate_ = {"correctness": 0.03, "recall_at_k": 0.03}

    def c(cid: str, run: int, correct: float, recall: float) -> Conversation:
        return scored(cid, run, correctness=[correct], recall_at_k=[recall])

    base = baseline_of([c(f"c{i:02d}", r, 0.6 if (i + r) % 2 else 1.0, 1.0) for i in range(N) for r in range(4)], gate_)
    now = [c(f"c{i:02d}", 0, 0.6 if i % 2 else 1.0, 0.0 if i < 3 else 1.0) for i in range(N)]
    rows = check({"core": aggregate("core", now, n_boot=10)}, base, gate_, convs=now)
    row = next(r for r in rows if r.metric == "recall_at_k")
    assert row.paired is not None and row.paired.noise_free and row.verdict == "regression"
