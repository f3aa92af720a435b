"""The offline forgetfulness probe: forgetfulness, forgotten_turn_share and context_retention.

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

A probed turn is *eligible* when its stand-alone answer is correct: only then can
the conversation be said to have lost something the target knows. A conversation
with no eligible turn (a single turn, no probed turn, or no probed turn answered
correctly stand-alone) is **not scored** (None: n/a, left out of the means), so a
run in which nothing is answered correctly is never "less forgetful".

Conversation scores (all None for a conversation with no eligible turn):

- ``forgetfulness`` (lower is better): the paper's verdict, 1.0 when the
  conversation has a forgetful turn, else 0.0; its mean over conversations is
  the share of forgetful conversations.
- ``forgotten_turn_share`` (lower is better): the share of the eligible turns
  that are forgetful. Unlike the binary verdict it moves when a bot that already
  forgets one follow-up forgets more of them (the verdict saturates at 1.0).
- ``context_retention`` (higher is better): share of the eligible turns also
  answered correctly in the conversation (offline: 1 - forgotten_turn_share;
  an LLM judge overwrites it with its own verdict, not forgotten_turn_share).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.records import Conversation, Turn, Verdict
from .grounding import CORRECTNESS_THRESHOLD, COVERAGE_RULE, Rule, correctness
from .lexical import tokens

__all__ = [
    "FORGETFUL_FLAG", "PROBE_METRICS", "ProbeResult", "apply_forgetfulness_probe", "has_probe", "probe_forgetfulness",
]

FORGETFUL_FLAG = "forgetful"
#: the conversation scores the probe writes
PROBE_METRICS: tuple[str, ...] = ("forgetfulness", "forgotten_turn_share", "context_retention")


@dataclass(frozen=True)
class ProbeResult:
    """What the probe found in one conversation (turn indexes are ``Turn.index``)."""

    forgetfulness: float | None
    context_retention: float | None
    forgotten_turn_share: float | None = None
    probed: list[int] = field(default_factory=list)
    standalone_correct: list[int] = field(default_factory=list)
    forgetful: list[int] = field(default_factory=list)

    @property
    def reason(self) -> str:
        if not self.probed:
            return "not scored: no context-dependent turn with a stand-alone answer and a ground truth"
        if self.forgetfulness is None:
            return (f"not scored: none of the {len(self.probed)} probed turns was answered correctly stand-alone "
                    "(nothing the target knows could be forgotten)")
        if self.forgetful:
            which = ", ".join(str(i + 1) for i in self.forgetful)  # 1-based for people
            noun = "turn" if len(self.forgetful) == 1 else "turns"
            return (f"{noun} {which} answered correctly stand-alone but wrongly in the conversation "
                    f"({len(self.forgetful)} of {len(self.standalone_correct)} eligible turns forgotten)")
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
    eligible = len(standalone_ok)
    return ProbeResult(
        forgetfulness=(1.0 if forgetful else 0.0) if eligible else None,
        context_retention=len(retained) / eligible if eligible else None,
        forgotten_turn_share=len(forgetful) / eligible if eligible else None,
        probed=[t.index for t, _, _ in classified],
        standalone_correct=standalone_ok,
        forgetful=forgetful,
    )


def probe_forgetfulness(conv: Conversation, rule: Rule = COVERAGE_RULE) -> ProbeResult:
    """Compute the probe for one conversation without changing it (``rule``: correctness's)."""
    return _result(_classify(conv, rule))


def apply_forgetfulness_probe(conv: Conversation, rule: Rule = COVERAGE_RULE) -> ProbeResult:
    """Run the probe and record it on the conversation (idempotent):

    - ``conv.scores["forgetfulness"]``, ``["forgotten_turn_share"]`` and ``["context_retention"]``;
    - the flag ``"forgetful"`` on each forgetful turn (and on no other turn);
    - ``conv.eligible_turns``: the probed turns answered correctly stand-alone (None when
      no turn was probed), which a baseline keeps so that the gate can tell a bot that
      forgets less from one that answers fewer turns stand-alone (:mod:`pytest_ragdive.gate.comparable`);
    - ``conv.verdicts["forgetfulness"]`` and ``["forgotten_turn_share"]``, Verdicts whose
      reason names the forgetful turn indexes (set for multi-turn conversations only).
    """
    classified = _classify(conv, rule)
    res = _result(classified)
    forgetful = {id(t) for t, alone, in_conv in classified if alone and not in_conv}
    for t in conv.turns:
        t.flags = [f for f in t.flags if f != FORGETFUL_FLAG]
        if id(t) in forgetful:
            t.flags.append(FORGETFUL_FLAG)
    conv.eligible_turns = list(res.standalone_correct) if res.probed else None
    conv.scores["forgetfulness"] = res.forgetfulness
    conv.scores["forgotten_turn_share"] = res.forgotten_turn_share
    conv.scores["context_retention"] = res.context_retention
    if len(conv.turns) >= 2:
        conv.verdicts["forgetfulness"] = Verdict(value=res.forgetfulness, reason=res.reason)
        conv.verdicts["forgotten_turn_share"] = Verdict(value=res.forgotten_turn_share, reason=res.reason)
    return res


def has_probe(conv: Conversation) -> bool:
    """Whether the stand-alone probe ran on some context-dependent turn of ``conv``."""
    return any(t.standalone_answer is not None for t in conv.turns[1:])
