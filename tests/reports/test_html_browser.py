"""report.html in a real browser (headless Chromium over the DevTools protocol, 1280 x 800):
a passing run, a faithfulness regression (the example's "memory" reader invents a sentence)
and a forgetfulness regression (the example with its history switched off), each
screenshotted, with DOM checks of what a person must see: nothing in the gate table
scrolls sideways and its verdict column is within the window, the failed metrics are on
the first screen, the worst conversation opened from its link shows the invented
sentence highlighted and the baseline's answer beside it, and the forgetfulness row names
its conversations and turns. ``RAGDIVE_SCREENSHOTS=DIR`` keeps the screenshots."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from browser import CHROMIUM, Browser
from example_outcome import PRO_PRICE, example_outcome

from pytest_ragdive.gate.outcome import RunOutcome
from pytest_ragdive.reports.html import write_html

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (.ci/run installs Debian's chromium package)")

LAYOUT = """(() => {
  const w = window.innerWidth, table = document.querySelector("table.gate");
  const verdicts = [...document.querySelectorAll("table.gate td.verdict")].map(td => td.getBoundingClientRect().right);
  const head = document.querySelector("p.headline").getBoundingClientRect();
  return {width: w, page: document.documentElement.scrollWidth, table: table.scrollWidth - table.clientWidth,
          verdict_right: Math.max(...verdicts), headline_bottom: head.bottom,
          headline: document.querySelector("p.headline").innerText};
})()"""


def _keep(shot: Path) -> None:
    keep = os.environ.get("RAGDIVE_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)


def _open(browser: Browser, path: Path, fragment: str = "") -> dict[str, object]:
    browser.open(path.as_uri() + fragment)
    layout: dict[str, object] = browser.js(LAYOUT)
    # nothing in the gate table scrolls sideways at 1280 px, and the verdict column is in the window
    assert layout["page"] == layout["width"] == 1280, layout
    assert layout["table"] == 0 and float(layout["verdict_right"]) <= 1280, layout  # type: ignore[arg-type]
    return layout


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[RunOutcome, Path]]:
    out = {}
    for name, outcome in (
        ("pass", example_outcome(history="full", markup=False)),
        ("faithfulness", example_outcome(history="full", reader="memory", markup=False)),
        ("forgetfulness", example_outcome(history="none", markup=False)),
        ("attacks", example_outcome(history="full", suite="attacks", markup=False)),
    ):
        out[name] = (outcome, write_html(tmp_path_factory.mktemp(name), outcome))
    return out


def test_passing_run(pages: dict[str, tuple[RunOutcome, Path]], tmp_path: Path) -> None:
    outcome, path = pages["pass"]
    assert outcome.status.value == "passed"
    with Browser() as b:
        layout = _open(b, path)
        assert str(layout["headline"]).startswith("ragdive gate passed: 10 gated metric(s)")
        assert b.js("document.querySelectorAll('table.gate tr.row-bad').length") == 0
        _keep(b.screenshot(tmp_path / "1-passing-run.png"))


def test_a_table_with_a_metric_per_column_scrolls_in_its_box(
    pages: dict[str, tuple[RunOutcome, Path]], tmp_path: Path
) -> None:
    """The attacks suite's by-role table has a column per metric (about 4,000 px): it scrolls
    inside its own box, the page does not scroll sideways (``_open`` checks the width)."""
    _, path = pages["attacks"]
    with Browser() as b:
        _open(b, path, "#roles")
        widths = b.js("[...document.querySelectorAll('#roles ~ .tw')].map(d => [d.scrollWidth, d.clientWidth])")
        assert widths and max(w for w, _ in widths) > 1280 and all(c <= 1280 for _, c in widths), widths
        _keep(b.screenshot(tmp_path / "4-attacks-by-role.png"))


def test_faithfulness_regression(pages: dict[str, tuple[RunOutcome, Path]], tmp_path: Path) -> None:
    outcome, path = pages["faithfulness"]
    with Browser() as b:
        layout = _open(b, path)
        # the failed metrics in plain words on the first screen
        assert float(layout["headline_bottom"]) < 800  # type: ignore[arg-type]
        assert "core/faithfulness" in str(layout["headline"])
        first = b.js("(() => { const r = document.querySelector('tr[data-metric=faithfulness]').getBoundingClientRect();"
                     " return [r.top, r.bottom]; })()")
        assert first[1] < 800
        _keep(b.screenshot(tmp_path / "2-faithfulness-regression.png"))
        # the worst conversation, opened from its link in the gate row
        b.js("document.querySelector('tr[data-metric=faithfulness] a.conv-link').click()")
        got = json.loads(b.js("""(() => {
          const d = document.getElementById(location.hash.slice(1));
          const marks = [...d.querySelectorAll("section.since .side.now .u-unsupported")];
          const bad = marks.find(m => m.innerText.startsWith("Business comes with unlimited cloud storage"));
          const base = d.querySelector("section.since .side.base");
          const br = bad.getBoundingClientRect(), rr = base.getBoundingClientRect();
          return JSON.stringify({id: d.id, open: d.open, color: getComputedStyle(bad).backgroundColor,
            bad: [br.left, br.top, br.width], base: base.innerText, base_box: [rr.left, rr.top, rr.width],
            title: bad.getAttribute("title")});
        })()"""))
        assert got["id"] == "conv-core__core_2fa_recovery__run0" and got["open"]
        assert got["color"] not in ("rgba(0, 0, 0, 0)", "transparent")  # highlighted
        assert got["bad"][2] > 0 and got["base_box"][2] > 0 and "If you lose the phone or key" in got["base"]
        assert got["base_box"][0] < got["bad"][0]  # the baseline answer on the left, beside today's
        assert "no source holds" in got["title"]
        b.js("document.querySelector('#' + location.hash.slice(1) + ' section.since').scrollIntoView()")
        _keep(b.screenshot(tmp_path / "2b-faithfulness-worst-conversation.png"))
    assert outcome.baseline_answers


def test_forgetfulness_regression(pages: dict[str, tuple[RunOutcome, Path]], tmp_path: Path) -> None:
    outcome, path = pages["forgetfulness"]
    with Browser() as b:
        layout = _open(b, path)
        assert "core/forgotten_turn_share" in str(layout["headline"]) and float(layout["headline_bottom"]) < 800  # type: ignore[arg-type]
        _keep(b.screenshot(tmp_path / "3-forgetfulness-regression.png"))
        row = b.js("(() => { const r = document.querySelector('tr[data-metric=forgotten_turn_share]'); r.scrollIntoView();"
                   " return r.querySelector('.where').innerText; })()")
        assert "core-2fa-recovery (turn 3)" in row and "correctly stand-alone but wrongly in the conversation" in row
        _keep(b.screenshot(tmp_path / "3b-forgetfulness-row.png"))


def test_the_filter_script_runs_and_no_markup_escapes(tmp_path: Path) -> None:
    """The verdict filter from the URL, and the example's hostile answers shown as text (no script of theirs ran)."""
    outcome = example_outcome(history="none", raise_on=PRO_PRICE)
    path = write_html(tmp_path / "report", outcome)
    with Browser() as b:
        b.open(path.as_uri() + "#verdict=error")
        state = json.loads(b.js("""JSON.stringify({
          shown: [...document.querySelectorAll("details.conv")].filter(d => !d.hidden).map(d => d.dataset.verdict),
          total: document.querySelectorAll("details.conv").length, filter: document.body.dataset.filter,
          pwned: document.body.dataset.pwned || null, count: document.getElementById("conv-shown").innerText,
          curves: document.querySelectorAll("svg.curve circle").length})"""))
    assert state["total"] == len(outcome.conversations) and state["shown"] == ["error"] and state["count"] == "1"
    assert state["filter"] == "error" and state["pwned"] is None and state["curves"] > 0
