"""The gated session at scale (issue 28): under pytest-xdist only the controller loads
the baseline (the workers run conversations and never conclude); the gate's verdicts
are the same as a plain run's."""

from __future__ import annotations

import pytest
from conftest import TOY_CONFTEST, results

SPY = '''
import os
import pytest_ragdive.gate.preconditions as _pre

_real = _pre.gate_baseline

def _spy(*args, **kwargs):
    with open(os.path.join(os.path.dirname(__file__), "loaded.txt"), "a") as f:
        f.write(f"{os.getpid()}\\n")
    return _real(*args, **kwargs)

_pre.gate_baseline = _spy
'''


def test_only_the_xdist_controller_loads_the_baseline(toy: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    toy.runpytest_subprocess("--ragdive-baseline=b.json", "--ragdive-update-baseline", "-p", "no:cacheprovider").assert_outcomes(passed=5)
    toy.makeconftest(TOY_CONFTEST + SPY)
    toy.runpytest_subprocess("--ragdive-baseline=b.json", "-p", "no:cacheprovider").assert_outcomes(passed=5)
    plain = results(toy)
    (toy.path / "loaded.txt").unlink()
    res = toy.runpytest_subprocess("--ragdive-baseline=b.json", "-n", "2", "-p", "no:cacheprovider")
    res.assert_outcomes(passed=5)
    assert len((toy.path / "loaded.txt").read_text().split()) == 1  # the controller; each worker loaded it too before
    dist = results(toy)
    assert dist["status"] == plain["status"] == "passed"
    assert [(r["metric"], r["verdict"], r["current"]) for r in dist["gate"]] == [
        (r["metric"], r["verdict"], r["current"]) for r in plain["gate"]]
