"""Floors beside the bands (``[tool.ragdive.floors]``, issue 33): a metric worse than its
floor fails whatever the baseline says; with no baseline, the floors alone gate."""

from __future__ import annotations

from pathlib import Path

import pytest
from factories import baseline_of, scored

from pytest_ragdive.core.config import RagdiveConfig, load_config
from pytest_ragdive.core.errors import ConfigError
from pytest_ragdive.gate.conclude import RunFacts, conclude
from pytest_ragdive.gate.floors import breaks_floor
from pytest_ragdive.gate.outcome import GateStatus
from pytest_ragdive.reports.markdown import gate_table_md
from pytest_ragdive.reports.text import status_text


def _cfg(tmp_path: Path, floors: str, gate: str = "correctness = 0.03\n") -> RagdiveConfig:
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.ragdive.gate]\n{gate}[tool.ragdive.floors]\n{floors}[tool.ragdive.suites.core]\nsingle_turn = ["q.jsonl"]\n'
    )
    return load_config(tmp_path / "pyproject.toml")


def _convs(correctness: float, forgetfulness: float) -> list:  # type: ignore[type-arg]
    return [scored(f"c{i}", correctness=[correctness], conversation_scores={"forgetfulness": forgetfulness}) for i in range(4)]


def test_direction_aware() -> None:
    assert breaks_floor(0.85, 0.9, "higher") and not breaks_floor(0.9, 0.9, "higher")
    assert breaks_floor(0.25, 0.2, "lower") and not breaks_floor(0.1, 0.2, "lower") and not breaks_floor(None, 0.2, "higher")


def test_with_no_baseline_the_floors_alone_gate(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, "correctness = 0.9\nforgetfulness = 0.2\n")
    ok = conclude(_convs(0.95, 0.1), cfg, None, RunFacts(planned=4))
    assert ok.status is GateStatus.PASSED and [(r.metric, r.verdict, r.floor) for r in ok.gate or []] == [
        ("correctness", "pass", 0.9), ("forgetfulness", "pass", 0.2)]
    assert status_text(ok) == "ragdive gate passed: 2 metric(s) within their floors (no baseline: gated on floors alone)"
    assert (ok.gate or [])[1].band_text == "≤ 0.2000 (floor)"
    bad = conclude(_convs(0.8, 0.3), cfg, None, RunFacts(planned=4))
    assert bad.status is GateStatus.FAILED
    rows = {r.metric: r for r in bad.gate or []}
    assert rows["correctness"].verdict == rows["forgetfulness"].verdict == "below floor"
    assert rows["correctness"].reason == (
        "0.800 is below the floor 0.900 set in [tool.ragdive.floors]: fails whatever the baseline says")
    assert rows["forgetfulness"].reason.startswith("0.300 is above the ceiling 0.200")
    assert "core/correctness, core/forgetfulness broke their floor" in status_text(bad)
    table = "\n".join(gate_table_md(bad.gate or []))
    assert "BELOW FLOOR" in table and "≥ 0.9000 (floor)" in table
    # no floors, no baseline: nothing gated, as before
    plain = conclude(_convs(0.8, 0.3), _cfg(tmp_path, ""), None, RunFacts(planned=4))
    assert plain.status is GateStatus.NOT_GATED and plain.gate is None


def test_a_floor_fails_a_metric_the_baseline_band_would_pass(tmp_path: Path) -> None:
    """The baseline recorded 0.8 correctness: the band passes 0.8 today, the floor 0.9 does not;
    a floored metric the gate does not band (forgetfulness) gets a row of its own."""
    bl = baseline_of(_convs(0.8, 0.1), {"correctness": 0.03})
    cfg = _cfg(tmp_path, "correctness = 0.9\nforgetfulness = 0.2\n")
    out = conclude(_convs(0.8, 0.1), cfg, bl, RunFacts(planned=4))
    rows = {r.metric: r for r in out.gate or []}
    assert out.status is GateStatus.FAILED
    assert rows["correctness"].verdict == "below floor" and rows["correctness"].band_verdict == "pass"
    assert rows["correctness"].band_text.startswith("[0.77") and rows["forgetfulness"].verdict == "pass"
    ok = conclude(_convs(0.8, 0.1), _cfg(tmp_path, "correctness = 0.75\n"), bl, RunFacts(planned=4))
    assert ok.status is GateStatus.PASSED and (ok.gate or [])[0].floor == 0.75
    assert status_text(ok).endswith("within their baseline bands and floors (1 floored)")


def test_a_floor_names_a_known_metric(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"key 'floors': unknown metric 'faithfullness'"):
        _cfg(tmp_path, "faithfullness = 0.9\n").metrics  # noqa: B018 - building the registry checks the names
    with pytest.raises(ConfigError, match="floors"):
        _cfg(tmp_path, 'faithfulness = "high"\n')


def test_a_first_pr_with_no_baseline_is_gated_on_floors(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import PYPROJECT

    toy.makefile(".toml", pyproject=PYPROJECT.format(extra="") + "[tool.ragdive.floors]\nrecall_at_k = 0.95\n")
    ok = toy.runpytest("-p", "no:cacheprovider", "--ragdive-suite=core")
    assert ok.ret == 0
    ok.stdout.fnmatch_lines(["*ragdive gate passed: 1 metric(s) within their floors (no baseline: gated on floors alone)*"])
    monkeypatch.setenv("TOY_FORGET", "1")  # the follow-ups lose their documents
    bad = toy.runpytest("-p", "no:cacheprovider", "--ragdive-suite=core")
    assert bad.ret == 1
    bad.stdout.fnmatch_lines(["*recall_at_k*BELOW FLOOR*below the floor 0.950*"])
