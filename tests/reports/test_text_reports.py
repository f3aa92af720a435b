"""The terminal, summary.md and pr-comment.md tell the same story as report.html in fewer
words: the verdict line naming the failed metrics, the verdict-first gate table with a
plain-words reason, and where it got worse (the worst unsupported sentence, the forgetful
conversations and turns); pr-comment.md stays under GitHub's comment limit at any size."""

from __future__ import annotations

from pathlib import Path

import pytest
from example_outcome import example_outcome

from pytest_ragdive.core.records import Conversation, Evidence, Support, Turn
from pytest_ragdive.core.results import MetricValue, SuiteResult
from pytest_ragdive.gate.outcome import GateStatus, RunInfo, RunOutcome
from pytest_ragdive.gate.power import Moved
from pytest_ragdive.gate.rows import GateRow
from pytest_ragdive.reports import pr_comment
from pytest_ragdive.reports.markdown import summary_md
from pytest_ragdive.reports.pr_comment import LIMIT, MARKER, pr_comment_md
from pytest_ragdive.reports.terminal import terminal_lines
from pytest_ragdive.reports.text import status_text
from pytest_ragdive.reports.write import write_reports

INVENTED = "Business comes with unlimited cloud storage for every camera on the site."


@pytest.fixture(scope="module")
def invented() -> RunOutcome:
    return example_outcome(history="full", reader="memory", markup=False)


@pytest.fixture(scope="module")
def forgetful() -> RunOutcome:
    return example_outcome(history="none", markup=False)


def _three(outcome: RunOutcome) -> tuple[str, str, str]:
    return ("\n".join(line.text for line in terminal_lines(outcome)), summary_md(outcome), pr_comment_md(outcome))


def test_the_faithfulness_regression_in_three_reports(invented: RunOutcome) -> None:
    terminal, summary, comment = _three(invented)
    head = status_text(invented)
    assert head.startswith("ragdive gate FAILED: 5 of 10 gated metrics failed: core/faithfulness, core/numbers_grounded, core/answer_f1")
    detail = head.removeprefix("ragdive gate FAILED")  # summary.md bolds the verdict: "**FAILED**: 5 of 10 ..."
    assert f"**FAILED**{detail}" in summary and head in terminal and head in comment
    for text in (terminal, summary, comment):
        assert detail in text
        assert f"core-2fa-recovery: faithfulness 0.74, drop 0.26, 10% of the total drop; turn 4, unsupported: {INVENTED!r}" \
            in text or "`core/core-2fa-recovery`: faithfulness 0.74" in text or (
            f"`core-2fa-recovery`: faithfulness 0.74, drop 0.26, 10% of the total drop; turn 4, unsupported: `{INVENTED}`" in text)
        assert INVENTED in text
        assert "paired drop 0.18 > tolerance 0.02 (exact: the runs repeat), over 30 conversations" in text
        for raw in ("noise_free", "Moved(", "band_verdict", "0.0000 detectable", "233%"):
            assert raw not in text
    assert len(comment) < len(summary) and comment.startswith(MARKER)
    assert "| verdict | why |" in summary and "| dimension |" in summary
    # summary.md groups by dimension: retrieval before grounding before answer before safety
    gate = summary[summary.index("| dimension |"):summary.index("## What got worse")]
    assert [gate.index(f"| {d} |") for d in ("retrieval", "grounding", "answer", "safety")] == sorted(
        gate.index(f"| {d} |") for d in ("retrieval", "grounding", "answer", "safety"))


def test_the_forgetfulness_regression_names_conversations_and_turns(forgetful: RunOutcome) -> None:
    terminal, summary, comment = _three(forgetful)
    turn = "turn 3 answered correctly stand-alone but wrongly in the conversation"
    assert f"core-2fa-recovery: forgotten_turn_share 0.50, drop 0.50, 11% of the total drop; {turn}" in terminal
    assert f"`core-2fa-recovery`: forgotten_turn_share 0.50, drop 0.50, 11% of the total drop; `{turn} (1 of 2 eligible turns forgotten)`" in summary
    assert "forgotten_turn_share 0.50; `turn" in comment and "answered correctly stand-alone but wrongly" in comment


def test_the_comment_is_written_with_the_artifact_link(invented: RunOutcome, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGDIVE_ARTIFACT_URL", "https://example.invalid/runs/7")
    written = write_reports(tmp_path, invented)
    assert tmp_path / "pr-comment.md" in written
    text = (tmp_path / "pr-comment.md").read_text()
    assert "](https://example.invalid/runs/7)" in text
    monkeypatch.delenv("RAGDIVE_ARTIFACT_URL")
    assert "](RAGDIVE_ARTIFACT_URL)" in pr_comment_md(invented)  # the placeholder for the workflow


def _huge(n_rows: int, n_convs: int) -> RunOutcome:
    long = "x" * 5000
    convs = [Conversation(id=f"conv-{i}-{long}", turns=[Turn(
        rag_input="q", answer=long, scores={"faithfulness": 0.1},
        evidence=Evidence(support=[Support(text=long, score=0.0, verdict="unsupported")]))]) for i in range(n_convs)]
    rows = [GateRow(suite="core", metric=f"faithfulness{'' if i == 0 else f'_{i}_' + long}", direction="higher",
                    baseline_mean=1.0, band_low=0.97, band_high=1.0, tolerance=0.03, current=0.1, delta=-0.9,
                    verdict="regression", worse=[Moved(id=c.id, drop=0.9, contribution=0.01, share=0.01) for c in convs[:10]])
            for i in range(n_rows)]
    suites = {"core": SuiteResult(suite="core", metrics={"faithfulness": MetricValue(value=0.1)})}
    return RunOutcome(info=RunInfo(suites=["core"]), status=GateStatus.FAILED, gate=rows, conversations=convs, suites=suites)


def test_the_comment_stays_under_githubs_limit_whatever_the_size(monkeypatch: pytest.MonkeyPatch) -> None:
    text = pr_comment_md(_huge(400, 3000))
    assert len(text) < LIMIT and text.startswith(MARKER) and "more failed rows in the report" in text
    monkeypatch.setattr(pr_comment, "MAX_ROWS", 10_000)  # even past the caps, the last guard holds
    text = pr_comment_md(_huge(400, 50))
    assert len(text) <= pr_comment.BUDGET < LIMIT and "(cut to fit a comment" in text
