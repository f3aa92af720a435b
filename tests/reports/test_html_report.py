"""report.html: one self-contained page rendered from a RunOutcome of real scored
conversations (the bundled example with its history switched off, or its reader
inventing a sentence, gated against its committed baseline), checked as parsed HTML
(the browser checks are in test_html_browser.py)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from example_outcome import HOSTILE, PRO_PRICE, example_outcome
from pydantic import BaseModel, Field

from pytest_ragdive.gate.outcome import RunOutcome
from pytest_ragdive.gate.ranking import VERDICTS
from pytest_ragdive.reports.html import render_html, write_html


class Page(HTMLParser):
    """The tags, attributes and text of a page."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.scripts = 0
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self.scripts += 1

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def find(self, tag: str, cls: str | None = None) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == tag and (cls is None or cls in (a.get("class") or "").split())]


@pytest.fixture(scope="module")
def outcome() -> RunOutcome:
    return example_outcome(history="none", raise_on=PRO_PRICE)


def test_page_holds_gate_charts_and_every_conversation(outcome: RunOutcome) -> None:
    assert outcome.regressions(), "the forgetful bot must regress against the example baseline"
    page = Page(render_html(outcome))
    convs = page.find("details", "conv")
    assert len(convs) == len(outcome.conversations) == 30
    # one chart per turn-level metric with a curve over turn indices
    charts = page.find("svg", "curve")
    assert {c["data-metric"] for c in charts} >= {"correctness", "answer_f1", "recall_at_k"}
    assert len(page.find("polyline")) == len(charts)
    text = " ".join(page.text)
    for r in outcome.gate or []:
        assert f"{r.metric} " in text
    assert "forgetfulness" in text and "regression" in text
    # every turn with its question, answer, ground truth; contexts per turn
    turns = sum(len(c.turns) for c in outcome.conversations)
    assert len([a for t, a in page.tags if t == "div" and a.get("data-turn")]) == turns
    conv = next(c for c in outcome.conversations if len(c.turns) > 2)
    assert conv.turns[1].standalone_question in text and conv.turns[1].ground_truth in text
    assert conv.turns[1].contexts[0].text.split("\n")[0] in text


def test_self_contained_and_escaped(outcome: RunOutcome) -> None:
    html = render_html(outcome)
    page = Page(html)
    assert page.scripts == 1  # the report's own filter, nothing injected
    assert not page.find("img") and not page.find("link") and not page.find("iframe")
    assert all("src" not in a for _, a in page.tags)
    # links only within the page (or to its own pages of further conversations)
    hrefs = [a["href"] or "" for _, a in page.tags if "href" in a]
    assert hrefs and all(re.fullmatch(r"(report-conversations-\d+\.html)?#[\w-]+", h) for h in hrefs)
    assert not any("://" in (v or "") for _, a in page.tags for v in a.values())  # URLs only as text
    assert "url(" not in html and "@import" not in html
    assert "default-src 'none'" in html  # CSP: nothing may be loaded, even by a bug
    assert HOSTILE in " ".join(page.text)  # shown as text, verbatim
    assert "&lt;script&gt;document.body" in html
    assert "<b>markup</b>" not in html


def test_worst_conversations_first(outcome: RunOutcome) -> None:
    page = Page(render_html(outcome))
    order = [a["data-verdict"] for a in page.find("details", "conv")]
    assert order[0] == "error" and order.count("error") == 1 and "below_band" in order
    assert order == sorted(order, key=lambda v: VERDICTS.index(v))  # type: ignore[arg-type]
    # within a verdict, ascending goodness (worst first)
    good = [float(a["data-goodness"] or 0) for a in page.find("details", "conv") if a["data-verdict"] == "below_band"]
    assert good == sorted(good) and good[0] < good[-1]
    assert "the bot fell over" in " ".join(page.text)


def test_typed_extra_result_gets_a_section(outcome: RunOutcome) -> None:
    """The hook for results this module has no section for (the sharded diagnosis)."""

    class Estimate(BaseModel):
        value: float
        ci_low: float
        ci_high: float

    class WithSharded(RunOutcome):
        sharded: dict[str, dict[str, Estimate]] = Field(default_factory=dict)

    data = outcome.model_dump()
    plain = WithSharded(**data)
    assert 'data-field="sharded"' not in render_html(plain)  # empty: no section
    extended = WithSharded(**data, sharded={"core": {"gap": Estimate(value=0.25, ci_low=0.1, ci_high=0.4)}})
    page = Page(render_html(extended))
    assert [a["data-field"] for a in page.find("h2", "extra")] == ["sharded"]
    assert "Sharded diagnosis" in page.text and "0.2500" in page.text


@pytest.fixture(scope="module")
def invented() -> RunOutcome:
    """The example's "memory" reader: a supported sentence, then an invented one."""
    return example_outcome(history="full", reader="memory", markup=False)


def _conv_html(html: str, key: str) -> str:
    start = html.index(f'id="conv-{key}"')
    return html[start:html.index("</details><details", start) if "</details><details" in html[start:] else None]


