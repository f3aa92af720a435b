"""The offline forgetfulness probe: forgetfulness and context_retention.

For every context-dependent turn (position > 0 in a conversation of two or more
turns) the runner asks the target the turn's stand-alone question in a fresh
history and stores the reply in ``turn.standalone_answer``. A turn is *probed*
when it has that stand-alone answer, an in-conversation answer and a ground
truth. An answer is "correct" when its graded ``grounding.correctness`` reaches
``CORRECTNESS_THRESHOLD`` (0.6 of the ground truth covered):

- stand-alone correct: ``correctness(standalone_answer, ground_truth) >= 0.6``;
- in-conversation correct: ``correctness(answer, ground_truth) >= 0.6``;
- forgetful turn: stand-alone correct and in-conversation wrong (the target
  knows the answer but lost the conversation's context).

Conversation scores:

- ``forgetfulness`` (lower is better): 1.0 when the conversation has a
  forgetful turn, else 0.0; its mean over conversations is the share of
  forgetful conversations. None for a single-turn conversation or when no
  turn was probed.
- ``context_retention`` (higher is better): share of the stand-alone-correct
  turns also answered correctly in the conversation. None for a single-turn
  conversation, when no turn was probed, or when no probed turn was
  stand-alone correct.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.records import Conversation, Turn, Verdict
from .grounding import CORRECTNESS_THRESHOLD, COVERAGE_RULE, Rule, correctness
from .lexical import tokens

__all__ = ["FORGETFUL_FLAG", "ProbeResult", "apply_forgetfulness_probe", "probe_forgetfulness"]

FORGETFUL_FLAG = "forgetful"


@dataclass(frozen=True)
class ProbeResult:
    """What the probe found in one conversation (turn indexes are ``Turn.index``)."""

    forgetfulness: float | None
    context_retention: float | None
    probed: list[int] = field(default_factory=list)
    standalone_correct: list[int] = field(default_factory=list)
    forgetful: list[int] = field(default_factory=list)

    @property
    def reason(self) -> str:
        if self.forgetfulness is None:
            return "no context-dependent turn with a stand-alone answer and a ground truth"
        if self.forgetful:
            which = ", ".join(str(i + 1) for i in self.forgetful)  # 1-based for people
            noun = "turn" if len(self.forgetful) == 1 else "turns"
            return f"{noun} {which} answered correctly stand-alone but wrongly in the conversation"
        return (
            f"no forgetful turn: {len(self.standalone_correct)} of {len(self.probed)} probed turns "
            "correct stand-alone, all of them also correct in the conversation"
        )


def _correct(value: float | None) -> bool:
    return value is not None and value >= CORRECTNESS_THRESHOLD - 1e-9


def _classify(conv: Conversation, rule: Rule = COVERAGE_RULE) -> list[tuple[Turn, bool, bool]]:
    """(turn, stand-alone correct, in-conversation correct) for every probed turn."""
    if len(conv.turns) < 2:
        return []
    out: list[tuple[Turn, bool, bool]] = []
    for t in conv.turns[1:]:
        if t.standalone_answer is None or t.answer is None or not tokens(t.ground_truth):
            continue
        alone = _correct(correctness(t.standalone_answer, t.ground_truth, rule))
        in_conv = _correct(correctness(t.answer, t.ground_truth, rule))
        out.append((t, alone, in_conv))
    return out


def _result(classified: list[tuple[Turn, bool, bool]]) -> ProbeResult:
    if not classified:
        return ProbeResult(None, None)
    standalone_ok = [t.index for t, alone, _ in classified if alone]
    retained = [t.index for t, alone, in_conv in classified if alone and in_conv]
    forgetful = [t.index for t, alone, in_conv in classified if alone and not in_conv]
    return ProbeResult(
        forgetfulness=1.0 if forgetful else 0.0,
        context_retention=len(retained) / len(standalone_ok) if standalone_ok else None,
        probed=[t.index for t, _, _ in classified],
        standalone_correct=standalone_ok,
        forgetful=forgetful,
    )


def probe_forgetfulness(conv: Conversation, rule: Rule = COVERAGE_RULE) -> ProbeResult:
    """Compute the probe for one conversation without changing it (``rule``: correctness's)."""
    return _result(_classify(conv, rule))


def apply_forgetfulness_probe(conv: Conversation, rule: Rule = COVERAGE_RULE) -> ProbeResult:
    """Run the probe and record it on the conversation (idempotent):

    - ``conv.scores["forgetfulness"]`` and ``conv.scores["context_retention"]``;
    - the flag ``"forgetful"`` on each forgetful turn (and on no other turn);
    - ``conv.verdicts["forgetfulness"]``, a Verdict whose reason names the forgetful turn
      indexes (set for multi-turn conversations only).
    """
    classified = _classify(conv, rule)
    res = _result(classified)
    forgetful = {id(t) for t, alone, in_conv in classified if alone and not in_conv}
    for t in conv.turns:
        t.flags = [f for f in t.flags if f != FORGETFUL_FLAG]
        if id(t) in forgetful:
            t.flags.append(FORGETFUL_FLAG)
    conv.scores["forgetfulness"] = res.forgetfulness
    conv.scores["context_retention"] = res.context_retention
    if len(conv.turns) >= 2:
        conv.verdicts["forgetfulness"] = Verdict(value=res.forgetfulness, reason=res.reason)
    return res
