"""Reading result files (``results.json`` written by a run) back into records.

Used by the command line (review export, the gate over merged shards, the
report command). Imports no pytest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .errors import ResultsError, one_line
from .records import Conversation


def _load(path: Path) -> Any:
    if not path.is_file():
        raise ResultsError(f"ragdive results {path} not found (a run writes it to its report dir: --ragdive-report-dir)")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ResultsError(f"ragdive results {path} cannot be read: {err}") from None
    if path.suffix == ".jsonl":
        rows = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError as err:
                    raise ResultsError(f"ragdive results {path}:{n}: not JSON: {err}") from None
        return {"conversations": [r.get("conversation", r) for r in rows if isinstance(r, dict)]}
    try:
        return json.loads(text)
    except ValueError as err:
        raise ResultsError(f"ragdive results {path} is not JSON: {err}") from None


def read_conversations(path: Path) -> list[Conversation]:
    """The scored conversations of one result file (``results.json``, or JSON lines of conversations)."""
    data = _load(path)
    raw = data.get("conversations") if isinstance(data, dict) else None
    if not isinstance(raw, list):
        raise ResultsError(f"ragdive results {path} holds no 'conversations' list: is it a results.json of a run?")
    out = []
    for i, item in enumerate(raw):
        try:
            out.append(Conversation.model_validate(item))
        except ValidationError as err:
            raise ResultsError(f"ragdive results {path}: conversation {i}: {one_line(err)}") from None
    return out
