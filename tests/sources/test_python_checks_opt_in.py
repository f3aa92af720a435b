"""Golden data runs no code unless the config says so (issue 32, case 9): a ``python:`` check in
an ``assert:`` list without ``allow_python_assertions = true`` is exit 4 with one line naming
the key, before its module is imported; with the key it runs."""

from __future__ import annotations

import json

import pytest
from conftest import PYPROJECT, SINGLE

pytestmark = pytest.mark.slow

CHECKER = '''
from pathlib import Path
Path("imported").write_text("1")

def ok(turn, conversation):
    return True
'''


def test_a_python_check_needs_the_opt_in_key(toy: pytest.Pytester) -> None:
    toy.makepyfile(golden_checks=CHECKER)
    rows = [{**SINGLE[0], "assert": [{"python": "golden_checks:ok"}]}, *SINGLE[1:]]
    (toy.path / "data" / "single.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    res = toy.runpytest("--ragdive-suite=core", "-p", "no:cacheprovider")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    err = [line for line in res.stderr.lines if line.strip()]
    assert len(err) == 1 and "allow_python_assertions = true under [tool.ragdive]" in err[0], res.stderr.str()
    assert "golden_checks:ok" in err[0] and "Traceback" not in res.stdout.str() + res.stderr.str()
    assert not (toy.path / "imported").exists()  # nothing of it was imported
    toy.makefile(".toml", pyproject=PYPROJECT.format(extra="allow_python_assertions = true"))
    res = toy.runpytest("--ragdive-suite=core", "-p", "no:cacheprovider")
    assert res.ret == 0, res.stdout.str() + res.stderr.str()
    assert (toy.path / "imported").exists()
