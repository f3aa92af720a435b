"""Programmatic entry point: run a configured suite outside a pytest session."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.config import RagdiveConfig, load_config
from ..core.errors import TargetError
from ..core.memo import MemoScope
from ..core.records import Conversation
from ..core.results import SuiteResult
from ..metrics.aggregate import aggregate
from .pipeline import Pipeline
from .planning import plan_suite


def run_suite(
    target: Any,
    config: str | Path | RagdiveConfig,
    suite: str = "core",
    runs: int = 1,
    conversations: list[Conversation] | None = None,
    metrics: Sequence[object] = (),
) -> SuiteResult:
    """Run ``suite`` of a ragdive config (a file path or a RagdiveConfig) against
    ``target`` and return its SuiteResult. Pass a list as ``conversations`` to
    receive the scored conversations too. ``metrics``: functions decorated with
    :func:`pytest_ragdive.metric` (or modules holding them) scored besides the config's
    own (outside pytest no conftest.py is read). What a pytest run would print as
    notes (skipped files, a fatal LLM error) is in ``result.notes``."""
    # the metrics given count when the config's gate names them (a conftest's @pytest_ragdive.metric)
    cfg = config if isinstance(config, RagdiveConfig) else load_config(Path(config).resolve(), metrics=False)
    if metrics:
        from ..metrics.discovery import build_registry

        cfg = cfg.model_copy()
        cfg.use_metrics(build_registry(cfg, metrics))
    if suite not in cfg.suites:
        raise ValueError(f"suite {suite!r} is not configured (configured: {', '.join(cfg.suites) or 'none'})")
    # the scoring memos live as long as this run (core/memo.py): a second call starts empty
    with MemoScope(), cfg.metrics.active():  # what METRICS reads while this suite runs and aggregates
        notes: list[str] = []
        plans = plan_suite(cfg, suite, runs, cfg.llm_enabled(), notes)
        pipeline = Pipeline(cfg)
        atarget = pipeline.wrap(target)
        try:
            futures = [pipeline.submit(p, atarget) for p in plans]
            convs = [_result(pipeline, p.key, f) for p, f in zip(plans, futures, strict=True)]
        except concurrent.futures.CancelledError:
            if pipeline.stalled is None:
                raise
            raise TargetError(pipeline.stalled) from None  # the watchdog: the event loop stalled
        finally:
            pipeline.close()
        if conversations is not None:
            conversations.extend(convs)
        result = aggregate(suite, convs)
    result.notes = notes + pipeline.notes + pipeline.fatal
    return result


def _result(pipeline: Pipeline, key: str, fut: concurrent.futures.Future[Conversation]) -> Conversation:
    """A plan's conversation; one moved to a fresh loop (another conversation blocked the loop) is waited for there."""
    while True:
        try:
            return fut.result()
        except concurrent.futures.CancelledError:
            moved = pipeline.current(key)
            if pipeline.stalled is not None or moved is None or moved is fut:
                raise
            fut = moved
