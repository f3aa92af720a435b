"""The end of a run cannot go silently wrong: unwritable outputs found before
the first conversation, a write that still fails after the gate table, the
deadline, LLM failures in one line, a target without contexts."""

from __future__ import annotations

import json
import time

import pytest
from conftest import PYPROJECT, TOY_CONFTEST, results
from test_plugin_llm import scripted

from pytest_ragdive.testing import FAKE_KEY_ENV, FakeLLMServer

SPY = TOY_CONFTEST + '''

from pathlib import Path
_toy_bot = bot

def bot(messages):
    Path("target-was-called").write_text("1")
    if os.environ.get("TOY_BREAK_REPORT_DIR"):
        import shutil
        shutil.rmtree("report", ignore_errors=True)
        Path("report").write_text("now a file")
    return _toy_bot(messages)

@pytest.fixture(scope="session")
def ragdive_target():
    return bot
'''


@pytest.fixture
def spy(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("TOY_BREAK_REPORT_DIR", raising=False)
    toy.makeconftest(SPY)
    return toy


@pytest.mark.parametrize(
    ("setup", "args", "expected"),
    [
        ("report_file", (), "*cannot write reports to *report (--ragdive-report-dir / report_dir): it is a file*"),
        ("under_file", ("--ragdive-report-dir=afile/reports",), "*reports to *afile/reports*afile is a file, not a directory*"),
        ("baseline_dir", ("--ragdive-baseline=adir", "--ragdive-update-baseline"),
         "*cannot write the baseline *adir (--ragdive-baseline / baseline): it is a directory*"),
    ],
)
def test_unwritable_outputs_are_usage_errors_before_any_conversation(
    spy: pytest.Pytester, setup: str, args: tuple[str, ...], expected: str
) -> None:
    (spy.path / "afile").write_text("x")
    (spy.path / "adir").mkdir()
    if setup == "report_file":
        (spy.path / "report").write_text("x")
    res = spy.runpytest("--ragdive-suite=core", *args)
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines([expected])
    assert "INTERNALERROR" not in res.stdout.str() + res.stderr.str()
    assert not (spy.path / "target-was-called").exists()  # nothing ran, nothing was paid for


def test_a_report_write_that_fails_at_the_end_prints_the_gate_first(spy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    assert spy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline").ret == 0
    monkeypatch.setenv("TOY_BREAK_REPORT_DIR", "1")  # the target turns the report dir into a file mid-run
    res = spy.runpytest("--ragdive-baseline=b.json")
    out = res.stdout.str()
    assert res.ret == pytest.ExitCode.TESTS_FAILED, out
    assert "INTERNALERROR" not in out + res.stderr.str()
    table = out.index("baseline band")
    error = out.index("ERROR: ragdive could not write")
    assert table < error
    assert out.count("ragdive could not write") <= 2  # the status line and the error line


def test_the_deadline_ends_a_hanging_run_cleanly(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_target_timeout import _hanging_toy

    _hanging_toy(pytester, monkeypatch)
    monkeypatch.setenv("TOY_HANG_ON", "snow")
    t0 = time.perf_counter()
    res = pytester.runpytest_subprocess(
        "--ragdive-baseline=b.json", "--ragdive-update-baseline", "--ragdive-deadline=5",
        "-p", "no:cacheprovider", timeout=90,
    )
    assert time.perf_counter() - t0 < 45
    out = res.stdout.str()
    assert res.ret != 0
    res.stdout.fnmatch_lines([
        "*not finished: the ragdive deadline of 5 s was reached*",
        "*baseline NOT written*",
        "*the ragdive deadline of 5 s was reached: the run stopped, its reports are partial*",
    ])
    assert "gate passed" not in out
    assert not (pytester.path / "b.json").exists()
    data = results(pytester)
    assert data["info"]["completed"] is False and data["status"] == "baseline_refused"
    assert 0 < len(data["conversations"]) < 5


def test_llm_failures_print_one_line_per_conversation(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FAKE_KEY_ENV, "sk-test")
    for var in ("TOY_FORGET", "TOY_RAISE_ON", "TOY_UNSAFE"):
        monkeypatch.delenv(var, raising=False)
    pytester.makeconftest(TOY_CONFTEST)
    data = pytester.mkdir("data")
    from conftest import SINGLE

    (data / "single.jsonl").write_text("\n".join(json.dumps(r) for r in SINGLE) + "\n")
    with FakeLLMServer(scripted, fault_rate=1.0, faults=("400",)) as server:
        pytester.makefile(".toml", pyproject=f"""
[tool.ragdive]
model = "openai/fake-model"
report_dir = "report"
record_mode = "off"
[tool.ragdive.llm]
api_base = "{server.url}"
api_key_env = "{FAKE_KEY_ENV}"
transport = "openai_http"
timeout_s = 5
max_retries = 0
[tool.ragdive.suites.core]
single_turn = ["data/single.jsonl"]
""")
        res = pytester.runpytest("--ragdive-suite=core")
        verbose = pytester.runpytest("--ragdive-suite=core", "-v")
    res.assert_outcomes(failed=3)
    out = res.stdout.str()
    assert "Traceback" not in out and "pytest_ragdive/" not in out, out
    res.stdout.fnmatch_lines(["*judging: LLMCallError*"])
    assert "Traceback" in verbose.stdout.str()  # -v shows where it failed
    convs = results(pytester)["conversations"]
    assert all(c["traceback"] and "Traceback" in c["traceback"] for c in convs)  # and results.json keeps it


def test_a_target_without_contexts_is_not_scored_zero_on_context_metrics(toy: pytest.Pytester) -> None:
    toy.makeconftest(TOY_CONFTEST + '''
_toy_bot = bot

@pytest.fixture(scope="session")
def ragdive_target():
    return lambda messages: _toy_bot(messages).answer  # a plain string
''')
    toy.makefile(".toml", pyproject=PYPROJECT.format(extra="").replace("correctness = 0.05\n", "correctness = 0.05\nfaithfulness = 0.03\n"))
    res = toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline")
    assert res.stdout.str().count("returned no retrieved contexts") == 1
    res.stdout.fnmatch_lines([
        "*note: the target returned no retrieved contexts in any of 7 answered turn(s): faithfulness, faithfulness_strict, "
        "context_precision, context_recall, recall_at_k, recall_at_3, recall_at_10, mrr, ndcg_at_k are not applicable (None)*"
    ])
    data = results(toy)
    for c in data["conversations"]:
        for m in ("faithfulness", "faithfulness_strict", "context_recall", "recall_at_k", "mrr", "ndcg_at_k", "context_precision"):
            assert c["scores"].get(m) is None, (c["id"], m)
            assert all(t["scores"].get(m) is None for t in c["turns"])
    assert data["suites"]["core"]["correctness"] is not None  # what does not need contexts is scored
    assert data["suites"]["core"]["faithfulness"] is None
