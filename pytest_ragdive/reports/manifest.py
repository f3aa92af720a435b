"""The report files a run wrote, listed in the report directory (``.ragdive-reports.json``),
so that the next run deletes only those: a report dir shared with other files (``report_dir =
"data"`` beside the golden data) loses none of them.

The manifest is data read back: a name it lists is deleted only when it is a plain name (no
folder, no ``..``) of the form a run writes (:func:`is_report_name`); anything else in it is
ignored. A report dir written before the manifest existed is cleared of the fixed report names
only (:data:`REPORT_FILES`), never by a pattern."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

__all__ = ["MANIFEST", "REPORT_FILES", "is_report_name", "owned", "remember"]

MANIFEST = ".ragdive-reports.json"

#: the files a run writes into its report directory (and ragdive_<suite>.json, the RAG-DIVE exports,
#: and report-conversations-N.html, the further pages of a large run's report.html)
REPORT_FILES = ("results.json", "ragdive-junit.xml", "summary.md", "pr-comment.md", "report.html")

_PATTERNS = re.compile(r"report-conversations-\d{1,9}\.html|ragdive_[A-Za-z0-9_.-]{1,200}\.jsonl?")
_MAX_BYTES = 2**20  # a manifest of a few thousand names at most


def is_report_name(name: object) -> bool:
    """Whether ``name`` is a plain file name of the form a run writes."""
    if not isinstance(name, str) or "/" in name or "\\" in name or name in ("", ".", ".."):
        return False
    return name in REPORT_FILES or _PATTERNS.fullmatch(name) is not None


def owned(report_dir: Path) -> set[str] | None:
    """The report names the manifest of ``report_dir`` lists (those of the right form only);
    None when there is no readable manifest."""
    path = report_dir / MANIFEST
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > _MAX_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list):
        return None
    return {f for f in files if is_report_name(f)}


def remember(report_dir: Path, paths: Iterable[Path]) -> None:
    """Add the files ``paths`` (written into ``report_dir``) to its manifest."""
    from ..core.paths import atomic_open

    names = set(owned(report_dir) or ())
    names |= {p.name for p in paths if p.parent == report_dir and is_report_name(p.name)}
    with atomic_open(report_dir / MANIFEST) as fh:
        json.dump({"files": sorted(names)}, fh, indent=1)
        fh.write("\n")
