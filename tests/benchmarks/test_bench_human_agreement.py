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


def _file(tmp_path: Path) -> Path:
    """Ten tasks in two conversations of five turns; the earlier turn of each task has its own
    task (and passages) in the file, as in MTRAG; a good and a bad answer per task."""
    passage = "Refunds are issued within 14 days to the original payment method."
    docs = [{"document_id": "d", "text": passage}, {"document_id": "e", "text": "The Hub ships to Canada in a week."}]
    tasks, evals = [], []
    for conv in ("c1", "c2"):
        for n in range(1, 6):
            tid = f"{conv}<::>{n}"
            msgs: list[dict[str, str]] = []
            for k in range(1, n):
                msgs += [{"speaker": "user", "text": f"Question {k}?"}, {"speaker": "agent", "text": "The Hub ships to Canada in a week."}]
            msgs.append({"speaker": "user", "text": "How long do refunds take?"})
            tasks.append({
                "task_id": tid, "input": msgs,
                "contexts": [{"document_id": "d"}] + ([{"document_id": "e"}] if n % 2 else []),
                "targets": [{"speaker": "agent", "text": "Refunds are issued within 14 days."}],
            })
            i = len(tasks)
            evals.append({"task_id": tid, "model_id": "good", "model_response": passage, "annotations": _annotations(4, 0.9)})
            evals.append({
                "task_id": tid, "model_id": "bad",
                "model_response": "Refunds arrive instantly as gift vouchers by post.",
                "annotations": _annotations(1, 0.1 + i / 100),
            })
    path = tmp_path / "mini.json"
    path.write_text(json.dumps({"tasks": tasks, "evaluations": evals, "documents": docs}))
    return path


def test_loader_grounds_conversations_with_the_plugins_rule(tmp_path: Path) -> None:
    rows = bench.load(_file(tmp_path))
    assert len(rows) == 20
    late = next(r for r in rows if r.task == "c1<::>5")
    # earlier turns: their own task's passages (odd turns have two)
    assert [[c.doc_id for c in t.contexts] for t in late.turns] == [["d", "e"], ["d"], ["d", "e"], ["d"], ["d", "e"]]
    from pytest_ragdive.metrics.offline import conversation_support

    support = conversation_support(late.turns, 4)
    assert "The Hub ships to Canada in a week." in support  # a grounded unit of an earlier answer
    assert not any(s.endswith("?") for s in support)  # questions ground nothing
    faith = bench.faithfulness_scores(rows, bench.SUPPORT_RULE)
    good = [f for r, f in zip(rows, faith, strict=True) if r.model == "good"]
    bad = [f for r, f in zip(rows, faith, strict=True) if r.model == "bad"]
    assert good == [1.0] * 10 and all((f or 0) < 0.5 for f in bad)


def test_choices_are_made_on_the_training_folds_only() -> None:
    human = [float(i % 4) for i in range(40)]
    right = [h + 0.1 * (i % 3) for i, h in enumerate(human)]
    wrong = [-h for h in human]
    folds = [i % 5 for i in range(40)]
    cv = bench.cross_validate([wrong, right], human, folds, 5)
    assert cv.chosen == [1] * 5 and cv.refit == 1
    assert cv.oof == right
    # a variant that wins only on one fold's held-out rows is not chosen for that fold
    tricky = list(wrong)
    for i in range(0, 40, 5):  # fold 0's rows
        tricky[i] = right[i] * 10
    cv = bench.cross_validate([tricky, right], human, folds, 5)
    assert cv.chosen[0] == 1


def test_main_prints_out_of_fold_tables(tmp_path: Path, capsys: Any) -> None:
    rows = bench.load(_file(tmp_path))
    (value, lo, hi), = bench.bootstrap(rows, [lambda idx: float(len(idx))], 20, 7)
    assert value == 20 and lo <= hi
    sys.argv = ["bench", "--data", str(_file(tmp_path)), "--resamples", "20"]
    bench.main()
    out = capsys.readouterr().out
    assert "| faithfulness | offline, out of fold | 20 | 1.000" in out
    assert "Paired difference" in out and "Which dimension correctness tracks" in out
    assert "Variants chosen inside the folds" in out
