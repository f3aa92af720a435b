"""A team's own checks on one scored conversation: its metrics (functions decorated with
:func:`pytest_ragdive.metric`, :mod:`.registry`) and the ``assert:`` lists of its golden
rows (:mod:`.assertions`).

Both run after the offline scores, before the LLM judges (which overwrite what they own,
as with the built-ins: a rubric judge's offline twin is run only without a model).

A metric that raises, or returns anything but a finite number, a bool or None, scores None
there and fails the conversation's item, naming the metric and the turn; the run goes on.
A violated assertion fails the item too; ``assertion_pass_rate`` is the share of a turn's
checks that hold (a ``rubric`` check without a model is left out, never failed).
"""

from __future__ import annotations

import asyncio
import inspect
import math
import numbers
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from ..core.records import Conversation, Turn, Verdict
from ..core.stats import mean
from .assertions import Assertion
from .registry import MetricRegistry, MetricSpec

__all__ = ["RubricCheck", "check_assertions", "score_custom"]

PASS_RATE = "assertion_pass_rate"

# (criteria, turn) -> the judge's verdict (value 1.0: the criteria hold)
RubricCheck = Callable[[str, Turn], Awaitable[Verdict]]


class _BadValue(ValueError):
    """A metric function returned something that is not a score."""


def _number(got: Any) -> float | None:
    if got is None:
        return None
    if isinstance(got, bool):
        return float(got)
    if isinstance(got, numbers.Real) and math.isfinite(float(got)):
        return float(got)
    raise _BadValue(f"returned {got!r}: expected a finite number, a bool or None")


def _fail(conv: Conversation, msg: str) -> None:
    if msg not in conv.failures:
        conv.failures.append(msg)


def _clip(text: str, n: int = 300) -> str:
    t = " ".join(text.split())
    return t if len(t) <= n else t[: n - 1] + "…"


async def _call(spec: MetricSpec, args: tuple[Any, ...]) -> float | None:
    assert spec.fn is not None
    got = spec.fn(*args)
    if inspect.isawaitable(got):
        got = await got
    return _number(got)


async def score_custom(conv: Conversation, registry: MetricRegistry, *, offline: bool) -> None:
    """Score ``conv`` (in place) with every metric of ``registry`` that has a function: a
    team's own metrics, and (``offline``) the offline twins of rubric judges. Turn level:
    every answered turn, and the mean over them in ``conv.scores``; conversation level:
    ``conv.scores``. Async metrics of one conversation run concurrently."""
    specs = [s for s in registry.custom() if s.fn is not None and (s.kind == "custom" or offline)]
    if not specs:
        return
    answered = [t for t in conv.turns if t.answer is not None]
    jobs: list[tuple[MetricSpec, Turn | None]] = [(s, t) for s in specs if s.level == "turn" for t in answered]
    jobs += [(s, None) for s in specs if s.level == "conversation"]

    async def one(spec: MetricSpec, turn: Turn | None) -> float | None | BaseException:
        try:
            return await _call(spec, (turn, conv) if turn is not None else (conv,))
        except Exception as e:  # noqa: BLE001 - the team's metric failed: its item fails, the run goes on
            return e

    results = await asyncio.gather(*(one(s, t) for s, t in jobs))
    for (spec, turn), got in zip(jobs, results, strict=True):
        where = f"turn {turn.index + 1}" if turn is not None else "conversation"
        if isinstance(got, BaseException):
            how = str(got) if isinstance(got, _BadValue) else f"raised {type(got).__name__}: {got}"
            _fail(conv, f"{where}: metric {spec.name!r} {_clip(how)}")
            got = None
        (turn.scores if turn is not None else conv.scores)[spec.name] = got
    for spec in specs:
        if spec.level == "turn":
            conv.scores[spec.name] = mean([t.scores.get(spec.name) for t in answered])


async def check_assertions(
    conv: Conversation, checks: Mapping[int, Sequence[Assertion]], rubric: RubricCheck | None
) -> None:
    """Run the ``assert:`` checks of each answered turn (``checks``: by turn index); write
    ``assertion_pass_rate`` and its verdict on the turn, the mean on ``conv``, and one
    failure per violated check. ``rubric``: the judge of ``rubric`` checks (None: skipped)."""
    if not checks:
        return
    scored: list[Turn] = []
    for turn in conv.turns:
        mine = checks.get(turn.index)
        if not mine or turn.answer is None:
            continue
        judged = [a for a in mine if a.judged]
        by_check: dict[int, Verdict] = {}
        if rubric is not None and judged:
            verdicts = await asyncio.gather(*(rubric(str(getattr(a, "value", "")), turn) for a in judged))
            by_check = dict(zip((id(a) for a in judged), verdicts, strict=True))
        failed: list[str] = []
        passed = skipped = 0
        for a in mine:
            if a.judged:
                v = by_check.get(id(a))
                if v is None:
                    skipped += 1
                    continue
                why = None if v.value == 1.0 else (v.reason or "the judge said no")
            else:
                why = a.check(turn, conv)
            if why is None:
                passed += 1
                continue
            failed.append(f"{a.label} ({_clip(why, 200)})")
            _fail(conv, f"turn {turn.index + 1}: assertion {a.label} failed: {_clip(why)}")
        counted = passed + len(failed)
        value = passed / counted if counted else None
        reason = f"{passed}/{counted} checks passed" + (f"; failed: {'; '.join(failed)}" if failed else "")
        if skipped:
            reason += f"; {skipped} rubric check(s) skipped (no model)"
        turn.scores[PASS_RATE] = value
        turn.verdicts[PASS_RATE] = Verdict(value=value, reason=reason)
        scored.append(turn)
    if scored:
        conv.scores[PASS_RATE] = mean([t.scores.get(PASS_RATE) for t in scored])
