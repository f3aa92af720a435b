"""Each verdict of the paired gate end to end in real pytest sessions, reruns of
only the suites concerned, xdist, and an old-format baseline."""

from __future__ import annotations

import json
import textwrap

import pytest

N = 12
BOT = textwrap.dedent(
    '''
    import collections
    import os

    from pytest_ragdive import Context, TargetResponse

    CALLS = collections.Counter()

    def bot(messages):
        """Answers question k with code k; TOY_WRONG=1,2 answers those wrong
        (with TOY_WRONG_FIRST=1 only the first time each is asked)."""
        q = messages[-1]["content"]
        CALLS[q] += 1
        k = q.split()[-1].rstrip("?")
        wrong = os.environ.get("TOY_WRONG", "").split(",")
        if k in wrong and (not os.environ.get("TOY_WRONG_FIRST") or CALLS[q] == 1):
            return TargetResponse(answer="I do not know.")
        return TargetResponse(answer=f"The code is c{k}x.", contexts=[Context(id=f"d{k}", text=f"The code is c{k}x.")])
    '''
)
CONFTEST = textwrap.dedent(
    '''
    import pytest
    import toybot

    @pytest.fixture(scope="session")
    def ragdive_target():
        return toybot.bot
    '''
)
PYPROJECT = """
[tool.ragdive]
report_dir = "report"
{extra}
[tool.ragdive.gate]
correctness = 0.05
{gate}
[tool.ragdive.suites.core]
single_turn = ["core.jsonl"]
[tool.ragdive.suites.extended]
single_turn = ["ext.jsonl"]
"""


def rows(p: pytest.Pytester) -> dict[tuple[str, str], dict]:
    data = json.loads((p.path / "report" / "results.json").read_text())
    return {(r["suite"], r["metric"]): r for r in data["gate"]}


def runs_of(p: pytest.Pytester) -> dict[str, set[int]]:
    data = json.loads((p.path / "report" / "results.json").read_text())
    out: dict[str, set[int]] = {}
    for c in data["conversations"]:
        out.setdefault(c["suite"], set()).add(c["run"])
    return out


