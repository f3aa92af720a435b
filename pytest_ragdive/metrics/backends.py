"""The one place that picks the judge backend from the config.

``builtin``: our prompts (:mod:`.judged`); ``ragas``: faithfulness,
context_precision and context_recall from ragas (:mod:`.ragas_backend`), the
rest from our prompts. Both write the same scores, verdicts and call counts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ..core.records import Conversation, Document, Turn

if TYPE_CHECKING:
    from ..core.config import RagdiveConfig
    from ..llm import LLMClient
    from .judged import ConversationJudge

__all__ = ["JudgeAsItRuns", "conversation_judge", "judge_conversation"]


def conversation_judge(
    conv: Conversation, client: LLMClient, cfg: RagdiveConfig, documents: Mapping[str, Document]
) -> ConversationJudge:
    """The judge of ``conv`` with ``cfg.judge_backend`` (ragas is imported only when chosen):
    feed it each answered turn as the turn loop goes (``turn_answered``), then ``await
    finish()`` once the offline scores are written."""
    if cfg.judge_backend == "ragas":
        from .ragas_backend import ragas_conversation_judge

        return ragas_conversation_judge(conv, client, cfg, documents)
    from .judged import ConversationJudge

    return ConversationJudge(conv, client, cfg, documents)


async def judge_conversation(
    conv: Conversation, client: LLMClient, cfg: RagdiveConfig, documents: Mapping[str, Document]
) -> None:
    """Judge ``conv`` with ``cfg.judge_backend`` once its turn loop is over."""
    await conversation_judge(conv, client, cfg, documents).finish()


class JudgeAsItRuns:
    """A conversation's judge fed by its turn loop: the ``on_turn`` hook of
    :func:`pytest_ragdive.runner.run_conversation`. It builds the judge on the
    first answered turn (``make(conv)``, e.g. :func:`conversation_judge` with the
    run's client and documents) and starts each answered turn's judge calls at
    once, beside the conversation's later turns. An error building it is raised
    by :meth:`finish`, not into the turn loop."""

    def __init__(self, make: Callable[[Conversation], ConversationJudge]) -> None:
        self._make = make
        self.judge: ConversationJudge | None = None
        self._error: Exception | None = None

    def __call__(self, conv: Conversation, turn: Turn) -> None:
        if self.judge is None and self._error is None:
            try:
                self.judge = self._make(conv)
            except Exception as exc:  # noqa: BLE001 - raised by finish(), as a judging error
                self._error = exc
                return
        if self.judge is not None:
            self.judge.turn_answered(turn)

    async def finish(self, conv: Conversation) -> None:
        """Write ``conv``'s judged scores, verdicts and call counts (after its offline scores)."""
        if self._error is not None:
            raise self._error
        if self.judge is None:  # no turn was answered
            self.judge = self._make(conv)
        await self.judge.finish()

    def cancel(self) -> None:
        """Cancel the calls not finished (nothing is written)."""
        if self.judge is not None:
            self.judge.cancel()

    async def discard(self) -> None:
        """:meth:`cancel`, and wait for the calls to end (a conversation that failed is not judged)."""
        if self.judge is not None:
            await self.judge.discard()
