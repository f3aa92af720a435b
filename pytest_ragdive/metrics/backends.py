"""The one place that picks the backends from the config.

The judge (``judge_backend``): ``builtin``, our prompts (:mod:`.judged`); ``ragas``:
faithfulness, context_precision and context_recall from ragas (:mod:`.ragas_backend`),
the rest from our prompts. Both write the same scores, verdicts and call counts.

The offline grounding (``faithfulness_backend``, :func:`offline_grounding`): ``semantic``
(lexical and semantic evidence, the embedded model), ``lexical``, or ``nli`` (semantic,
and the NLI checker for the turns in ``nli.band``); :func:`check_grounding` checks at the
start of a session, without importing anything heavy, that it can load.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ..core.records import Conversation, Document, Turn

if TYPE_CHECKING:
    from ..core.config import RagdiveConfig
    from ..llm import LLMClient
    from .judged import ConversationJudge
    from .offline import Grounding

__all__ = ["JudgeAsItRuns", "check_grounding", "conversation_judge", "judge_conversation", "offline_grounding"]


def check_grounding(cfg: RagdiveConfig) -> None:
    """Raise the one-line usage error (SemanticModelError, NLIModelError) of a grounding that
    cannot load: the embedded model's files, the [nli] extra, the checker's folder. Nothing
    heavy is imported (the model loads when a suite first scores)."""
    if cfg.faithfulness_backend == "lexical":
        return
    from .semantic import model_files

    model_files()
    if cfg.faithfulness_backend == "nli":
        import importlib.util

        from .nli import NLIModelError, resolve_model

        missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
        if missing:
            raise NLIModelError(
                f'faithfulness_backend = "nli" needs {" and ".join(missing)}: pip install "pytest-ragdive[nli]"'
            )
        assert cfg.nli.model is not None  # the config requires it
        resolve_model(_model_ref(cfg, cfg.nli.model))
        if cfg.nli.base is not None:
            resolve_model(_model_ref(cfg, cfg.nli.base), "nli.base")


def _model_ref(cfg: RagdiveConfig, ref: str) -> str:
    """A folder relative to the config file when there is one, else the model id as given."""
    p = cfg.path(ref)
    return str(p) if p.is_dir() else ref


def offline_grounding(cfg: RagdiveConfig) -> Grounding:
    """The :class:`~.offline.Grounding` of ``cfg.faithfulness_backend``; ``nli`` loads the
    checker here (once per process: the caller keeps it), its scores cached under
    ``cache_dir/nli`` when the cache is on."""
    from .offline import DEFAULT_GROUNDING, LEXICAL_GROUNDING, Grounding

    if cfg.faithfulness_backend == "lexical":
        return LEXICAL_GROUNDING
    if cfg.faithfulness_backend == "semantic":
        return DEFAULT_GROUNDING
    from .nli import NLITier, ScoreCache, load_scorer

    n = cfg.nli
    assert n.model is not None
    model = _model_ref(cfg, n.model)
    base = None if n.base is None else _model_ref(cfg, n.base)
    scorer, name = load_scorer(n.kind, model, base=base, max_tokens=n.max_tokens, device=n.device)
    cache = ScoreCache(cfg.path(cfg.cache_dir) / "nli" if cfg.record_mode.cached else None)
    tier = NLITier(scorer, name, band=n.band, chunk_words=n.chunk_words, batch_size=n.batch_size, cache=cache)
    return Grounding(tier=tier)


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
