"""``logs-to-suite``: production conversations worth keeping, as draft scripted conversations.

``python -m pytest_ragdive logs-to-suite LOGS.jsonl [...] -o candidates.yaml`` reads
request logs (``online.logs``), rebuilds the conversations (``online.replay``) and
keeps every conversation with a turn that

- ``error``: the target raised,
- ``empty_retrieval``: retrieved no context,
- ``low_grounding``: has grounding below ``low_grounding`` (0.5),
- ``negative_feedback``: got negative feedback,
- ``hedged``: hedged its answer,

plus a sample of ``sample`` (5) of the others, drawn with ``seed`` (0): the same log
and seed give the same file. It writes them in the scripted-conversation format
(``sources.golden``) with the chatbot's answers as *draft* ground truths and the
ids it cited as draft ``relevant_doc_ids``, each conversation marked
``reviewed: false`` under a comment saying why it was kept. The loader refuses a
conversation marked ``reviewed: false``: a person corrects the drafts and sets
``reviewed: true`` (or deletes the key), then lists the file under a suite's
``conversations``.
"""

from __future__ import annotations

import random
import re

from ..sources.golden import ScriptedConversation, ScriptedTurn
from .replay import LoggedConversation, LoggedTurn

__all__ = ["REASONS", "reasons", "render_candidates", "select"]

REASONS = ("error", "empty_retrieval", "low_grounding", "negative_feedback", "hedged")


def _turn_reasons(turn: LoggedTurn, low_grounding: float) -> list[str]:
    s = turn.signals
    out: list[str] = []
    if turn.error is not None:
        out.append("error")
    if s is not None and s.empty_retrieval:
        out.append("empty_retrieval")
    if s is not None and s.grounding is not None and s.grounding < low_grounding:
        out.append("low_grounding")
    if turn.feedback:
        out.append("negative_feedback")
    if s is not None and s.hedging:
        out.append("hedged")
    return out


def reasons(conv: LoggedConversation, low_grounding: float) -> list[str]:
    """Why a conversation is worth keeping, e.g. ``["empty_retrieval (turn 2)",
    "negative_feedback (turn 2: wrong_answer)"]``; empty when nothing stands out."""
    out: list[str] = []
    for name in REASONS:
        for n, turn in enumerate(conv.turns, 1):
            if name in _turn_reasons(turn, low_grounding):
                detail = f"turn {n}"
                if name == "negative_feedback":
                    detail += ": " + ", ".join(turn.feedback)
                elif name == "low_grounding" and turn.signals is not None and turn.signals.grounding is not None:
                    detail += f": {turn.signals.grounding:.2f}"
                out.append(f"{name} ({detail})")
    return out


def select(
    convs: list[LoggedConversation], *, low_grounding: float, sample: int, seed: int
) -> list[tuple[LoggedConversation, list[str]]]:
    """The flagged conversations and a seeded sample of the rest, in log order, with why."""
    flagged = {c.id: reasons(c, low_grounding) for c in convs}
    rest = sorted(c.id for c in convs if not flagged[c.id])
    sampled = set(random.Random(seed).sample(rest, min(sample, len(rest))))
    return [
        (c, flagged[c.id] or ["sampled"]) for c in convs if flagged[c.id] or c.id in sampled
    ]


def _scripted(conv: LoggedConversation) -> ScriptedConversation:
    first = conv.turns[0].rag_input
    return ScriptedConversation(
        id=conv.id,
        title=first if len(first) <= 60 else first[:57] + "...",
        reviewed=False,
        turns=[
            ScriptedTurn(
                rag_input=t.rag_input,
                ground_truth=t.answer or "",
                question_type="Initial" if n == 0 else "Follow-up",
                relevant_doc_ids=t.cited,
            )
            for n, t in enumerate(conv.turns)
        ],
    )


def render_candidates(selected: list[tuple[LoggedConversation, list[str]]], source: str = "") -> str:
    """The candidates file (YAML, one comment per conversation saying why it was kept)."""
    import yaml

    lines = [
        f"# Candidate regression cases from production logs{f' ({source})' if source else ''}, by logs-to-suite.",
        "# Each ground_truth is the chatbot's own answer (a draft): correct it, check relevant_doc_ids,",
        "# then set reviewed: true. The loader refuses conversations marked reviewed: false.",
        "conversations:",
    ]
    for conv, why in selected:
        data = _scripted(conv).model_dump(exclude_defaults=True)
        data = {"id": data.pop("id"), "title": data.pop("title"), "reviewed": False, **data}
        text = yaml.safe_dump([data], sort_keys=False, allow_unicode=True, width=100)
        lines.append(f"  # kept for: {_comment('; '.join(why))}")
        lines.extend(f"  {ln}" if ln else ln for ln in text.rstrip("\n").split("\n"))
    if not selected:
        lines[-1] = "conversations: []"
    out = "\n".join(lines) + "\n"
    _check_drafts(out, len(selected))
    return out


#: what ends a YAML comment: line breaks (YAML counts NEL and the Unicode separators too) and
#: the other control characters
_LINE_ENDS = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029\ufeff]")


def _comment(text: str) -> str:
    """Text from a log (a feedback category) inside a YAML comment: on one line, so it cannot
    end the comment and add keys or conversations of its own."""
    return " ".join(_LINE_ENDS.sub(" ", text).split())


def _check_drafts(text: str, n: int) -> None:
    """The file holds exactly the ``n`` drafts, each ``reviewed: false`` (a person reviews them)."""
    import yaml

    convs = (yaml.safe_load(text) or {}).get("conversations") or []
    if len(convs) != n or any(not isinstance(c, dict) or c.get("reviewed") is not False for c in convs):
        raise ValueError("logs-to-suite: the candidates file would not hold exactly its drafts, each reviewed: false")