@pytest.fixture
def proj(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for var in ("TOY_WRONG", "TOY_WRONG_FIRST"):
        monkeypatch.delenv(var, raising=False)
    pytester.makepyfile(toybot=BOT)
    pytester.makeconftest(CONFTEST)
    rows_ = [{"question_id": f"q{k}", "question": f"What is code {k}?", "expected_answer": f"The code is c{k}x."} for k in range(N)]
    (pytester.path / "core.jsonl").write_text("\n".join(json.dumps(r) for r in rows_) + "\n")
    ext = [{"question_id": f"e{k}", "question": f"What is code {k}?", "expected_answer": f"The code is c{k}x."} for k in range(20, 24)]
    (pytester.path / "ext.jsonl").write_text("\n".join(json.dumps(r) for r in ext) + "\n")
    pytester.makefile(".toml", pyproject=PYPROJECT.format(extra="", gate=""))
    monkeypatch.syspath_prepend(str(pytester.path))
    pytester.runpytest("--ragdive-suite=all", "--ragdive-baseline=b.json", "--ragdive-update-baseline").assert_outcomes(passed=N + 4)
    return pytester


def make_noisy(p: pytest.Pytester) -> None:
    """The core baseline as four noisy runs: each conversation wrong in one of
    them, every run's mean 0.75 (a narrow band, a wide per-conversation spread)."""
    data = json.loads((p.path / "b.json").read_text())
    m = data["suites"]["core"]["correctness"]
    m.update(mean=0.75, min=0.75, max=0.75, std=0.0, runs=4)
    m["conversations"] = {f"q{i}": [[0.0 if (i + r) % 4 == 0 else 1.0, 1] for r in range(4)] for i in range(N)}
    (p.path / "b.json").write_text(json.dumps(data))


def test_pass_and_regression_end_to_end(proj: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    stored = json.loads((proj.path / "b.json").read_text())
    assert stored["format_version"] == 2
    assert stored["suites"]["core"]["correctness"]["conversations"]["q0"] == [[1.0, 1]]
    res = proj.runpytest("--ragdive-suite=all", "--ragdive-baseline=b.json")
    assert res.ret == 0
    got = rows(proj)[("core", "correctness")]
    assert got["verdict"] == "pass" and got["method"] == "band+paired" and got["paired"]["n"] == N
    res.stdout.fnmatch_lines(["*verdict*why*", "*correctness*pass*paired drop 0.00*", "*ragdive gate passed*",
                              "*paired test*detectable*", "*core/correctness: pass, paired drop +0.0000*"])
    monkeypatch.setenv("TOY_WRONG", ",".join(str(k) for k in range(10)))
    make_noisy(proj)
    res = proj.runpytest("--ragdive-suite=all", "--ragdive-baseline=b.json")
    assert res.ret == 1
    got = rows(proj)[("core", "correctness")]
    assert got["verdict"] == "regression" and got["paired"]["significant"] and got["look"] == 0
    res.stdout.fnmatch_lines([
        "*correctness*REGRESSION*paired drop 0.58*bound*> tolerance 0.05, over 12 conversations*",
        "*ragdive gate FAILED: 1 of 2 gated metrics failed: core/correctness regressed*",
        "*what got worse, and where*", "*core/correctness*REGRESSION*", "*q0: correctness 0.00, drop 0.75*",
        "*paired test*", "*core/correctness: regression, paired drop +0.5833*",
    ])
    md = (proj.path / "report" / "summary.md").read_text()
    assert "| verdict | why |" in md and "Paired test details" in md and "## What got worse, and where" in md
    assert "- **core/correctness ↑ REGRESSION**: paired drop 0.58" in md


def test_inconclusive_reruns_only_the_suite_concerned_and_pools_the_runs(proj: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    make_noisy(proj)
    monkeypatch.setenv("TOY_WRONG", "0,1,2,3")  # core mean 8/12: out of the narrow band, within the noise
    monkeypatch.setenv("TOY_WRONG_FIRST", "1")  # ... and right when asked again
    res = proj.runpytest("--ragdive-suite=all", "--ragdive-baseline=b.json")
    assert res.ret == 0, res.stdout.str()
    assert runs_of(proj) == {"core": {0, 1}, "extended": {0}}  # one rerun, of core only
    got = rows(proj)[("core", "correctness")]
    assert got["look"] == 1 and got["runs"] == 2 and got["verdict"] in ("pass", "improvement")
    res.stdout.fnmatch_lines(["*rerun 1 of at most 2: the gate of suite(s) core was inconclusive; ran their 12 conversation(s)*"])


def test_still_inconclusive_after_the_reruns_fails_and_says_what_would_decide(proj: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    make_noisy(proj)
    monkeypatch.setenv("TOY_WRONG", "0,1,2,3")  # wrong every time
    res = proj.runpytest("--ragdive-suite=all", "--ragdive-baseline=b.json")
    assert res.ret == 1
    assert runs_of(proj) == {"core": {0, 1, 2}, "extended": {0}}
    got = rows(proj)[("core", "correctness")]
    assert got["verdict"] == "inconclusive" and got["look"] == 2 and got["runs"] == 3
    res.stdout.fnmatch_lines([
        "*ragdive gate FAILED: 1 of 2 gated metrics failed: core/correctness inconclusive*",
        "*core/correctness*INCONCLUSIVE*cannot tell*still undecided after 2 rerun(s) (deciding needs*conversations*",
        "*still inconclusive after 2 rerun(s): detects a drop of*needs*conversations*",
    ])
    # the other policies decide at once
    proj.makefile(".toml", pyproject=PYPROJECT.format(extra="", gate='inconclusive = "pass"'))
    res = proj.runpytest("--ragdive-suite=all", "--ragdive-baseline=b.json")
    assert res.ret == 0 and runs_of(proj) == {"core": {0}, "extended": {0}}
    res.stdout.fnmatch_lines(["*ragdive gate INCONCLUSIVE: 1 of 2 gated metric(s) undecided, not failing*"])
    res = proj.runpytest("--ragdive-suite=all", "--ragdive-baseline=b.json", "--ragdive-max-reruns=0")
    assert res.ret == 0 and runs_of(proj) == {"core": {0}, "extended": {0}}


def test_xdist_gives_the_same_verdicts(proj: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("xdist")
    proj.makefile(".toml", pyproject=PYPROJECT.format(extra='target = "toybot:bot"', gate=""))  # reruns on the controller
    (proj.path / "conftest.py").unlink()  # the config's target alone (a fixture beside it is a set-up mistake)
    make_noisy(proj)
    monkeypatch.setenv("TOY_WRONG", "0,1,2,3,20,21,22,23")  # core: inconclusive (and rerun); extended: regression
    got = []
    for extra in ([], ["-n", "2"]):
        res = proj.runpytest_subprocess("--ragdive-suite=all", "--ragdive-baseline=b.json", "-p", "no:cacheprovider", *extra)
        r = rows(proj)
        got.append((res.ret, {k: (v["verdict"], v["look"], v["paired"]) for k, v in r.items()}, runs_of(proj)))
    assert got[0] == got[1]
    assert got[0][0] == 1 and got[0][2] == {"core": {0, 1, 2}, "extended": {0}}
    assert got[0][1][("core", "correctness")][0] == "inconclusive"
    assert got[0][1][("extended", "correctness")][0] == "regression"


def test_an_old_format_baseline_still_gates_by_band_alone(proj: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    data = json.loads((proj.path / "b.json").read_text())
    data["format_version"] = 1
    for metrics in data["suites"].values():
        for m in metrics.values():
            m.pop("conversations", None)
    (proj.path / "b.json").write_text(json.dumps(data))
    res = proj.runpytest("--ragdive-suite=all", "--ragdive-baseline=b.json")
    assert res.ret == 0
    res.stdout.fnmatch_lines(["*b.json has format 1 (no per-conversation values): gated by band alone*"])
    assert rows(proj)[("core", "correctness")]["method"] == "band"
    monkeypatch.setenv("TOY_WRONG", "0")
    res = proj.runpytest("--ragdive-suite=all", "--ragdive-baseline=b.json")
    assert res.ret == 1 and rows(proj)[("core", "correctness")]["verdict"] == "regression"
