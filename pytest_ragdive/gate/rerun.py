"""Reruns of the suites whose gate is inconclusive (``gate.inconclusive =
"rerun"``): which suites, which plans, and running them.

A rerun repeats the conversations of the suites concerned that ran in the
session (every configured run of them), with run numbers after all earlier
runs, so that the gate pools every run per conversation. Cached LLM calls
(the judges on an unchanged answer) cost nothing the second time.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..core.config import RagdiveConfig
from ..core.records import Conversation
from ..run.planning import Plan, plan_suite
from ..run.target import AsyncTarget
from .rows import GateRow

if TYPE_CHECKING:
    from ..run.pipeline import Pipeline


def suites_to_rerun(rows: Iterable[GateRow]) -> list[str]:
    """The suites with a gated metric that is inconclusive and has a look left."""
    return sorted({r.suite for r in rows if r.wants_rerun})


def rerun_plans(cfg: RagdiveConfig, suites: Iterable[str], look: int, ran: Iterable[Conversation], llm_enabled: bool) -> list[Plan]:
    """The plans of rerun ``look`` (1 for the first rerun) of ``suites``: the
    conversations that ran (``ran``), runs ``cfg.runs * look`` onwards."""
    ids = {(c.suite, c.id) for c in ran}
    out: list[Plan] = []
    for suite in suites:
        plans = plan_suite(cfg, suite, cfg.runs * (look + 1), llm_enabled, [])
        out += [p for p in plans if p.run >= cfg.runs * look and (suite, p.conv_id) in ids]
    return out


def run_plans(pipeline: Pipeline, plans: list[Plan], target: AsyncTarget) -> list[Conversation]:
    """Run plans concurrently on the session's pipeline and wait for all."""
    futures = [pipeline.submit(p, target) for p in plans]
    return [f.result() for f in futures]
