"""Every report file of a run, written into the report directory (each atomically:
a run killed while writing leaves the previous file or none, never half of one), and
the clearing of a previous run's report files when a run starts (so that nothing a
run did not write reads as its verdict)."""

from __future__ import annotations

import os
from pathlib import Path

from ..core.paths import atomic_open
from ..core.records import Conversation
from ..gate.outcome import RunOutcome, rendering
from .junit import junit_xml
from .manifest import MANIFEST, REPORT_FILES, owned, remember
from .markdown import summary_md
from .pr_comment import pr_comment_md
from .results_json import Stored, write_results_json


def clear_reports(report_dir: Path) -> list[Path]:
    """Remove the report files the previous run wrote into ``report_dir`` (those its manifest
    lists, :mod:`.manifest`; a dir from before the manifest: the fixed report names) and the
    temporary files of a write that was killed; other files are left alone, a link is removed,
    never followed. The removed paths."""
    if not report_dir.is_dir():
        return []
    listed = owned(report_dir)
    names = set(REPORT_FILES) if listed is None else listed
    removed = []
    for name in sorted(names):
        p = report_dir / name
        if p.is_symlink() or p.is_file():
            p.unlink(missing_ok=True)
            removed.append(p)
    for p in report_dir.iterdir():
        name = p.name
        temp = name.startswith(".") and name.endswith(".tmp") and (
            any(name.startswith(f".{n}.") for n in (*REPORT_FILES, MANIFEST))
            or name.startswith((".report-conversations-", ".ragdive_")))
        if temp and (p.is_symlink() or p.is_file()):
            p.unlink(missing_ok=True)
            removed.append(p)
    (report_dir / MANIFEST).unlink(missing_ok=True)
    return removed


def _write(path: Path, text: str) -> Path:
    with atomic_open(path) as fh:
        fh.write(text)
    return path


def _with_whole_compared(outcome: RunOutcome, stored: Stored) -> RunOutcome:
    """``outcome`` with the conversations report.html compares with their baseline answers
    (a few per failed metric) whole again: a held copy keeps only the worst unit of each
    turn's evidence, and the comparison marks every unit in today's answer."""
    if not outcome.baseline_answers:
        return outcome
    convs = []
    for c in outcome.conversations:
        raw = stored.full_json(c.key) if f"{c.suite}::{c.id}" in outcome.baseline_answers else None
        convs.append(Conversation.model_validate_json(raw) if raw is not None else c)
    return outcome.model_copy(update={"conversations": convs})


@rendering
def write_reports(report_dir: Path, outcome: RunOutcome, stored: Stored | None = None, *, junit: bool = True) -> list[Path]:
    """results.json, ragdive-junit.xml (when gated, unless ``junit`` is False), summary.md
    (also appended to ``$GITHUB_STEP_SUMMARY``), pr-comment.md and report.html (with its
    pages of further conversations in a large run). ``stored``: what results.json and
    report.html need of conversations the outcome holds without their contexts."""
    report_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    try:
        return _write_reports(report_dir, outcome, stored, junit, written)
    finally:
        remember(report_dir, written)  # what was written, even when a later write failed


def _write_reports(report_dir: Path, outcome: RunOutcome, stored: Stored | None, junit: bool,
                   written: list[Path]) -> list[Path]:
    p = report_dir / "results.json"
    write_results_json(p, outcome, stored)
    written.append(p)
    if outcome.gate is not None and junit:
        written.append(_write(report_dir / "ragdive-junit.xml", junit_xml(outcome)))
    md = summary_md(outcome)
    written.append(_write(report_dir / "summary.md", md))
    written.append(_write(report_dir / "pr-comment.md", pr_comment_md(outcome)))
    from .html import write_html

    page = _with_whole_compared(outcome, stored) if stored is not None else outcome
    written.append(write_html(report_dir, page, stored.html_body if stored is not None else None))
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    if step:
        with open(step, "a", encoding="utf-8") as fh:
            fh.write(md)
    return written
