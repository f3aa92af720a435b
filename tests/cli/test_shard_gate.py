"""--ragdive-shard=I/N and ``ragdive gate``: a suite split over machines and
gated once. Four shards merged by the gate command give the same metrics,
verdicts, reports and exit code as one unsharded run (also with ``-n 2``
inside each shard); a shard alone never gates or records a baseline."""

from __future__ import annotations

import json
import os

import pytest
from conftest import results

from pytest_ragdive.cli import main
from pytest_ragdive.core.config import RagdiveConfig
from pytest_ragdive.core.records import Conversation, Turn
from pytest_ragdive.run.planning import Plan, expected_turns, shard_plans


def gate(pytester: pytest.Pytester, *args: str) -> int:
    old = os.getcwd()
    os.chdir(pytester.path)
    try:
        return main(["gate", *args])
    finally:
        os.chdir(old)


def _timeless(conv: dict) -> dict:
    """A conversation without its latencies (wall-clock times differ from run to run)."""
    return {**conv, "turns": [{k: v for k, v in t.items() if k != "latency_s"} for t in conv["turns"]]}


def comparable(data: dict) -> dict:
    """What must not depend on sharding: the metrics, the gate rows, the status, the conversations."""
    return {
        "status": data["status"],
        "suites": data["suites"],
        "suite_results": data["suite_results"],
        "gate": data["gate"],
        "conversations": sorted(json.dumps(_timeless(c), sort_keys=True) for c in data["conversations"]),
        "planned": data["info"]["planned"],
    }


def no_reruns(toy: pytest.Pytester) -> None:
    """An inconclusive gate fails instead of rerunning: the gate command cannot rerun
    result files, so both sides must decide on the same runs."""
    path = toy.path / "pyproject.toml"
    path.write_text(path.read_text().replace("[tool.ragdive.gate]\n", '[tool.ragdive.gate]\ninconclusive = "fail"\n'))


def run_shards(toy: pytest.Pytester, n: int, *extra: str, subprocess: bool = False) -> list[str]:
    paths = []
    for i in range(1, n + 1):
        args = ("--ragdive-baseline=baseline.json", f"--ragdive-shard={i}/{n}", f"--ragdive-report-dir=shard{i}",
                "-p", "no:cacheprovider", *extra)
        res = toy.runpytest_subprocess(*args) if subprocess else toy.runpytest(*args)
        assert res.ret == 0, res.stdout.str()[-2000:]  # a shard never fails the gate alone
        res.stdout.fnmatch_lines([f"ragdive shard {i}/{n}: results written; the gate command decides"])
        data = json.loads((toy.path / f"shard{i}" / "results.json").read_text())
        assert data["status"] == "shard" and data["gate"] is None and data["info"]["shard"] == f"{i}/{n}"
        paths.append(f"shard{i}/results.json")
    return paths


