"""The session gate, end to end, in real pytest sessions (pytester)."""

from __future__ import annotations

import json

import pytest
from conftest import results


def test_healthy_run_scores_every_conversation(toy: pytest.Pytester) -> None:
    res = toy.runpytest("--ragdive-suite=core", "-p", "no:cacheprovider")
    res.assert_outcomes(passed=5)
    data = results(toy)
    assert data["suites"]["core"]["correctness"] == 1.0
    assert data["suites"]["core"]["forgetfulness"] == 0.0
    assert len(data["conversations"]) == 5
    res.stdout.fnmatch_lines(["*ragdive*", "*correctness*1.0000*", "no baseline given*"])


def test_regression_fails_session_and_names_metric(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    toy.runpytest("--ragdive-baseline=baseline.json", "--ragdive-update-baseline").assert_outcomes(passed=5)
    stored = json.loads((toy.path / "baseline.json").read_text())
    assert stored["suites"]["core"]["forgetfulness"]["max"] == 0.0
    assert stored["backend"] == "offline"

    ok = toy.runpytest("--ragdive-baseline=baseline.json")
    assert ok.ret == 0
    ok.stdout.fnmatch_lines(["*ragdive gate passed*"])

    monkeypatch.setenv("TOY_FORGET", "1")
    bad = toy.runpytest("--ragdive-baseline=baseline.json")
    assert bad.ret == 1
    bad.assert_outcomes(passed=5)  # every item ran; the gate fails the session
    bad.stdout.fnmatch_lines(["*forgetfulness*REGRESSION*", "*ragdive gate FAILED*"])
    rows = {r["metric"]: r for r in results(toy)["gate"]}
    assert rows["forgetfulness"]["verdict"] == "regression"
    assert rows["forgetfulness"]["current"] == 1.0
    junit = (toy.path / "report" / "ragdive-junit.xml").read_text()
    assert "forgetfulness" in junit and "<failure" in junit
    md = (toy.path / "report" / "summary.md").read_text()
    assert "FAILED" in md and "c-colours" in md


def test_within_band_passes_with_tolerance(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline").assert_outcomes(passed=5)
    data = json.loads((toy.path / "b.json").read_text())
    # pretend the baseline was a little better than today, but within tolerance (band alone:
    # the stored per-conversation values would contradict the edited band)
    data["suites"]["core"]["correctness"].update(min=1.04, max=1.04, mean=1.04, conversations=None)
    (toy.path / "b.json").write_text(json.dumps(data))
    assert toy.runpytest("--ragdive-baseline=b.json").ret == 0
    data["suites"]["core"]["correctness"].update(min=1.06, max=1.06, mean=1.06, conversations=None)
    (toy.path / "b.json").write_text(json.dumps(data))
    res = toy.runpytest("--ragdive-baseline=b.json")
    assert res.ret == 1
    res.stdout.fnmatch_lines(["*correctness*REGRESSION*"])


def test_improvement_is_listed_and_passes(toy: pytest.Pytester) -> None:
    toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline")
    data = json.loads((toy.path / "b.json").read_text())
    data["suites"]["core"]["correctness"].update(min=0.5, max=0.6, mean=0.55)
    (toy.path / "b.json").write_text(json.dumps(data))
    res = toy.runpytest("--ragdive-baseline=b.json")
    assert res.ret == 0
    res.stdout.fnmatch_lines(["improvements*", "*correctness*IMPROVEMENT*"])


def test_raising_target_fails_one_item_and_others_count(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOY_RAISE_ON", "grass?")
    res = toy.runpytest("--ragdive-suite=core")
    res.assert_outcomes(passed=4, failed=1)
    res.stdout.fnmatch_lines(["*toy bot exploded*"])
    data = results(toy)
    errored = [c for c in data["conversations"] if c["error"]]
    assert [c["id"] for c in errored] == ["q-grass"]
    assert data["suite_results"]["core"]["errors"] == 1
    assert data["suite_results"]["core"]["conversations"] == 5
    assert data["suites"]["core"]["correctness"] == 1.0  # the other four still count


def test_safety_violation_fails_item_and_gate(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline").assert_outcomes(passed=5)
    monkeypatch.setenv("TOY_UNSAFE", "1")
    res = toy.runpytest("--ragdive-baseline=b.json")
    res.assert_outcomes(passed=4, failed=1)
    assert res.ret == 1
    res.stdout.fnmatch_lines(["*safety violation (zero tolerance)*", "*guaranteed*", "*safety_pass_rate*REGRESSION*"])


def test_runs_repeat_each_conversation(toy: pytest.Pytester) -> None:
    res = toy.runpytest("--ragdive-suite=core", "--ragdive-runs=3")
    res.assert_outcomes(passed=15)
    sr = results(toy)["suite_results"]["core"]
    assert sr["runs"] == 3
    assert sr["metrics"]["correctness"]["per_run"] == [1.0, 1.0, 1.0]


def test_xdist_gives_the_same_metrics(toy: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    toy.runpytest_subprocess("--ragdive-suite=core", "-p", "no:cacheprovider").assert_outcomes(passed=5)
    plain = results(toy)
    res = toy.runpytest_subprocess("--ragdive-suite=core", "-n", "2", "-p", "no:cacheprovider")
    res.assert_outcomes(passed=5)
    dist = results(toy)
    assert dist["suites"] == plain["suites"]  # exactly: no dependence on report order
    for name, mv in plain["suite_results"]["core"]["metrics"].items():
        assert dist["suite_results"]["core"]["metrics"][name]["ci_low"] == mv["ci_low"], name
    assert sorted(c["id"] for c in dist["conversations"]) == sorted(c["id"] for c in plain["conversations"])


def test_github_step_summary_is_appended(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    step = toy.path / "step.md"
    step.write_text("previous\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    toy.runpytest("--ragdive-suite=core").assert_outcomes(passed=5)
    text = step.read_text()
    assert text.startswith("previous\n") and "# ragdive quality gate" in text


def test_update_baseline_keeps_other_suites(toy: pytest.Pytester) -> None:
    toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline")
    data = json.loads((toy.path / "b.json").read_text())
    data["suites"]["extended"] = {"correctness": data["suites"]["core"]["correctness"]}
    (toy.path / "b.json").write_text(json.dumps(data))
    toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline")
    again = json.loads((toy.path / "b.json").read_text())
    assert set(again["suites"]) == {"core", "extended"}


def test_no_baseline_from_a_partial_or_failing_run(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    res = toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline", "-k", "c-colours")
    assert res.ret == 1
    res.stdout.fnmatch_lines(["*baseline NOT written: only 1 of 5 planned conversations ran*"])
    assert not (toy.path / "b.json").exists()

    monkeypatch.setenv("TOY_RAISE_ON", "grass?")
    res = toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline")
    res.stdout.fnmatch_lines(["*baseline NOT written: 1 conversation(s) errored*"])
    assert not (toy.path / "b.json").exists()
    # the finished conversations are still reported
    assert len(results(toy)["conversations"]) == 5


def test_gating_a_subset_says_so(toy: pytest.Pytester) -> None:
    toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline").assert_outcomes(passed=5)
    res = toy.runpytest("--ragdive-baseline=b.json", "-k", "q-sky or c-grass")
    res.stdout.fnmatch_lines(["*only 2 of 5 planned conversations ran*"])


def test_maxfail_run_writes_no_baseline(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOY_RAISE_ON", "sky")
    res = toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline", "-x")
    assert res.ret == 1
    assert not (toy.path / "b.json").exists()
    res.stdout.fnmatch_lines(["*baseline NOT written*"])
