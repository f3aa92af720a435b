"""History policies: which user turns of the conversation build the retrieval query.

- ``none``: the last user message only (the bot forgets the conversation);
- ``first``: the first user message and the last one;
- ``last_k``: the last ``k`` user messages (the new one included);
- ``full``: every user message.

Earlier turns are kept with a weight that decays with their distance from the
new message, so that a new topic wins over an old one while an elliptical
follow-up ("and what about the Pro plan?") still inherits what it refers to.
The bot's own answers to the kept turns come along, so that it does not repeat
itself (and, with an LLM, so that the model sees the same conversation).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

POLICIES = ("none", "first", "last_k", "full")


@dataclass(frozen=True)
class Query:
    """The retrieval query: the new user message and the earlier turns kept, oldest first."""

    current: str
    previous: tuple[str, ...] = ()
    answers: tuple[str, ...] = ()  # the bot's answers to the kept earlier turns ("" if none)
    decay: float = 0.6

    @property
    def text(self) -> str:
        return " ".join((*self.previous, self.current))

    @property
    def turns(self) -> tuple[str, ...]:
        return (*self.previous, self.current)

    def weighted(self, first: float = 1.0) -> list[tuple[str, float]]:
        """(text, weight) pairs, newest first: the new message 1.0, the turn before it
        ``first * decay**0``, the one before ``first * decay**1``, and so on."""
        out = [(self.current, 1.0)]
        for distance, turn in enumerate(reversed(self.previous)):
            out.append((turn, first * self.decay**distance))
        return out


def _exchanges(messages: Sequence[Mapping[str, str]]) -> list[tuple[str, str]]:
    """(user message, the assistant's answer to it or '') pairs in order."""
    out: list[tuple[str, str]] = []
    for m in messages:
        role, content = m.get("role"), str(m.get("content", ""))
        if role == "user":
            out.append((content, ""))
        elif role == "assistant" and out and not out[-1][1]:
            out[-1] = (out[-1][0], content)
    return out


def build_query(messages: Sequence[Mapping[str, str]], policy: str = "full", k: int = 3, decay: float = 0.6) -> Query:
    """The query for the last user message of ``messages`` under ``policy``."""
    if policy not in POLICIES:
        raise ValueError(f"unknown history policy {policy!r}, expected one of {', '.join(POLICIES)}")
    ex = _exchanges(messages)
    if not ex:
        raise ValueError("the conversation has no user message")
    current, earlier = ex[-1][0], ex[:-1]
    if policy == "none" or not earlier:
        kept: list[tuple[str, str]] = []
    elif policy == "first":
        kept = earlier[:1]
    elif policy == "last_k":
        kept = earlier[-(k - 1) :] if k > 1 else []
    else:
        kept = earlier
    return Query(
        current=current,
        previous=tuple(u for u, _ in kept),
        answers=tuple(a for _, a in kept),
        decay=decay,
    )