def test_four_shards_merged_equal_one_run(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    no_reruns(toy)
    assert toy.runpytest("--ragdive-baseline=baseline.json", "--ragdive-update-baseline").ret == 0
    whole = toy.runpytest("--ragdive-baseline=baseline.json", "-p", "no:cacheprovider")
    assert whole.ret == 0
    expected = comparable(results(toy))
    paths = run_shards(toy, 4)
    assert gate(toy, *paths, "--baseline", "baseline.json", "--report-dir", "merged") == 0
    merged = json.loads((toy.path / "merged" / "results.json").read_text())
    assert comparable(merged) == expected
    assert {p.name for p in (toy.path / "merged").iterdir()} == {p.name for p in (toy.path / "report").iterdir()}
    md = (toy.path / "merged" / "summary.md").read_text()
    assert md.replace("merged 4 shards", "") .count("**PASSED**") == 1


def test_four_shards_under_xdist_fail_like_one_run(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    no_reruns(toy)
    assert toy.runpytest("--ragdive-baseline=baseline.json", "--ragdive-update-baseline").ret == 0
    monkeypatch.setenv("TOY_FORGET", "1")  # the toy bot forgets the conversation: forgetfulness regresses
    whole = toy.runpytest("--ragdive-baseline=baseline.json", "-p", "no:cacheprovider")
    assert whole.ret == 1
    expected = comparable(results(toy))
    assert any(r["verdict"] == "regression" for r in expected["gate"])
    paths = run_shards(toy, 4, "-n", "2")
    assert gate(toy, *paths, "--baseline", "baseline.json", "--report-dir", "merged") == 1
    merged = json.loads((toy.path / "merged" / "results.json").read_text())
    assert comparable(merged) == expected
    junit = (toy.path / "merged" / "ragdive-junit.xml").read_text()
    assert junit == (toy.path / "report" / "ragdive-junit.xml").read_text()


def test_gate_refuses_incomplete_or_mixed_shards(toy: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    assert toy.runpytest("--ragdive-baseline=baseline.json", "--ragdive-update-baseline").ret == 0
    paths = run_shards(toy, 3)
    assert gate(toy, *paths[:2], "--baseline", "baseline.json") == 4
    assert "shard(s) 3/3 missing" in capsys.readouterr().err
    assert gate(toy, paths[0], paths[0], paths[1], paths[2], "--baseline", "baseline.json") == 4
    assert "given twice" in capsys.readouterr().err
    assert toy.runpytest("--ragdive-baseline=baseline.json", "-p", "no:cacheprovider").ret == 0
    assert gate(toy, *paths, "report/results.json", "--baseline", "baseline.json") == 4
    assert "is not a shard" in capsys.readouterr().err
    assert gate(toy, "nope.json") == 4
    assert "not found" in capsys.readouterr().err


def test_a_shard_cannot_record_a_baseline(toy: pytest.Pytester) -> None:
    res = toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline", "--ragdive-shard=1/2")
    assert res.ret == 4
    res.stderr.fnmatch_lines(["*one shard cannot record a baseline*"])
    assert not (toy.path / "b.json").exists()
    assert toy.runpytest("--ragdive-suite=core", "--ragdive-shard=3/2").ret == 4


def _plan(i: int, turns: int) -> Plan:
    conv = Conversation(id=f"c{i:02d}", turns=[Turn(rag_input=f"q{k}") for k in range(turns)])
    return Plan(suite="core", run=0, conv_id=conv.id, kind="golden", script=conv)


def test_shards_partition_deterministically_and_balance_turns() -> None:
    plans = [_plan(i, 1 + (i * 7) % 5) for i in range(23)]
    shards = [shard_plans(plans, i, 4) for i in range(1, 5)]
    keys = [p.key for s in shards for p in s]
    assert sorted(keys) == sorted(p.key for p in plans)  # a partition: every plan once
    loads = [sum(map(expected_turns, s)) for s in shards]
    assert max(loads) - min(loads) <= max(map(expected_turns, plans))
    # the same plan list in another order (another machine) gives the same shards
    again = [shard_plans(list(reversed(plans)), i, 4) for i in range(1, 5)]
    assert [sorted(p.key for p in s) for s in again] == [sorted(p.key for p in s) for s in shards]
    with pytest.raises(ValueError):
        shard_plans(plans, 5, 4)
    assert RagdiveConfig(shard=" 2 / 4").shard == "2/4"


def test_report_command_renders_result_files(toy: pytest.Pytester) -> None:
    assert toy.runpytest("--ragdive-baseline=baseline.json", "--ragdive-update-baseline").ret == 0
    paths = run_shards(toy, 2)
    old = os.getcwd()
    os.chdir(toy.path)
    try:
        # several files: merged (and gated with --baseline), never failing: it renders
        assert main(["report", *paths, "-o", "out", "--baseline", "baseline.json"]) == 0
        # one file: rendered as it was recorded
        assert main(["report", "shard1/results.json", "-o", "one"]) == 0
    finally:
        os.chdir(old)
    assert {p.name for p in (toy.path / "out").iterdir()} == {
        "results.json", "ragdive-junit.xml", "summary.md", "pr-comment.md", "report.html", ".ragdive-reports.json"}
    merged = json.loads((toy.path / "out" / "results.json").read_text())
    assert merged["status"] == "passed" and len(merged["conversations"]) == 5
    one = json.loads((toy.path / "one" / "results.json").read_text())
    assert one["status"] == "shard" and one["info"]["shard"] == "1/2"
    assert "ragdive shard 1/2" in (toy.path / "one" / "summary.md").read_text()


def test_exit_code_mirrors_the_session() -> None:
    from pytest_ragdive.cli.gate import exit_code
    from pytest_ragdive.gate.outcome import GateStatus, RunInfo, RunOutcome

    ok = Conversation(id="a", turns=[Turn(rag_input="q", answer="a")])
    unsafe = ok.model_copy(update={"id": "b", "failures": ["turn 1: answer states forbidden text 'x'"]})

    def outcome(status: GateStatus, convs: list[Conversation], completed: bool = True) -> RunOutcome:
        return RunOutcome(info=RunInfo(completed=completed), status=status, conversations=convs)

    assert exit_code(outcome(GateStatus.PASSED, [ok])) == 0
    assert exit_code(outcome(GateStatus.FAILED, [ok])) == 1
    assert exit_code(outcome(GateStatus.PASSED, [ok, unsafe])) == 1  # its item failed in its shard
    assert exit_code(outcome(GateStatus.NOT_GATED, [])) == 5
    assert exit_code(outcome(GateStatus.PASSED, [ok], completed=False)) == 2


def test_gate_on_one_unsharded_results_file_does_not_speak_of_shards(
    toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """issue 33: "failed their item in the shards" for a plain run's one results.json."""
    toy.runpytest("--ragdive-baseline=baseline.json", "--ragdive-update-baseline", "-p", "no:cacheprovider")
    monkeypatch.setenv("TOY_RAISE_ON", "grass?")
    toy.runpytest("-p", "no:cacheprovider", "--ragdive-suite=core").assert_outcomes(passed=4, failed=1)
    capsys.readouterr()
    assert gate(toy, "report/results.json", "--baseline", "baseline.json") == 1
    out = capsys.readouterr().out
    assert "1 conversation(s) failed their item in the run: core/q-grass run 0" in out and "shard" not in out.replace(str(toy.path), "")
