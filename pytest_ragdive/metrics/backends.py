"""The one place that picks the judge backend from the config.

``builtin``: our prompts (:mod:`.judged`); ``ragas``: faithfulness,
context_precision and context_recall from ragas (:mod:`.ragas_backend`), the
rest from our prompts. Both write the same scores, verdicts and call counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..records import Conversation, Document

if TYPE_CHECKING:
    from ..config import RagdiveConfig
    from ..llm import LLMClient

__all__ = ["judge_conversation"]


async def judge_conversation(
    conv: Conversation, client: LLMClient, cfg: RagdiveConfig, documents: Mapping[str, Document]
) -> None:
    """Judge ``conv`` with ``cfg.judge_backend`` (ragas is imported only when chosen)."""
    if cfg.judge_backend == "ragas":
        from .ragas_backend import judge_conversation_ragas

        await judge_conversation_ragas(conv, client, cfg, documents)
    else:
        from .judged import judge_conversation as judge_builtin

        await judge_builtin(conv, client, cfg, documents)
