"""benchmarks/bench_gate.py decides as the plugin does: the baseline it stores equals
``build_baseline``'s, and a PR that breaks every answer is flagged by both methods."""

from __future__ import annotations

import pytest
from conftest import load_benchmark

pytestmark = pytest.mark.slow  # starts processes of its own


def test_bench_gate_records_and_decides_like_the_plugin() -> None:
    b = load_benchmark("bench_gate")
    gate = b.gate_of("core")
    assert "safety_pass_rate" in gate and "correctness" in gate
    b.check_record("core", gate)  # raises when the stored baseline differs from build_baseline's
    healthy = b.build_pool(("core", 8, {}, 0))
    broken = b.build_pool(("core", 8, {"break_rate": 1.0}, 0))
    change = b.Change("correctness -0.79", "correctness", 0.79, {"core": {"break_rate": 1.0}})
    row = b.cell(("core", change, healthy, broken, 5, 3, 1))
    assert row["band"] == row["paired"] == 1.0 and row["looks"] == 1.0  # significant at once: no rerun
    assert row["drop"] < -0.5 and row["n"] == 30
    assert any(k.startswith("correctness regression") for k in row["causes"])
