"""The answers a baseline keeps (one recorded run, compressed, bounded, in a sibling file
the baseline names) and the conversations of a failing run they are shown for; and a
report rendered again from results.json draws the same page."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest
from example_outcome import EXAMPLE, example_outcome

from pytest_ragdive.core.config import load_config
from pytest_ragdive.core.records import Conversation, Turn
from pytest_ragdive.gate import answers as answers_mod
from pytest_ragdive.gate.answers import (
    answers_bytes,
    answers_file,
    build_answers,
    changed_turns,
    compared,
    load_answers,
)
from pytest_ragdive.gate.baseline import load_baseline
from pytest_ragdive.gate.conclude import RunFacts, conclude, publish
from pytest_ragdive.gate.outcome import GateStatus
from pytest_ragdive.reports.html import render_html
from pytest_ragdive.reports.html_bits import cls
from pytest_ragdive.reports.result_files import read_outcome
from pytest_ragdive.reports.write import write_reports


def conv(cid: str, run: int, answers: list[str], score: float = 1.0, error: str | None = None) -> Conversation:
    return Conversation(id=cid, run=run, error=error, turns=[
        Turn(index=i, rag_input=f"q{i}", answer=a, scores={"correctness": score, "faithfulness": score}, flags=["forgetful"] * (i == 1))
        for i, a in enumerate(answers)])


def test_one_run_kept_clipped_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    convs = [conv("b", 1, ["later run"]), conv("b", 0, ["x" * 5000, "two"]), conv("a", 0, ["a0"]), conv("e", 0, ["?"], error="boom")]
    got = build_answers(convs, {"core": ["correctness", "forgetfulness"]})
    assert got.run == 0 and list(got.suites["core"]) == ["a", "b"]  # the first run; errored ones left out
    b = got.suites["core"]["b"]
    assert len(b.turns[0].answer or "") == answers_mod.ANSWER_CHARS and (b.turns[0].answer or "").endswith("…")
    assert b.turns[1].scores == {"correctness": 1.0} and b.scores == {"correctness": 1.0} and b.flags == {"2": ["forgetful"]}
    assert answers_bytes(got) == answers_bytes(build_answers(convs, {"core": ["correctness", "forgetfulness"]}))  # same bytes
    assert answers_bytes(got)[4:8] == b"\0\0\0\0"  # no timestamp in the gzip header
    monkeypatch.setattr(answers_mod, "MAX_CHARS", 3000)
    small = build_answers(convs, {"core": ["correctness"]})
    assert list(small.suites["core"]) == ["a"] and small.left_out == 1
    assert build_answers(convs, {"core": ["sharded_gap"]}).suites == {}  # suite-level figures: nothing to compare


def test_compared_picks_the_conversations_that_pull_a_failed_metric_down() -> None:
    base = build_answers([conv("up", 0, ["ok"], 0.5), conv("down", 0, ["ok"], 1.0), conv("same", 0, ["ok"], 0.8)],
                         {"core": ["correctness"]})
    now = [conv("up", 0, ["ok"], 0.9), conv("down", 0, ["bad"], 0.2), conv("same", 0, ["ok"], 0.8)]
    from pytest_ragdive.gate.rows import GateRow

    row = GateRow(suite="core", metric="correctness", direction="higher", baseline_mean=0.77, band_low=0.7, band_high=0.8,
                  tolerance=0.03, current=0.63, delta=-0.14, verdict="regression")
    assert list(compared([row], now, base)) == ["core::down"]
    assert compared([row.model_copy(update={"verdict": "pass"})], now, base) == {}


@pytest.fixture()
def recorded(tmp_path: Path) -> Path:
    """A copy of the example's baseline and answers file."""
    for name in ("baseline.json", "baseline.answers.json.gz"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    return tmp_path / "baseline.json"


def test_the_example_baseline_names_its_answers_file(recorded: Path) -> None:
    bl = load_baseline(recorded)
    assert bl.answers is not None and bl.answers.file == answers_file(recorded).name == "baseline.answers.json.gz"
    got, note = load_answers(bl, recorded)
    assert note is None and got is not None and got.run == 0
    assert sum(len(v) for v in got.suites.values()) == bl.answers.conversations
    assert set(got.suites) == {"core", "extended", "attacks"}  # the diagnosis is gated on suite-level figures only
    # a changed or missing file: a note, and no answers (never a wrong one)
    raw = gzip.decompress(recorded.with_name("baseline.answers.json.gz").read_bytes())
    recorded.with_name("baseline.answers.json.gz").write_bytes(gzip.compress(raw.replace(b"Lumio", b"Lumia")))
    got, note = load_answers(bl, recorded)
    assert got is None and note is not None and "does not match the baseline" in note
    recorded.with_name("baseline.answers.json.gz").unlink()
    got, note = load_answers(bl, recorded)
    assert got is None and note is not None and "is missing" in note


def test_an_update_writes_the_answers_beside_the_baseline(tmp_path: Path) -> None:
    cfg = load_config(EXAMPLE / "pyproject.toml")
    cfg.suite, cfg.update_baseline = "core", True
    cfg.baseline = str(tmp_path / "b.json")
    cfg.report_dir = None
    src = example_outcome(history="full", gate=False, markup=False)
    out = conclude(src.conversations, cfg, None, RunFacts(planned=len(src.conversations)))
    assert out.status is GateStatus.BASELINE_WRITTEN and out.recorded_answers is not None
    publish(out, cfg)
    bl = load_baseline(tmp_path / "b.json")
    got, note = load_answers(bl, tmp_path / "b.json")
    assert note is None and got == out.recorded_answers and len(got.suites["core"]) == 30
    assert json.loads((tmp_path / "b.json").read_text())["answers"]["file"] == "b.answers.json.gz"


def test_a_failing_gate_carries_the_baseline_answers_and_results_json_draws_the_same_page(tmp_path: Path) -> None:
    outcome = example_outcome(history="full", reader="memory", markup=False)
    assert outcome.failed and "core::core-2fa-recovery" in outcome.baseline_answers
    assert len(outcome.baseline_answers) <= answers_mod.PER_ROW * len(outcome.regressions())
    write_reports(tmp_path, outcome)
    again = read_outcome(tmp_path / "results.json")
    assert again.baseline_answers == outcome.baseline_answers
    assert again.conversations[0].turns[0].evidence == outcome.conversations[0].turns[0].evidence
    assert render_html(again) == render_html(outcome)
    assert again.answers_changed == outcome.answers_changed
    # issue 33: the tag "answer changed since the baseline" is on exactly the conversations whose answers
    # differ from the recorded ones (it was on every compared one, and on no other)
    changed = changed_turns(outcome.conversations, load_answers(load_baseline(EXAMPLE / "baseline.json"), EXAMPLE / "baseline.json")[0])
    assert outcome.answers_changed == changed and changed
    page = render_html(outcome)
    tagged = set(re.findall(r'id="conv-([^"]+)"><summary>[^\n]*?answer changed since the baseline \(turns? [0-9, ]+\)', page))
    shown = set(re.findall(r'id="conv-([^"]+)"><summary>', page))
    assert tagged and tagged == {cls(k) for k in changed} & shown
    passing = example_outcome(history="full", markup=False)
    assert not passing.failed and passing.baseline_answers == {}  # only a failing gate needs them
    assert passing.answers_changed == changed_turns(passing.conversations, load_answers(
        load_baseline(EXAMPLE / "baseline.json"), EXAMPLE / "baseline.json")[0])


def test_changed_turns_are_the_turns_answered_otherwise() -> None:
    """issue 33: a changed turn 3 is named; a conversation answered as recorded is not."""
    recorded = [Conversation(id=i, suite="core", turns=[Turn(index=k, rag_input="q", answer=f"a{k}") for k in range(3)])
                for i in ("same", "moved")]
    answers = build_answers(recorded, {"core": ["answer_f1"]})
    now = [recorded[0], recorded[1].model_copy(update={"turns": [*recorded[1].turns[:2], Turn(index=2, rag_input="q", answer="new")]})]
    later = now[1].model_copy(update={"run": 1, "turns": [Turn(index=0, rag_input="q", answer="other")]})
    assert changed_turns([*now, later], answers) == {"core::moved::run0": [3]}  # the first run only
