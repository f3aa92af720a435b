"""The help-centre corpus: one JSON object a line with id, title and text."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_ragdive import Document

DEFAULT_CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "helpcentre.jsonl"


def load_corpus(path: str | Path | None = None) -> list[Document]:
    """Read the corpus (the bundled help centre by default)."""
    p = Path(path) if path is not None else DEFAULT_CORPUS
    docs = []
    for line in p.read_text(encoding="utf-8").splitlines():
        if line.strip():
            docs.append(Document.model_validate(json.loads(line)))
    return docs


def is_archived(doc: Document) -> bool:
    """Archived and retired articles stay searchable but describe rules that no longer apply."""
    title = doc.title.lower()
    return "(archived)" in title or "(retired)" in title
