"""A dormant plugin costs nothing and changes nothing."""

from __future__ import annotations

import json

import pytest

HEAVY = ("litellm", "ragas", "numpy", "diskcache", "junit_xml", "pydantic", "yaml")


def test_dormant_plugin_imports_nothing_heavy(pytester: pytest.Pytester) -> None:
    """What the plugin adds to sys.modules while dormant: compared with the same
    run where the plugin is blocked, so other installed plugins do not count."""
    pytester.makepyfile(
        test_probe=f"""
        import json, sys
        def test_modules(request):
            loaded = [m for m in {HEAVY!r} if m in sys.modules]
            out = request.config.rootpath / ("with.json" if "pytest_ragdive.plugin.hooks" in sys.modules else "without.json")
            out.write_text(json.dumps(loaded))
        """
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:ragdive").assert_outcomes(passed=1)
    with_plugin = set(json.loads((pytester.path / "with.json").read_text()))
    without = set(json.loads((pytester.path / "without.json").read_text()))
    assert with_plugin - without == set()


def test_a_conftest_metric_costs_a_dormant_plugin_nothing() -> None:
    """``@pytest_ragdive.metric`` in conftest.py (imported in every run, the plugin dormant or
    not) loads nothing heavy: a fresh interpreter, so other plugins' imports do not hide it."""
    import subprocess
    import sys

    code = (
        "import sys, json, pytest_ragdive as rd\n"
        "@rd.metric('mine', level='turn', higher_is_better=True, dimension='answer')\n"
        "def mine(turn, conversation):\n    return 1.0\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []


def test_dormant_plugin_adds_no_items(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".toml", pyproject="[tool.ragdive.suites.core]\nsingle_turn = ['missing.jsonl']\n"
    )
    pytester.makepyfile(test_a="def test_a(): pass")
    res = pytester.runpytest()
    res.assert_outcomes(passed=1)
    assert "ragdive" not in res.stdout.str().split("short test summary")[0].split("passed")[-1]


def test_options_are_registered(pytester: pytest.Pytester) -> None:
    res = pytester.runpytest("--help")
    res.stdout.fnmatch_lines(["*--ragdive-baseline=PATH*", "*--ragdive-suite=*", "*--ragdive-record-mode=*"])


def test_autorun_activates(toy: pytest.Pytester) -> None:
    from conftest import PYPROJECT

    toy.makefile(".toml", pyproject=PYPROJECT.format(extra="autorun = true"))
    toy.runpytest().assert_outcomes(passed=5)
