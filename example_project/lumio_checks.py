"""The Lumio team's own checks, beside the plugin's built-in metrics (named in the ragdive
config: metric_modules = ["lumio_checks"]; a conftest.py would do too, but a module the
config names is also known to `ragdive gate`, `ragdive report` and run_suite)."""

from __future__ import annotations

import re

import pytest_ragdive as rd

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


@rd.metric("numbers_grounded", level="turn", higher_is_better=True, dimension="grounding")
def numbers_grounded(turn: rd.Turn, conversation: rd.Conversation) -> float | None:
    """1 when every number the answer states (a price, a limit, a number of days) appears in the
    retrieved contexts or the question, else 0; None when the answer states no number."""
    stated = set(_NUMBER.findall(turn.answer or ""))
    if not stated:
        return None
    known = set(_NUMBER.findall(" ".join([turn.rag_input, *(c.text for c in turn.contexts)])))
    return float(stated <= known)