def test_gate_table_is_verdict_first_with_plain_reasons_and_no_repr(invented: RunOutcome) -> None:
    html = render_html(invented)
    gate = html[html.index('<table class="gate">'):html.index("</table>", html.index('<table class="gate">'))]
    assert re.findall(r"<th>([^<]+)</th>", gate)[:7] == [
        "suite", "metric", "baseline band", "current [95% CI]", "delta", "verdict", "why"]
    for raw in ("band_verdict", "on_inconclusive", "noise_free=", "Moved(", "drop=0.", "looks"):
        assert raw not in gate, raw
    assert "paired drop 0.18 &gt; tolerance 0.02 (exact: the runs repeat), over 30 conversations" in gate
    # grouped by dimension, details behind a toggle as labelled fields
    dims = re.findall(r'<tr class="dim"><th colspan="7">(\w+)', gate)
    assert dims == ["retrieval", "grounding", "answer", "safety"]
    assert gate.count('<details class="row-details">') == len(invented.gate or [])
    assert "<dt>detectable drop (80% power)</dt><dd>any change</dd>" in gate
    # the headline names the failed metrics, right under the title
    head = html[html.index('<p class="headline bad">'):html.index("</p>", html.index('<p class="headline bad">'))]
    assert "5 of 10 gated metrics failed: core/faithfulness, core/numbers_grounded, core/answer_f1, core/assertion_pass_rate, core/safety_pass_rate" in head
    assert html.index("<h1>") < html.index(head) < html.index('<table class="gate">')


def test_invented_sentence_is_highlighted_and_the_baseline_answer_beside_it(invented: RunOutcome) -> None:
    html = render_html(invented)
    worst = next(r for r in invented.regressions() if r.metric == "faithfulness").worse[0].id
    assert worst == "core-2fa-recovery"
    body = _conv_html(html, f"core__{worst.replace('-', '_')}__run0")
    invented_text = "Business comes with unlimited cloud storage for every camera on the site."
    # highlighted inside the answer, with what no source holds on hover
    marked = re.findall(r'<span class="unit u-unsupported" title="([^"]+)">([^<]*(?:<ins>[^<]*</ins>[^<]*)*)</span>', body)
    texts = {re.sub(r"</?ins>", "", text): title for title, text in marked}
    assert invented_text in texts and "no source holds “comes, unlimited, cloud" in texts[invented_text]
    # the baseline's answer beside today's, the new words marked, both sides' values
    since = body[body.index('<section class="since">'):body.index("</section>")]
    base = invented.baseline_answers[f"core::{worst}"]
    assert base.turns[2].answer is not None and base.turns[2].answer in since
    assert invented_text not in base.turns[2].answer
    assert "<ins>Business</ins>" in since and "faithfulness 1.00 → <b>0.67</b>" in since
    # the supporting span of a supported sentence on hover, its context named
    assert re.search(r'class="unit u-supported" title="supported \(1\.00\) by lost-2fa-device#\d: “', body)
    assert "context <b>lost-2fa-device#0</b>" in body


def test_forgetfulness_row_names_the_conversations_and_turns(outcome: RunOutcome) -> None:
    html = render_html(outcome)
    row = html[html.index('data-metric="forgotten_turn_share" data-verdict="regression"'):]
    row = row[:row.index("</tr>")]
    forgetful = {c.id: [t.index + 1 for t in c.turns if "forgetful" in t.flags] for c in outcome.conversations if c.error is None}
    named = re.findall(r'>([\w-]+)</a> \(turn ([\d, ]+)\)', row)
    assert len(named) >= 5 and all(forgetful[cid] == [int(x) for x in turns.split(", ")] for cid, turns in named)
    assert "answered a follow-up correctly stand-alone but wrongly in the conversation" in row
    # a forgetful turn shows its stand-alone answer beside the conversation's
    assert html.count('<div class="pair forgot">') == sum(len(v) for v in forgetful.values())


def test_a_large_run_shows_the_worst_in_full_and_pages_the_rest(outcome: RunOutcome, tmp_path: Path) -> None:
    path = write_html(tmp_path, outcome, worst=8, page=10)
    page = Page(path.read_text())
    assert len(page.find("details", "conv")) == 8
    lines = page.find("li", "conv-line")
    assert len(lines) == 22 and {a.get("data-verdict") for a in lines} <= set(VERDICTS)
    pages = sorted(p.name for p in tmp_path.glob("report-conversations-*.html"))
    assert pages == ["report-conversations-1.html", "report-conversations-2.html", "report-conversations-3.html"]
    assert sum(len(Page((tmp_path / p).read_text()).find("details", "conv")) for p in pages) == 22
    target = page.find("a")[-1]["href"] or ""
    name, anchor = target.split("#")
    assert f'id="{anchor}"' in (tmp_path / name).read_text()
    write_html(tmp_path, outcome)  # all in one page again: the stale pages go
    assert not list(tmp_path.glob("report-conversations-*.html"))
