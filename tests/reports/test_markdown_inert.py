"""Bot text is inert in summary.md and pr-comment.md (issue 32, case 5): a quoted answer, a
judge's reason, an error and a conversation id cannot mention, link, embed, open HTML or an
unclosed comment, nor close the code span they are quoted in; one function quotes them."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_ragdive.core.records import Conversation, Evidence, Support, Turn
from pytest_ragdive.core.results import MetricValue, SuiteResult
from pytest_ragdive.gate.outcome import GateStatus, RunInfo, RunOutcome
from pytest_ragdive.gate.power import Moved
from pytest_ragdive.gate.rows import GateRow
from pytest_ragdive.reports.markdown import summary_md
from pytest_ragdive.reports.md_inert import inert
from pytest_ragdive.reports.pr_comment import MARKER, pr_comment_md

markdown_it = pytest.importorskip("markdown_it")

PAYLOAD = ("@octocat please see ![x](https://evil.example/x.png) and [click](https://evil.example/a) "
           "<img src=x onerror=alert(1)> https://evil.example/b `` ``` \u2028 <!-- the rest is hidden")
BAD_ID = "c1`@octocat <!-- [x](https://evil.example/id)"
MARKS = ("octocat", "evil.example", "<img", "<!--")


def _outcome() -> RunOutcome:
    convs = [
        Conversation(id=BAD_ID, turns=[Turn(rag_input="q", answer=PAYLOAD, scores={"faithfulness": 0.1},
                                            evidence=Evidence(support=[Support(text=PAYLOAD, score=0.0, verdict="unsupported")]))]),
        Conversation(id="@octocat`` <!--", error=f"the target raised: {PAYLOAD}", turns=[]),
    ]
    row = GateRow(suite="core", metric="faithfulness", direction="higher", baseline_mean=1.0, band_low=0.97, band_high=1.0,
                  tolerance=0.03, current=0.1, delta=-0.9, verdict="regression",
                  worse=[Moved(id=BAD_ID, drop=0.9, contribution=0.9, share=1.0)])
    suites = {"core": SuiteResult(suite="core", metrics={"faithfulness": MetricValue(value=0.1)})}
    return RunOutcome(info=RunInfo(suites=["core"]), status=GateStatus.FAILED, gate=[row], conversations=convs, suites=suites)


def _live(md: str) -> list[str]:
    """What a Markdown reader would act on: the text outside code spans and code blocks, and
    every link, image and HTML piece (the plugin's own comment marker left out)."""
    out: list[str] = []
    parser = markdown_it.MarkdownIt("commonmark").enable("table")

    def walk(tokens: list[Any]) -> None:
        for t in tokens:
            if t.type in ("html_inline", "html_block") and t.content.strip() != MARKER:
                out.append(t.content)
            elif t.type in ("link_open", "image"):
                out.append(str(t.attrs.get("href") or t.attrs.get("src")))
            elif t.type == "text":
                out.append(t.content)
            if t.children:
                walk(t.children)

    walk(parser.parse(md))
    return out


@pytest.mark.parametrize("render", [summary_md, pr_comment_md])
def test_bot_text_and_ids_are_inert(render: Any) -> None:
    md = render(_outcome())
    live = " ".join(_live(md))
    for mark in MARKS:
        assert mark not in live, (mark, md)
    assert "octocat please see" in md  # quoted, not dropped
    # the last line is still read (nothing opened by a quote hides the rest)
    assert ("Full report" if render is pr_comment_md else "(run 0):") in live


def test_the_quote_cannot_be_closed_from_inside() -> None:
    parser = markdown_it.MarkdownIt("commonmark")
    for text in [PAYLOAD, "`", "a`b", "```x```", "`" * 20, "end\\", "x" * 500, "a | b"]:
        q = inert(text, 1000)
        tokens = parser.parseInline(q)[0].children
        assert [t.type for t in tokens] == ["code_inline"], (text, q)
        assert tokens[0].content.replace("` ", "`").strip("` ") or text.strip("`") == ""
        assert "\n" not in q
    assert inert("") == "(empty)" and len(inert("y" * 1000)) < 170
