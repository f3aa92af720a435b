"""Baselines you can review: an update prints what it changes in the file it
replaces, refuses to overwrite one recorded with other judge models, another
backend or other golden data unless --ragdive-force, never records a run with
a safety violation; a changed golden set is named, not gated silently."""

from __future__ import annotations

import json

import pytest
from conftest import SINGLE, results

from pytest_ragdive.core.config import load_config


def record(toy: pytest.Pytester, *extra: str) -> pytest.RunResult:
    return toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline", "-p", "no:cacheprovider", *extra)


def stored(toy: pytest.Pytester) -> dict:
    return json.loads((toy.path / "b.json").read_text())


def add_cases(toy: pytest.Pytester, n: int) -> None:
    rows = [dict(SINGLE[1], question_id=f"q-new-{i}") for i in range(n)]
    with (toy.path / "data" / "single.jsonl").open("a") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in rows))


def test_update_prints_the_diff_against_the_file_it_replaces(toy: pytest.Pytester) -> None:
    first = record(toy)
    assert first.ret == 0
    first.stdout.fnmatch_lines(["a new baseline file (nothing replaced)"])
    data = stored(toy)
    assert set(data["golden"]["core"]) == {"data/single.jsonl", "data/convs.yaml"}
    assert set(data["golden"]["core"]["data/single.jsonl"]["cases"]) == {"q-sky", "q-grass", "q-snow"}
    data["suites"]["core"]["correctness"].update(mean=0.9, min=0.9, max=0.9)
    (toy.path / "b.json").write_text(json.dumps(data))
    again = record(toy)
    assert again.ret == 0
    again.stdout.fnmatch_lines([
        "changes against the baseline it replaced:",
        "*core*correctness ↑*[0.8500, 0.9500]*[0.9500, 1.0500]*mean +0.1000, band*",
    ])
    assert "## Baseline update" in (toy.path / "report" / "summary.md").read_text()
    assert stored(toy)["suites"]["core"]["correctness"]["mean"] == 1.0
    same = record(toy)
    same.stdout.fnmatch_lines(["the baseline it replaced had the same bands, means and runs"])


@pytest.mark.parametrize(
    "field,value,named",
    [("judge_models", {"judge": "openai/gpt-4o"}, "judge models judge=openai/gpt-4o"), ("backend", "llm", "the llm backend")],
)
def test_update_refuses_other_models_or_backend_unless_forced(toy: pytest.Pytester, field: str, value: object,
                                                              named: str) -> None:
    assert record(toy).ret == 0
    data = stored(toy)
    data[field] = value
    (toy.path / "b.json").write_text(json.dumps(data))
    before = (toy.path / "b.json").read_text()
    res = record(toy)
    assert res.ret == 4
    res.stderr.fnmatch_lines([f"*b.json was recorded with {named}*--ragdive-force*"])
    assert (toy.path / "b.json").read_text() == before
    forced = record(toy, "--ragdive-force")
    assert forced.ret == 0
    forced.stdout.fnmatch_lines([f"{field}: *", "note: --ragdive-force: overwriting*"])
    assert stored(toy)[field] == ({} if field == "judge_models" else "offline")


def test_a_changed_golden_set_is_reported_and_guards_the_baseline(toy: pytest.Pytester) -> None:
    assert record(toy).ret == 0
    add_cases(toy, 3)
    gated = toy.runpytest("--ragdive-baseline=b.json", "-p", "no:cacheprovider")
    gated.stdout.fnmatch_lines(["note: golden data changed since the baseline: 3 cases added in data/single.jsonl"])
    assert any("golden data changed" in n for n in results(toy)["notes"])
    refused = record(toy)
    assert refused.ret == 4
    refused.stderr.fnmatch_lines(["*recorded with other golden data (3 cases added in data/single.jsonl)*"])
    assert record(toy, "--ragdive-force").ret == 0
    assert len(stored(toy)["golden"]["core"]["data/single.jsonl"]["cases"]) == 6
    clean = toy.runpytest("--ragdive-baseline=b.json", "-p", "no:cacheprovider")
    assert "golden data changed" not in clean.stdout.str()


def test_no_baseline_from_a_run_with_a_safety_violation(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOY_UNSAFE", "1")
    res = record(toy)
    assert res.ret == 1
    res.stdout.fnmatch_lines(["*baseline NOT written: 1 conversation(s) with a safety violation*"])
    assert not (toy.path / "b.json").exists()


def test_config_hash_covers_golden_contents(toy: pytest.Pytester) -> None:
    before = load_config(toy.path / "pyproject.toml").config_hash()
    add_cases(toy, 1)
    assert load_config(toy.path / "pyproject.toml").config_hash() != before
