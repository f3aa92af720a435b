"""The one factory of the tests: conversations, turns, contexts, baselines and configs.

Every builder takes keyword overrides for the record's fields, so a test says only
what matters to it::

    from factories import baseline_of, conversation, scored, turn

    conv = conversation("c1", turn("q?", answer="a", ground_truth="a"), suite="core")
    convs = [scored("c1", run, correctness=[1.0, 0.5]) for run in range(3)]
    bl = baseline_of(convs, {"correctness": 0.03})
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_ragdive.core.config import RagdiveConfig
from pytest_ragdive.core.records import Context, Conversation, Turn
from pytest_ragdive.core.results import Baseline
from pytest_ragdive.sharded.records import ShardedInfo


def contexts(*texts: str, doc_id: str | None = None) -> list[Context]:
    """Contexts ``k0``, ``k1``, ... with the given texts (and one doc id, if given)."""
    return [Context(id=f"k{i}", text=t, doc_id=doc_id) for i, t in enumerate(texts)]


def turn(question: str = "q?", index: int = 0, **fields: Any) -> Turn:
    """A turn asking ``question``; ``contexts`` may be plain strings."""
    ctx = fields.pop("contexts", None)
    if ctx is not None:
        fields["contexts"] = [c if isinstance(c, Context) else Context(id=f"k{i}", text=c) for i, c in enumerate(ctx)]
    return Turn(index=index, rag_input=question, **fields)


def conversation(cid: str = "c", *turns: Turn, **fields: Any) -> Conversation:
    """A conversation of the given turns, re-indexed 0, 1, ... in order."""
    return Conversation(id=cid, turns=[t.model_copy(update={"index": i}) for i, t in enumerate(turns)], **fields)


def scored(
    cid: str,
    run: int = 0,
    *,
    suite: str = "core",
    conversation_scores: Mapping[str, float | None] | None = None,
    **per_turn: Iterable[float | None],
) -> Conversation:
    """A scored conversation: ``scored("c1", 0, correctness=[1.0, None])`` has two turns,
    the first scored 1.0, the second unscored; every metric given must have the same length."""
    columns = {m: list(v) for m, v in per_turn.items()}
    n = max((len(v) for v in columns.values()), default=0)
    if any(len(v) != n for v in columns.values()):
        raise ValueError("every per-turn metric needs one value per turn")
    turns = [Turn(index=i, rag_input=f"{cid} q{i}", scores={m: v[i] for m, v in columns.items()}) for i in range(n)]
    return Conversation(id=cid, suite=suite, run=run, turns=turns, scores=dict(conversation_scores or {}))


def sharded_conversation(question: str, condition: str, run: int, best_f1: float, **info: Any) -> Conversation:
    """A finished conversation of the sharded diagnosis: its BEST answer F1 (and any other
    ShardedInfo field, e.g. ``final_f1``, ``best_judged``)."""
    return Conversation(
        id=f"{question}.{condition}", run=run,
        sharded=ShardedInfo(question_id=question, condition=condition, best_f1=best_f1, **info),  # type: ignore[arg-type]
    )


def baseline_of(convs: list[Conversation], gate: Mapping[str, float], suite: str = "core", n_boot: int = 10) -> Baseline:
    """The baseline an update run of these conversations would record (format 2)."""
    from pytest_ragdive.gate.baseline import build_baseline
    from pytest_ragdive.metrics.aggregate import aggregate

    res = {suite: aggregate(suite, [c for c in convs if c.suite == suite], n_boot=n_boot)}
    return build_baseline(res, dict(gate), config_hash="h", backend="offline", judge_models={}, plugin_version="t",
                          convs=convs)


def config(base_dir: Path | str | None = None, **data: Any) -> RagdiveConfig:
    """A validated RagdiveConfig (``suites={"core": {...}}`` etc.), relative paths from ``base_dir``."""
    cfg = RagdiveConfig.model_validate(data)
    if base_dir is not None:
        cfg.base_dir = str(base_dir)
    return cfg
