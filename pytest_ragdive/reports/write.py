"""Every report file of a run, written into the report directory."""

from __future__ import annotations

import os
from pathlib import Path

from ..gate.outcome import RunOutcome, rendering
from .junit import junit_xml
from .markdown import summary_md
from .pr_comment import pr_comment_md
from .results_json import Stored, write_results_json


@rendering
def write_reports(report_dir: Path, outcome: RunOutcome, stored: Stored | None = None, *, junit: bool = True) -> list[Path]:
    """results.json, ragdive-junit.xml (when gated, unless ``junit`` is False), summary.md
    (also appended to ``$GITHUB_STEP_SUMMARY``), pr-comment.md and report.html (with its
    pages of further conversations in a large run). ``stored``: what results.json and
    report.html need of conversations the outcome holds without their contexts."""
    report_dir.mkdir(parents=True, exist_ok=True)
    written = []
    p = report_dir / "results.json"
    write_results_json(p, outcome, stored)
    written.append(p)
    if outcome.gate is not None and junit:
        p = report_dir / "ragdive-junit.xml"
        p.write_text(junit_xml(outcome), encoding="utf-8")
        written.append(p)
    md = summary_md(outcome)
    p = report_dir / "summary.md"
    p.write_text(md, encoding="utf-8")
    written.append(p)
    p = report_dir / "pr-comment.md"
    p.write_text(pr_comment_md(outcome), encoding="utf-8")
    written.append(p)
    from .html import write_html

    written.append(write_html(report_dir, outcome, stored.html_body if stored is not None else None))
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    if step:
        with open(step, "a", encoding="utf-8") as fh:
            fh.write(md)
    return written
