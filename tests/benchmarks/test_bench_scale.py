"""benchmarks/bench_scale.py measures what users run: a baseline recorded, then the gate
against it, with the gate's own time and memory measured inside the concluding process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import load_benchmark

pytestmark = pytest.mark.slow  # starts processes of its own


def test_the_gated_mode_records_then_gates_and_measures_the_gate(tmp_path: Path) -> None:
    b = load_benchmark("bench_scale")
    b.make_project(tmp_path, 4)
    rec = b.run_once(tmp_path, 0, "record", ("--ragdive-baseline=baseline.json", "--ragdive-update-baseline"))
    assert (tmp_path / "baseline.json").is_file() and rec["check_cpu"] == 0.0  # recording: nothing paired
    gated = b.run_once(tmp_path, 0, "plain", ("--ragdive-baseline=baseline.json",))  # exits unless pytest passed
    data = json.loads((tmp_path / "report-plain" / "results.json").read_text())
    assert data["status"] in ("passed", "inconclusive") and {r["metric"] for r in data["gate"]} >= {"correctness", "safety_pass_rate"}
    assert any(r["paired"] is not None and r["paired"]["drop"] != 0.0 for r in data["gate"])  # real differences
    assert gated["calls"] == 4 * 9 and gated["target"] > 0
    assert 0 < gated["check_cpu"] <= gated["gate_cpu"] < gated["cpu"] and gated["gate_wall"] < gated["wall"]
    assert gated["reports_cpu"] > 0 and gated["html_main_mb"] > 0 and gated["gate_mb"] >= 0
