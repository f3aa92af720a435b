"""Scripted turns: the golden conversation's user messages, in order."""

from __future__ import annotations

from collections.abc import Iterable

from ...core.records import Conversation, Turn


class ScriptedUser:
    """Proposes the planned turns one by one, whatever the answers are.

    When the conversation ends early (a target error), the turns not reached
    are appended unanswered in :meth:`finish`, so the record still shows the
    whole script.
    """

    def __init__(self, turns: Iterable[Turn]) -> None:
        self._turns = list(turns)
        self._next = 0

    async def next_turn(self, conv: Conversation) -> Turn | None:
        if self._next >= len(self._turns):
            return None
        turn = self._turns[self._next]
        self._next += 1
        return turn

    def finish(self, conv: Conversation) -> None:
        if conv.error is not None:
            conv.turns.extend(self._turns[len(conv.turns) :])
