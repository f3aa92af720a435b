"""Baseline files: format 2 (per-conversation values), loading checks, atomic writes,
and the gate over them (band alone, or band + paired)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from factories import baseline_of, scored

from pytest_ragdive.core.errors import BaselineError, UsageError
from pytest_ragdive.core.records import Conversation
from pytest_ragdive.core.results import Baseline
from pytest_ragdive.gate.baseline import (
    baseline_note,
    dumps_baseline,
    load_baseline,
    write_baseline,
)
from pytest_ragdive.gate.rows import check
from pytest_ragdive.metrics.aggregate import aggregate

GATE = {"correctness": 0.03, "forgetfulness": 0.05, "safety_pass_rate": 0.0}
EXAMPLE_V1 = Path(__file__).parents[1] / "data" / "baseline_v1.json"  # the example baseline as 0.1 wrote it (format 1)


def conv(cid: str, run: int, correct: list[float | None], forgot: float = 0.0, suite: str = "core") -> Conversation:
    return scored(cid, run, suite=suite, conversation_scores={"forgetfulness": forgot},
                  correctness=correct, safety_pass_rate=[1.0] * len(correct))


def runs_of(pattern: dict[str, list[list[float | None]]]) -> list[Conversation]:
    """{conversation id: [turn scores of run 0, of run 1, ...]}"""
    return [conv(cid, r, turns) for cid, per_run in pattern.items() for r, turns in enumerate(per_run)]


def make(convs: list[Conversation]) -> Baseline:
    return baseline_of(convs, GATE)


def test_format_2_stores_each_conversations_value_per_run_one_per_line(tmp_path: Path) -> None:
    convs = runs_of({"b-conv": [[1.0, 0.0], [1.0, 1.0], [1.0, None]], "a-conv": [[0.0], [1.0], [1.0]]})
    bl = make(convs)
    assert bl.format_version == 2
    c = bl.suites["core"]["correctness"].conversations
    assert c == {"a-conv": [(0.0, 1), (1.0, 1), (1.0, 1)], "b-conv": [(0.5, 2), (1.0, 2), (1.0, 1)]}
    assert bl.suites["core"]["forgetfulness"].conversations == {"a-conv": [(0.0, 1)] * 3, "b-conv": [(0.0, 1)] * 3}
    assert bl.suites["core"]["safety_pass_rate"].conversations is None  # zero tolerance, no statistics
    path = tmp_path / "baseline.json"
    write_baseline(path, bl)
    text = path.read_text()
    assert '      "a-conv": [[0.0, 1], [1.0, 1], [1.0, 1]],\n' in text
    assert '      "b-conv": [[0.5, 2], [1.0, 2], [1.0, 1]]\n' in text
    assert text.index('"a-conv"') < text.index('"b-conv"') and text.index('"backend"') < text.index('"suites"')
    assert json.loads(text)["format_version"] == 2
    assert load_baseline(path) == bl
    assert [p.name for p in tmp_path.iterdir()] == ["baseline.json"]  # no temporary file left


def test_old_format_loads_and_gates_by_band_alone() -> None:
    bl = load_baseline(EXAMPLE_V1)
    assert bl.format_version == 1
    note = baseline_note(bl, EXAMPLE_V1, "band+paired")
    assert note is not None and "band alone" in note and "\n" not in note
    assert baseline_note(bl, EXAMPLE_V1, "band") is None
    convs = [conv("x", 0, [1.0])]
    rows = check({"core": aggregate("core", convs, n_boot=10)}, bl, {"correctness": 0.03}, convs=convs)
    assert rows[0].method == "band" and rows[0].paired is None and rows[0].verdict in ("pass", "improvement")


BAD = [
    ("NaN", lambda d: d["suites"]["core"]["correctness"].update(min=float("nan")), "suites.core.correctness.min"),
    ("inf", lambda d: d["suites"]["core"]["correctness"].update(max=float("inf")), "suites.core.correctness.max"),
    ("-inf", lambda d: d["suites"]["core"]["correctness"].update(mean=float("-inf")), "suites.core.correctness.mean"),
    ("min>max", lambda d: d["suites"]["core"]["correctness"].update(min=0.9, max=0.8), "min 0.9 > max 0.8"),
    ("string", lambda d: d["suites"]["core"]["correctness"].update(tolerance="0.03"), "suites.core.correctness.tolerance"),
    ("bool", lambda d: d["suites"]["core"]["correctness"].update(mean=True), "suites.core.correctness.mean"),
    ("version", lambda d: d.update(format_version=3), "unknown format_version 3"),
    ("metric", lambda d: d["suites"]["core"].update(helpfulness=d["suites"]["core"]["correctness"]), "suites.core.helpfulness: unknown metric"),
    ("suite", lambda d: d["suites"].update({"night ly": d["suites"]["core"]}), "suites.night ly: not a suite name"),
    ("direction", lambda d: d["suites"]["core"]["correctness"].update(direction="lower"), "suites.core.correctness.direction"),
    ("conv NaN", lambda d: d["suites"]["core"]["correctness"]["conversations"].update(x=[[float("nan"), 1]]), "conversations.x.0.0"),
    ("conv runs", lambda d: d["suites"]["core"]["correctness"]["conversations"].update(x=[[1.0, 1], [1.0, 1]]), "2 run value(s)"),
]


@pytest.mark.parametrize(("what", "spoil", "key"), BAD, ids=[b[0] for b in BAD])
def test_bad_baseline_is_a_usage_error_naming_file_and_key(tmp_path: Path, what: str, spoil, key: str) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(dumps_baseline(make([conv("x", 0, [1.0])])))
    spoil(data)
    path = tmp_path / "b.json"
    path.write_text(json.dumps(data))  # json writes NaN / Infinity literals
    with pytest.raises(BaselineError) as e:
        load_baseline(path)
    assert isinstance(e.value, UsageError)
    msg = str(e.value)
    assert str(path) in msg and key in msg and "\n" not in msg


def test_bad_baseline_exits_4_in_a_session(toy: pytest.Pytester) -> None:
    toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline").assert_outcomes(passed=5)
    data = json.loads((toy.path / "b.json").read_text())
    data["suites"]["core"]["correctness"]["min"] = float("nan")
    (toy.path / "b.json").write_text(json.dumps(data))
    res = toy.runpytest("--ragdive-baseline=b.json")
    assert res.ret == 4
    res.stderr.fnmatch_lines(["*b.json is invalid: suites.core.correctness.min: Input should be a finite number*"])


def test_write_is_atomic_and_concurrent_writers_do_not_clash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "b.json"
    bls = [make([conv("x", 0, [float(i % 2)])]) for i in range(8)]
    errors: list[BaseException] = []

    def write(bl: Baseline) -> None:
        try:
            write_baseline(path, bl)
        except BaseException as e:  # pragma: no cover - the assertion below shows it
            errors.append(e)

    threads = [threading.Thread(target=write, args=(b,)) for b in bls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert load_baseline(path) in bls
    assert [p.name for p in tmp_path.iterdir()] == ["b.json"]
    # a write that fails before the rename leaves the old file whole and no temporary file
    before = path.read_text()

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        write_baseline(path, bls[0])
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["b.json"]
