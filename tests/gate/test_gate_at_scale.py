"""The gate at scale (issue 28): the baseline's per-conversation values held as arrays,
the bootstrap in bounded memory with the same draws, one resampling pass per number of
conversations, the end of the run without the cyclic collector, the golden fingerprint
reused while a file is unchanged."""

from __future__ import annotations

import gc
import json
import random
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from pytest_ragdive.core import stats
from pytest_ragdive.core.config import RagdiveConfig
from pytest_ragdive.core.records import Conversation, Turn
from pytest_ragdive.core.results import Baseline, BaselineMetric, RunValues
from pytest_ragdive.gate import conclude as conclude_mod
from pytest_ragdive.gate.baseline import dumps_baseline, load_baseline
from pytest_ragdive.gate.conclude import RunFacts, conclude
from pytest_ragdive.gate.paired import Pairing, bootstrap_many, paired_tests
from pytest_ragdive.sources import fingerprint as fp
from pytest_ragdive.sources import golden

GATED = ("answer_f1", "correctness", "faithfulness", "context_recall", "recall_at_k", "forgetfulness")


def _baseline_file(tmp_path: Path, n: int, runs: int = 1) -> Path:
    rng = random.Random(0)
    per = {f"c{i:06d}": [[round(rng.random(), 6), 5] for _ in range(runs)] for i in range(n)}
    metric = {"mean": 0.5, "min": 0.4, "max": 0.6, "runs": runs, "direction": "higher", "tolerance": 0.03}
    data = {
        "format_version": 2,
        "suites": {"core": {m: {**metric, "direction": "lower" if m == "forgetfulness" else "higher",
                                "conversations": per} for m in GATED}},
    }
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(data))
    return path


def test_a_large_baselines_values_are_held_as_arrays_a_few_bytes_a_cell(tmp_path: Path) -> None:
    """20,000 conversations x 6 metrics: records of tuples held about 40 MB (a list, a tuple
    and a float per cell); arrays hold 12 bytes a cell, the ids once per suite."""
    path = _baseline_file(tmp_path, 20_000)
    gc.collect()
    tracemalloc.start()
    bl = load_baseline(path)
    gc.collect()
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert held < 6e6, held / 1e6
    cvs = [bm.conversations for bm in bl.suites["core"].values()]
    assert all(isinstance(cv, RunValues) for cv in cvs)
    assert all(cv.ids is cvs[0].ids for cv in cvs if cv is not None)  # one tuple of ids for the suite
    first = cvs[0]
    assert first is not None and len(first) == 20_000 and first.runs == 1
    assert first["c000000"] == [(json.loads(path.read_text())["suites"]["core"]["answer_f1"]["conversations"]["c000000"][0][0], 5)]


def test_run_values_read_as_the_files_mapping_and_write_it_back() -> None:
    form = {"b": [(0.5, 2), (None, 0)], "a": [(1.0, 1), (0.0, 1)]}
    bm = BaselineMetric(mean=0.5, min=0.0, max=1.0, runs=2, conversations=form)
    cv = bm.conversations
    assert isinstance(cv, RunValues) and list(cv) == ["a", "b"]
    assert cv == form and dict(cv.items()) == {"a": [(1.0, 1), (0.0, 1)], "b": [(0.5, 2), (None, 0)]}
    assert cv["b"] == [(0.5, 2), (None, 0)] and "c" not in cv
    assert bm.model_dump(mode="json")["conversations"] == {"a": [[1.0, 1], [0.0, 1]], "b": [[0.5, 2], [None, 0]]}
    again = BaselineMetric.model_validate_json(bm.model_dump_json())
    assert again == bm and again.conversations == cv
    bl = Baseline(format_version=2, suites={"core": {"answer_f1": bm}})
    assert '"a": [[1.0, 1], [0.0, 1]],' in dumps_baseline(bl)  # the file's one-line-per-conversation form
    assert not BaselineMetric(mean=0.5, min=0.0, max=1.0, conversations={}).conversations  # empty: falsy
    with pytest.raises(ValueError, match="conversation 'x' has 2 run value"):
        BaselineMetric(mean=0.5, min=0.0, max=1.0, runs=1, conversations={"a": [(1.0, 1)], "x": [(1.0, 1), (1.0, 1)]})


