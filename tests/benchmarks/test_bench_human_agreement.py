"""The human-agreement benchmark's statistics and loader, on a tiny synthetic file in the
MTRAG human-evaluation format (the project never reads the real data in tests)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_human_agreement as bench  # noqa: E402

pytestmark = pytest.mark.slow  # starts processes of its own


def test_ranks_average_ties_and_spearman() -> None:
    assert list(bench.ranks(np.array([3.0, 1.0, 3.0, 2.0]))) == [2.5, 0.0, 2.5, 1.0]
    assert bench.spearman(np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 30.0])) == pytest.approx(1.0)
    assert bench.spearman(np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])) == pytest.approx(-1.0)
    assert np.isnan(bench.spearman(np.array([1.0, 1.0]), np.array([1.0, 2.0])))


def _annotations(human: int, proxy: float) -> dict[str, Any]:
    ann: dict[str, Any] = {d: {"a": {"value": str(human)}, "b": {"value": str(human)}} for d in bench.DIMENSIONS}
    ann.update({p: {"system": {"value": proxy}} for p in bench.PROXIES})
    return ann


def test_loader_scores_every_answer_with_the_projects_scorer(tmp_path: Path, capsys: Any) -> None:
    passage = "Refunds are issued within 14 days to the original payment method."
    tasks, evals = [], []
    for i in range(4):
        tid = f"t{i}"
        tasks.append({
            "task_id": tid,
            "input": [
                {"speaker": "user", "text": "I bought a Hub."},
                {"speaker": "agent", "text": "Thanks."},
                {"speaker": "user", "text": "How long do refunds take?"},
            ],
            "contexts": [{"document_id": "d"}],
            "targets": [{"speaker": "agent", "text": "Refunds are issued within 14 days."}],
        })
        evals.append({"task_id": tid, "model_id": "good", "model_response": passage, "annotations": _annotations(4, 0.9)})
        evals.append({
            "task_id": tid, "model_id": "bad",
            "model_response": "Refunds arrive instantly as gift vouchers by post.",
            "annotations": _annotations(1, 0.1 + i / 100),
        })
    data = {"tasks": tasks, "evaluations": evals, "documents": [{"document_id": "d", "text": passage}]}
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(data))
    rows = bench.load(path)
    assert len(rows) == 8
    good = [r for r in rows if r.model == "good"]
    bad = [r for r in rows if r.model == "bad"]
    assert all(r.scores["faithfulness"] == 1.0 for r in good)
    assert all((r.scores["faithfulness"] or 0) < 0.5 for r in bad)
    value, lo, hi = bench.bootstrap(rows, bench.rho("faithfulness", "faithfulness"), 50, 7)
    assert value == pytest.approx(1.0) and lo <= value <= hi
    sys.argv = ["bench", "--data", str(path), "--resamples", "20"]
    bench.main()
    out = capsys.readouterr().out
    assert "| faithfulness | offline | 8 | 1.000" in out
    assert "Paired difference" in out
