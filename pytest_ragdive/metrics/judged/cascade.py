"""One judged item: a judge function per item (our prompt, or a backend's), and
the cascade that sends negative or unparseable verdicts to the next model.

A judge of one item is a :data:`JudgeFn`: ``await judge(model)`` gives the
:class:`Outcome` of that model (None: the judge role's model). With
``judge_cascade = [cheap, strong]`` every item is judged by ``cheap`` and only
negative (score below the best value) or unparseable verdicts are judged again
by ``strong``, whose verdict then stands; ``calls.rejudged`` counts those.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...core.errors import InvalidJudgment
from ...core.records import JudgeCalls, Turn, Verdict
from ...llm.prompts import FENCE_NOTE, load_prompt
from ..registry import METRICS
from .scoring import SPECS, clip

if TYPE_CHECKING:
    from ...core.config import RagdiveConfig
    from ...llm import LLMClient

__all__ = [
    "ROLE",
    "JudgeFactory",
    "JudgeFn",
    "Outcome",
    "cascade",
    "default_model",
    "judge_models",
    "negative",
    "prompt_judge",
]

ROLE = "judge"


@dataclass
class Outcome:
    """One judgment of one item by one model."""

    score: float | None
    reason: str
    model: str | None
    invalid: bool = False


# a judge of one item: model override (None = the judge role's model) -> outcome
JudgeFn = Callable[[str | None], Awaitable[Outcome]]


def judge_models(cfg: RagdiveConfig) -> list[str | None]:
    """The models one item goes through: the cascade, else the judge role's model."""
    return list(cfg.judge_cascade) or [None]


def negative(metric: str, o: Outcome) -> bool:
    """Worth a second opinion: unparseable, or any score short of the best one."""
    if o.invalid:
        return True
    if o.score is None:  # valid but not applicable (e.g. no claims)
        return False
    # (a metric of no registry, e.g. a rubric assertion, is higher-is-better)
    spec = METRICS.get(metric)
    return o.score > 0.0 if spec is not None and spec.direction == "lower" else o.score < 1.0


async def cascade(metric: str, judge: JudgeFn, models: Sequence[str | None], calls: JudgeCalls) -> Verdict:
    outcome: Outcome | None = None
    for i, model in enumerate(models):
        if i > 0:
            calls.rejudged += 1
        outcome = await judge(model)
        if not negative(metric, outcome):
            break
    assert outcome is not None
    return Verdict(value=outcome.score, reason=clip(outcome.reason), model=outcome.model)


def prompt_judge(
    client: LLMClient, metric: str, values: dict[str, Any], n_contexts: int, level: str, calls: JudgeCalls,
    key_tag: str | None = None,
) -> JudgeFn:
    """A JudgeFn that asks our prompt ``judge_<metric>`` for one item (``key_tag``: the
    judge mode's tag of its cache key, :mod:`.combined`)."""
    spec = SPECS[metric]
    prompt = load_prompt(f"judge_{metric}")
    messages = prompt.render(fence_note=FENCE_NOTE, **values)

    async def judge(model: str | None) -> Outcome:
        requested = model or default_model(client)
        res = await client.complete_json(
            ROLE, messages, spec.schema, prompt_id=prompt.id, prompt_version=prompt.version, model=model,
            key_tag=key_tag,
        )
        # counted under the configured name (the one judge_cascade lists), not the server's echo
        used = requested or res.model
        calls.add(level, used, res.cached)
        if res.value is None:
            err = res.error or "unparseable output"
            return Outcome(None, f"invalid judge output: {err}", used, invalid=True)
        try:
            score, reason = spec.score(res.value, n_contexts)
        except InvalidJudgment as e:
            return Outcome(None, f"invalid judge output: {e}", used, invalid=True)
        return Outcome(score, reason, used)

    return judge


def default_model(client: LLMClient) -> str | None:
    try:
        return client.model_for(ROLE)
    except Exception:  # no model configured: the call itself will say so
        return None


# a backend's judge of one turn-level metric (e.g. ragas):
# (client, metric, turn, calls) -> the JudgeFn of that item
JudgeFactory = Callable[["LLMClient", str, Turn, JudgeCalls], JudgeFn]
