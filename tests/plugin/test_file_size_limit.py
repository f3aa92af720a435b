"""Under a file-size limit (``ulimit -f``) the run says one true thing about the baseline
(issue 32, case 11): written (then the reports failed), or not written; never both."""

from __future__ import annotations

import json

import pytest
from conftest import TOY_CONFTEST

pytestmark = pytest.mark.slow

LIMITED = TOY_CONFTEST + '''
import resource
resource.setrlimit(resource.RLIMIT_FSIZE, (int(os.environ["TOY_FSIZE"]),) * 2)  # as ulimit -f
'''


@pytest.mark.parametrize("limit", [40_000])  # the baseline fits, report.html does not (stdout is a file too: not lower)
def test_one_truthful_message_about_the_baseline(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
    toy.makeconftest(LIMITED)
    monkeypatch.setenv("TOY_FSIZE", str(limit))
    res = toy.runpytest_subprocess("--ragdive-baseline=b.json", "--ragdive-update-baseline", "-p", "no:cacheprovider")
    out = res.stdout.str() + res.stderr.str()
    assert res.ret != 0 and "could not write" in out, out
    assert "INTERNALERROR" not in out
    written = (toy.path / "b.json").is_file()
    if written:
        assert json.loads((toy.path / "b.json").read_text())["suites"]
        assert "baseline written to" in out and "baseline NOT written" not in out, out
    else:
        assert "baseline NOT written" in out and "baseline written to" not in out, out
