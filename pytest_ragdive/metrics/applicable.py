"""Metrics that need retrieved contexts, for a target that returns none.

A target that returns only a string (no contexts) cannot be scored on
faithfulness, context precision/recall or the retrieval ranks: those metrics
are not applicable (None), not 0, just as the LLM judges treat a turn without
contexts. :func:`without_contexts` applies that to a whole run and returns the
one warning that says which metrics were skipped and why (None when some turn
had contexts: an empty retrieval then is a real miss and scores 0).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..core.records import Conversation

CONTEXT_METRICS: tuple[str, ...] = (
    "faithfulness",
    "faithfulness_strict",
    "context_precision",
    "context_recall",
    "recall_at_k",
    "recall_at_3",
    "recall_at_10",
    "mrr",
    "ndcg_at_k",
)


def without_contexts(conversations: Iterable[Conversation]) -> str | None:
    """When no answered turn of the run has a context, set CONTEXT_METRICS to
    None on every turn and conversation and return the warning; else None."""
    convs = [c for c in conversations if c.error is None]
    answered = [t for c in convs for t in c.turns if t.answer is not None]
    if not answered or any(t.contexts for t in answered):
        return None
    for c in convs:
        for t in c.turns:
            for m in CONTEXT_METRICS:
                if m in t.scores:
                    t.scores[m] = None
        for m in CONTEXT_METRICS:
            if m in c.scores:
                c.scores[m] = None
    names = ", ".join(CONTEXT_METRICS)
    return (
        f"the target returned no retrieved contexts in any of {len(answered)} answered turn(s): {names} "
        "are not applicable (None), not scored as 0; return TargetResponse(answer=..., contexts=[...]) "
        "to score them, and leave them out of [tool.ragdive.gate] until then"
    )
