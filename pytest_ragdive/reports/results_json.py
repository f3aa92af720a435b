"""results.json: the whole outcome as JSON, written one conversation at a time
(:mod:`.result_files` reads it back)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

from ..core.paths import atomic_open
from ..gate.outcome import RunOutcome


def results_json(outcome: RunOutcome, conversations: bool = True) -> dict[str, Any]:
    """results.json: the outcome, with a flat ``suites`` map of metric values first
    (``conversations`` last, left out when False: :func:`write_results_json` streams them)."""
    info = outcome.info
    return {
        "status": outcome.status.value,
        "suites": {s: {m: mv.value for m, mv in r.metrics.items()} for s, r in outcome.suites.items()},
        "suite_results": {s: r.model_dump(mode="json") for s, r in outcome.suites.items()},
        "gate": [r.model_dump(mode="json") for r in outcome.gate] if outcome.gate is not None else None,
        "info": info.model_dump(mode="json"),
        "plugin_version": info.plugin_version,
        "config_hash": info.config_hash,
        "backend": info.backend,
        "notes": outcome.notes,
        "fatal": outcome.fatal,
        "not_run": outcome.not_run,
        "llm": outcome.llm.model_dump(mode="json") if outcome.llm is not None else None,
        "judge_calls": outcome.judge_calls.model_dump(mode="json") if outcome.judge_calls is not None else None,
        "validation": {s: v.model_dump(mode="json") for s, v in outcome.validation.items()} or None,
        "diversity": outcome.diversity or None,
        "baseline_path": outcome.baseline_path,
        "custom_metrics": {n: m.model_dump(mode="json") for n, m in outcome.custom_metrics.items()} or None,
        "baseline_answers": {k: v.model_dump(mode="json") for k, v in outcome.baseline_answers.items()} or None,
        "answers_changed": outcome.answers_changed or None,
        **({"conversations": [c.model_dump(mode="json") for c in outcome.conversations]} if conversations else {}),
    }


class Stored(Protocol):
    """What a session stored of conversations it holds without their contexts
    (:class:`~pytest_ragdive.held.HeldConversations`): None for one it holds whole."""

    def full_json(self, key: str) -> str | None: ...

    def html_body(self, key: str) -> str | None: ...


def write_results_json(path: Path, outcome: RunOutcome, stored: Stored | None = None) -> None:
    """results.json, one conversation at a time (pydantic's own JSON writer), so
    the whole report is never held in memory as objects or as one string.
    ``stored``: the full JSON of conversations the outcome holds without contexts."""
    head = json.dumps(results_json(outcome, conversations=False), indent=1)
    with atomic_open(path) as fh:  # a run killed while writing leaves the old file or none, never half a file
        fh.write(head[:-2] + ',\n "conversations": [')
        for i, c in enumerate(outcome.conversations):
            text = stored.full_json(c.key) if stored is not None else None
            fh.write(("," if i else "") + "\n" + (text if text is not None else c.model_dump_json()))
        fh.write("\n ]\n}\n")