def test_the_bootstrap_holds_a_bounded_number_of_cells_whatever_the_size() -> None:
    """Resamples x conversations x metrics is never materialised: 20,000 resamples of
    20,000 conversations (400 million draws) peak at a few MB."""
    rng = np.random.default_rng(0)
    k = 20_000
    num = rng.random((3, k))
    den = rng.integers(1, 6, k).astype(float)
    tracemalloc.start()
    out = stats.cluster_bootstrap(num, den, n_boot=2_000, seed=0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # the indices of a chunk and a few rows' worth of cells (1 MB each), beside the results
    # (one float per resample and statistic); 2,000,000 cells a chunk held 32 MB
    assert peak < 6e6, peak / 1e6
    assert [len(o) for o in out] == [2_000] * 3


def _plain_bootstrap(num: np.ndarray, den: np.ndarray, n_boot: int, seed: int) -> list[np.ndarray]:
    """The rule, drawn all at once: every row's cells summed on every resample."""
    k = num.shape[1]
    idx = np.random.default_rng(seed).integers(0, k, size=(n_boot, k))
    out = []
    for r in range(num.shape[0]):
        d = den[idx].sum(axis=1) if den.ndim == 1 else den[r][idx].sum(axis=1)
        s = num[r][idx].sum(axis=1)
        out.append(s[d > 0] / d[d > 0])
    return out


@pytest.mark.parametrize("k", [1, 7, 130])
def test_rows_of_one_whole_number_and_shared_rows_give_the_same_numbers(k: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stats, "MAX_CELLS", 3 * k)  # three resamples a chunk
    rng = np.random.default_rng(k)
    num = np.vstack([rng.random(k), np.zeros(k), np.full(k, 3.0), np.full(k, 0.1), rng.random(k)])
    num[4] = num[0]  # a row shared by two statistics
    for den in (np.full(k, 5.0), np.full((5, k), 2.0), rng.integers(0, 3, (5, k)).astype(float), np.full(k, 1 / 3)):
        got = stats.cluster_bootstrap(num, den, n_boot=50, seed=3)
        want = _plain_bootstrap(num, den, 50, 3)
        assert all(a.tobytes() == b.tobytes() for a, b in zip(got, want, strict=True))


def test_metrics_over_as_many_conversations_share_one_pass_with_their_own_weights() -> None:
    """Two metrics over 40 conversations with different weights and ids: each metric's
    bounds are those of its own bootstrap (the draws depend on the count alone)."""
    rng = random.Random(1)
    a = Pairing(ids=[f"a{i}" for i in range(40)], drops=[rng.gauss(0, 0.1) for _ in range(40)], weights=[5.0] * 40)
    b = Pairing(ids=[f"b{i}" for i in range(40)], drops=[rng.gauss(0.05, 0.1) for _ in range(40)],
                weights=[float(rng.randint(1, 5)) for _ in range(40)])
    both = paired_tests({"a": a, "b": b}, {"a": 0.03, "b": 0.03})
    for name, p in (("a", a), ("b", b)):
        alone = paired_tests({name: p}, {name: 0.03})[name]
        assert (both[name].drop, both[name].high, both[name].p_drop) == (alone.drop, alone.high, alone.p_drop)
        own = bootstrap_many([p.drops], p.weights)[0]
        shared = bootstrap_many([a.drops, b.drops], [a.weights, b.weights])[0 if name == "a" else 1]
        assert own.tobytes() == shared.tobytes()


def test_the_end_of_a_run_pauses_the_cyclic_collector(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    real = conclude_mod._conclude

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(conclude_mod, "_conclude", spy)
    cfg = RagdiveConfig.model_validate({"gate": {"correctness": 0.0}, "suites": {"core": {}}})
    conv = Conversation(id="a", suite="core", turns=[Turn(rag_input="q", answer="a", scores={"correctness": 1.0})])
    assert gc.isenabled()
    conclude([conv], cfg, None, RunFacts(planned=1))
    assert seen == [False] and gc.isenabled()


def test_an_unchanged_golden_file_is_hashed_not_parsed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "convs.yaml").write_text("conversations:\n  - id: a\n    turns: [{rag_input: hi}]\n")
    cfg = RagdiveConfig.model_validate({"suites": {"core": {"conversations": ["convs.yaml"]}}})
    cfg.base_dir = str(tmp_path)
    recorded = fp.fingerprint(cfg, ["core"])
    assert list(recorded["core"]["convs.yaml"].cases) == ["a"]
    parses: list[Path] = []
    real = golden.each_conversation
    monkeypatch.setattr(golden, "each_conversation", lambda p: parses.append(p) or real(p))
    assert fp.fingerprint(cfg, ["core"], known=recorded) == recorded and parses == []
    (tmp_path / "convs.yaml").write_text("conversations:\n  - id: b\n    turns: [{rag_input: hi}]\n")
    now = fp.fingerprint(cfg, ["core"], known=recorded)
    assert list(now["core"]["convs.yaml"].cases) == ["b"] and len(parses) == 1
    assert fp.golden_changes(recorded, now) == ["golden data changed since the baseline: 1 case added, 1 case removed in convs.yaml"]
