"""``ragdive baseline show`` and ``ragdive baseline diff``: baselines a person can review."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from example_outcome import EXAMPLE, example_outcome

from pytest_ragdive.cli import main
from pytest_ragdive.core.config import load_config
from pytest_ragdive.gate.baseline import build_baseline, load_baseline, write_baseline
from pytest_ragdive.gate.diff import diff_baselines
from pytest_ragdive.reports.baseline_text import diff_lines

BASELINE = EXAMPLE / "baseline.json"


@pytest.fixture(scope="module")
def forgetful_baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A baseline recorded (three runs) from the example bot with its history switched off."""
    cfg = load_config(EXAMPLE / "pyproject.toml")
    outcome = example_outcome(history="none", gate=False, markup=False)
    res = outcome.suites["core"]
    for mv in res.metrics.values():  # three identical runs, as the deterministic bot gives
        mv.per_run = mv.per_run * 3
    with cfg.metrics.active():  # the example's own metrics (metric_modules) beside the built-ins
        bl = build_baseline({"core": res}, cfg.gate, config_hash=cfg.config_hash(), backend="offline",
                            judge_models={}, plugin_version="9.9.9", existing=load_baseline(BASELINE))
    path = tmp_path_factory.mktemp("bl") / "forgetful.json"
    write_baseline(path, bl)
    return path


def test_show_prints_band_mean_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["baseline", "show", str(BASELINE)]) == 0
    out = capsys.readouterr().out
    stored = load_baseline(BASELINE).suites["core"]["forgetfulness"]
    row = next(line for line in out.splitlines() if line.startswith("core") and "forgetfulness" in line)
    band = f"[{stored.min - stored.tolerance:.4f}, {stored.max + stored.tolerance:.4f}]"
    assert f"{stored.mean:.4f}" in row and band in row and row.split()[-1] == str(stored.runs)
    assert "backend offline" in out
    assert main(["baseline", "show", str(BASELINE), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["suites"]["core"]["forgetfulness"]["mean"] == stored.mean


def test_diff_of_a_rerecorded_baseline_names_what_moved(forgetful_baseline: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = load_baseline(BASELINE), load_baseline(forgetful_baseline)
    d = diff_baselines(old, new)
    rows = {(m.suite, m.metric): m for m in d.metrics}
    forget = rows[("core", "forgetfulness")]
    assert forget.change == "changed" and {"mean", "band", "runs"} <= set(forget.moved)
    assert forget.new is not None and forget.old is not None and forget.new.mean - forget.old.mean == pytest.approx(0.5)
    assert rows[("core", "faithfulness")].moved == ["runs"]  # the reader still copies its contexts
    assert all(m.change == "unchanged" for m in d.metrics if m.suite == "extended")  # kept from the old file
    assert d.provenance["plugin_version"] == (old.plugin_version, "9.9.9")

    assert main(["baseline", "diff", str(BASELINE), str(forgetful_baseline)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "forgetfulness" in x)
    was = old.suites["core"]["forgetfulness"]
    assert f"[{was.min - was.tolerance:.4f}, {was.max + was.tolerance:.4f}]" in line and "[0.7000, 0.7000]" in line and "mean +0.5000" in line and "runs 5 -> 3" in line
    assert "extended" not in out  # unchanged rows only with --all
    assert main(["baseline", "diff", str(BASELINE), str(forgetful_baseline), "--all"]) == 0
    assert "extended" in capsys.readouterr().out
    assert main(["baseline", "diff", str(BASELINE), str(forgetful_baseline), "--exit-code"]) == 1
    assert main(["baseline", "diff", str(BASELINE), str(BASELINE), "--exit-code"]) == 0


def test_diff_added_removed_and_provenance(tmp_path: Path) -> None:
    data = json.loads(BASELINE.read_text())
    data["backend"] = "llm"
    data["judge_models"] = {"judge": "openai/gpt-4o-mini"}
    del data["suites"]["core"]["mrr"]
    data["suites"]["core"]["sharded_gap"] = {"mean": 0.1, "min": 0.1, "max": 0.1, "direction": "lower"}
    data["suites"]["core"]["answer_f1"]["tolerance"] = 0.05
    path = tmp_path / "new.json"
    path.write_text(json.dumps(data))
    d = diff_baselines(load_baseline(BASELINE), load_baseline(path))
    by = {m.metric: m for m in d.metrics if m.suite == "core"}
    assert by["mrr"].change == "removed" and by["sharded_gap"].change == "added"
    assert by["answer_f1"].moved == ["band", "tolerance"]  # the mean did not move
    assert d.provenance["backend"] == ("offline", "llm")
    text = "\n".join(diff_lines(d, markdown=True))
    assert "backend: offline -> llm" in text and "| core | mrr ↑ |" in text and "tolerance 0.03 -> 0.05" in text


def test_bad_input_is_one_line_and_exit_4(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["baseline", "show", str(tmp_path / "missing.json")]) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing.json not found" in err[0]
    bad = tmp_path / "bad.json"
    bad.write_text('{"suites": {"core": {"x": {"mean": "high"}}}}')
    assert main(["baseline", "diff", str(BASELINE), str(bad)]) == 4
    assert "is invalid" in capsys.readouterr().err


def test_command_line_imports_no_pytest(tmp_path: Path) -> None:
    code = (
        "import sys; from pytest_ragdive.cli import main; "
        f"rc = main(['baseline', 'diff', {str(BASELINE)!r}, {str(BASELINE)!r}]); "
        "assert 'pytest' not in sys.modules and '_pytest' not in sys.modules, 'pytest imported'; sys.exit(rc)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    n = sum(len(m) for m in load_baseline(BASELINE).suites.values())
    assert f"{n} unchanged" in res.stdout
