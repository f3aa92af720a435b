"""report.html: one self-contained page rendered from a RunOutcome of real scored
conversations (the bundled example with its history switched off, gated against
its committed baseline), checked as parsed HTML and in headless Chromium."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
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
    assert all("src" not in a and "href" not in a for _, a in page.tags)
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


CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)


def _chromium(args: list[str], tmp: Path, timeout: float = 90) -> str:
    """Run headless Chromium once (no network, no profile) and return stdout; the
    browser and its children are stopped whatever happens."""
    cmd = [
        CHROMIUM or "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
        "--hide-scrollbars", f"--user-data-dir={tmp}", *args,
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, err[-2000:]
    return out


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (.ci/run installs Debian's chromium package)")
def test_renders_in_headless_chromium(outcome: RunOutcome, tmp_path: Path) -> None:
    report_dir = tmp_path / "report"
    path = write_html(report_dir, outcome)
    shot = report_dir / "report.png"
    _chromium(["--window-size=1280,2400", f"--screenshot={shot}", path.as_uri()], tmp_path / "profile1")
    assert shot.is_file() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000

    # the DOM after the page's script ran, opened filtered on one verdict
    dom = _chromium(["--virtual-time-budget=3000", "--dump-dom", path.as_uri() + "#verdict=error"], tmp_path / "profile2")
    page = Page(dom)
    assert len(page.find("svg", "curve")) >= 1 and page.find("circle")
    convs = page.find("details", "conv")
    assert len(convs) == len(outcome.conversations)
    shown = [a for a in convs if "hidden" not in a]
    assert len(shown) == 1 and shown[0]["data-verdict"] == "error"  # the filter script hid the others
    body = page.find("body")[0]
    assert body.get("data-filter") == "error"
    assert "data-pwned" not in body  # the hostile answer did not
    assert str(len(shown)) in page.text
