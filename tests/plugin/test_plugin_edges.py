"""Edge cases found in review: each was a real bug once."""

from __future__ import annotations

import json

import pytest
from conftest import PYPROJECT

from pytest_ragdive.core.config import RagdiveConfig


def test_unchanged_rerun_passes_a_zero_tolerance_gate(toy: pytest.Pytester) -> None:
    # 2 of 3 single-turn answers correct: 0.666..., not a round number
    (toy.path / "data" / "single.jsonl").write_text(
        '{"question_id": "a", "question": "What colour is the sky?", "expected_answer": "blue", "negative_assertions": ["red"]}\n'
        '{"question_id": "b", "question": "What colour is grass?", "expected_answer": "green"}\n'
        '{"question_id": "c", "question": "What colour is the sea?", "expected_answer": "turquoise"}\n'
    )
    toy.makefile(".toml", pyproject=PYPROJECT.format(extra="").replace("correctness = 0.05", "correctness = 0.0"))
    toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline")
    stored = json.loads((toy.path / "b.json").read_text())["suites"]["core"]["correctness"]
    assert 0.6 < stored["min"] < 0.9 and stored["min"] == stored["max"]
    res = toy.runpytest("--ragdive-baseline=b.json")
    assert res.ret == 0, res.stdout.str()


def test_node_ids_select_and_last_failed_reruns(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    res = toy.runpytest("--ragdive-suite=core", "pyproject.toml::core::c-grass")
    res.assert_outcomes(passed=1)
    res = toy.runpytest("--ragdive-suite=core", "--ragdive-runs=2", "pyproject.toml::core::c-grass[run1]")
    res.assert_outcomes(passed=1)
    monkeypatch.setenv("TOY_RAISE_ON", "grass?")
    toy.runpytest("-p", "cacheprovider", "--ragdive-suite=core").assert_outcomes(passed=4, failed=1)
    monkeypatch.delenv("TOY_RAISE_ON")
    res = toy.runpytest("-p", "cacheprovider", "--ragdive-suite=core", "--lf")
    res.assert_outcomes(passed=1, deselected=4)


def test_deselecting_ragdive_items_does_not_fail_the_gate(toy: pytest.Pytester) -> None:
    toy.makepyfile(test_unit="def test_unit(): pass")
    toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline").assert_outcomes(passed=6)
    before = (toy.path / "report" / "results.json").read_text()
    res = toy.runpytest("--ragdive-baseline=b.json", "-m", "not ragdive")
    assert res.ret == 0
    res.assert_outcomes(passed=1, deselected=5)
    res.stdout.fnmatch_lines(["*no conversation of suite(s) core finished*not gated*"])
    assert (toy.path / "report" / "results.json").read_text() == before  # not overwritten with nothing


def test_one_suite_deselected_by_marker_is_not_gated(toy: pytest.Pytester) -> None:
    toy.makefile(
        ".toml",
        pyproject=PYPROJECT.format(extra="")
        + '[tool.ragdive.suites.extended]\nsingle_turn = ["data/single.jsonl"]\nconversations = ["data/convs.yaml"]\n',
    )
    toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline", "--ragdive-suite=all").assert_outcomes(passed=10)
    res = toy.runpytest("--ragdive-baseline=b.json", "--ragdive-suite=all", "-m", "ragdive_core")
    assert res.ret == 0
    res.stdout.fnmatch_lines(["*suite(s) extended finished*not gated*"])


def test_conftest_beside_a_config_pytest_does_not_walk(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    pytester.mkdir("tests")
    (pytester.path / "tests" / "test_u.py").write_text("def test_u(): pass\n")
    ev = pytester.mkdir("eval")
    (ev / "conftest.py").write_text(
        "import pytest\n@pytest.fixture(scope='session')\ndef ragdive_target():\n    return lambda m: 'The sky is blue.'\n"
    )
    (ev / "s.jsonl").write_text('{"question_id": "q1", "question": "What colour is the sky?", "expected_answer": "blue"}\n')
    (ev / "ragdive.yaml").write_text("suites:\n  core:\n    single_turn: [s.jsonl]\n")
    (ev / "s.jsonl").write_text("".join(
        f'{{"question_id": "q{i}", "question": "What colour is the sky?", "expected_answer": "blue"}}\n' for i in range(3)))
    res = pytester.runpytest("--ragdive-config=eval/ragdive.yaml", "--ragdive-suite=core")
    res.assert_outcomes(passed=4)
    res.stdout.fnmatch_lines(["collected 4 items"])  # issue 33: the header said "collected 1 item"


def test_target_raising_systemexit_fails_its_item_without_hanging(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "import pytest\n@pytest.fixture(scope='session')\ndef ragdive_target():\n"
        "    def t(m):\n        raise SystemExit(3)\n    return t\n"
    )
    (pytester.path / "s.jsonl").write_text('{"question_id": "q1", "question": "hi"}\n{"question_id": "q2", "question": "ho"}\n')
    pytester.makepyprojecttoml('[tool.ragdive.suites.core]\nsingle_turn = ["s.jsonl"]\n')
    res = pytester.runpytest_subprocess("--ragdive-suite=core", timeout=60)
    res.assert_outcomes(failed=2)
    res.stdout.fnmatch_lines(["*SystemExit*"])


def test_autorun_in_an_explicit_config_file(toy: pytest.Pytester) -> None:
    (toy.path / "pyproject.toml").rename(toy.path / "other.toml")
    text = (toy.path / "other.toml").read_text().replace("[tool.ragdive]\n", "[tool.ragdive]\nautorun = true\n", 1)
    (toy.path / "other.toml").write_text(text)
    toy.makeini("[pytest]\n")
    toy.runpytest("--ragdive-config=other.toml").assert_outcomes(passed=5)


def test_target_factory_string(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(mybot="def make_bot():\n    return lambda messages: 'The sky is blue.'\n")
    (pytester.path / "s.jsonl").write_text('{"question_id": "q1", "question": "What colour is the sky?", "expected_answer": "blue"}\n')
    pytester.makepyprojecttoml('[tool.ragdive]\ntarget = "mybot:make_bot"\n[tool.ragdive.suites.core]\nsingle_turn = ["s.jsonl"]\n')
    pytester.runpytest("--ragdive-suite=core").assert_outcomes(passed=1)


def test_config_hash_ignores_defaults() -> None:
    a = RagdiveConfig.model_validate({"suites": {"core": {"single_turn": ["x.jsonl"]}}})
    b = RagdiveConfig.model_validate({"suites": {"core": {"single_turn": ["x.jsonl"], "max_turns": None}}, "backend": "auto"})
    c = RagdiveConfig.model_validate({"suites": {"core": {"single_turn": ["y.jsonl"]}}})
    assert a.config_hash() == b.config_hash() != c.config_hash()
