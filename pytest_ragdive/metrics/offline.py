"""Deterministic (offline) scoring of turns and conversations.

Offline scoring runs first; LLM judges (another module) may then overwrite
the metric names they own. Scoring is idempotent: scoring a conversation twice
leaves it as scoring it once.

Conversation-aware grounding: ``faithfulness`` (the default, gated) lets an
answer restate what the conversation so far established: the statements (not
the questions) of the user's messages up to this turn, and the grounded units
of earlier answers (``lexical.grounded_units``: supported by their own turn's
contexts). ``faithfulness_strict`` is the same score against this turn's
contexts only. The default is the conversation-aware one because a multi-turn
answer that repeats a fact from two turns ago is not a hallucination, and a
strict figure would make a bot that recaps look worse than one that does not;
teams that want every answer re-grounded in its own retrieval gate on
``faithfulness_strict``.

How answers are grounded (:class:`Grounding`): the support and coverage rules of
:mod:`.grounding` (lexical and semantic evidence by default, lexical alone with
``faithfulness_backend = "lexical"``), and optionally a model tier
(:class:`~.nli.NLITier`, ``faithfulness_backend = "nli"``) that rescores the
faithfulness of the turns whose offline figure falls in its uncertain band, and
records that in the turn's ``faithfulness`` verdict.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.records import Context, Conversation, Evidence, Turn, Verdict
from ..core.stats import mean
from .evidence import turn_evidence
from .grounding import (
    COVERAGE_RULE,
    LEXICAL_COVERAGE,
    LEXICAL_SUPPORT,
    SUPPORT_RULE,
    Rule,
    correctness,
    faithfulness_of,
    grounded_units,
    unit_supports,
)
from .lexical import answer_f1, context_recall, exact_match, is_abstention, is_no_answer, split_sentences, tokens
from .multiturn import PROBE_METRICS, apply_forgetfulness_probe
from .pii import PiiCheck
from .registry import METRICS, OFFLINE_TWINS
from .retrieval import RECALL_K, context_precision, distinct_source_ids, mrr, ndcg_at_k, recall_at_k
from .safety import DEFAULT_PII, citation_ok, pii_hits, safety_pass, violations

if TYPE_CHECKING:
    from .nli import NLITier

__all__ = [
    "CONVERSATION_METRICS",
    "DEFAULT_GROUNDING",
    "LEXICAL_GROUNDING",
    "Grounding",
    "TURN_METRICS",
    "conversation_support",
    "conversation_supports",
    "grounded_faithfulness",
    "keep_offline_twins",
    "safety_failures",
    "score_conversation",
    "score_turn",
    "score_turn_evidence",
    "score_turn_evidence",
    "user_statements",
]

#: the turn-level metrics ``score_turn`` computes, in report order
TURN_METRICS: tuple[str, ...] = (
    "answer_f1",
    "exact_match",
    "correctness",
    "recall_at_k",
    "recall_at_3",
    "recall_at_10",
    "mrr",
    "ndcg_at_k",
    "faithfulness",
    "faithfulness_strict",
    "context_recall",
    "context_precision",
    "safety_pass_rate",
    "citation_rate",
    "answer_attempt_rate",
)
#: the conversation-level metrics ``score_conversation`` adds (from multiturn.py)
CONVERSATION_METRICS: tuple[str, ...] = PROBE_METRICS


@dataclass(frozen=True)
class Grounding:
    """How offline scoring grounds answers (see the module docstring)."""

    support: Rule = SUPPORT_RULE  # faithfulness and grounded units
    coverage: Rule = COVERAGE_RULE  # correctness
    tier: NLITier | None = None  # rescores the faithfulness of uncertain turns


DEFAULT_GROUNDING = Grounding()
LEXICAL_GROUNDING = Grounding(LEXICAL_SUPPORT, LEXICAL_COVERAGE)


def user_statements(message: str) -> list[str]:
    """The sentences of a user message that state something (questions, ending in "?", do not:
    an answer that echoes the question as a fact is not grounded by it)."""
    return [s for s in split_sentences(message) if not s.rstrip().endswith("?")]


def conversation_supports(turns: Sequence[Turn], rule: Rule = SUPPORT_RULE) -> Iterator[list[str]]:
    """For each turn in order, what the conversation established before its answer: the
    user's statements up to and including that turn, and the grounded units of earlier
    answers (``grounding.grounded_units``: supported by their own turn's contexts), built
    once for the whole conversation. The plugin and the calibration benchmark both ground
    conversations with this function."""
    established: list[str] = []
    for t in turns:
        own = user_statements(t.rag_input)
        yield established + own
        established += own
        established += grounded_units(t.answer, t.contexts, rule)


def conversation_support(turns: Sequence[Turn], index: int, rule: Rule = SUPPORT_RULE) -> list[str]:
    """What the conversation established before the answer of ``turns[index]``
    (:func:`conversation_supports`)."""
    return next(itertools.islice(conversation_supports(turns, rule), index, None))


def grounded_faithfulness(
    answer: str | None,
    contexts: Sequence[Context],
    conversation: Sequence[str],
    grounding: Grounding = DEFAULT_GROUNDING,
    verdicts: dict[str, Verdict] | None = None,
    metric: str = "faithfulness",
) -> float | None:
    """``grounding.faithfulness`` by ``grounding.support``; with a tier, an uncertain figure
    is rescored by the model (premises: the contexts, and the conversation's texts as one
    more) and, given ``verdicts``, a verdict under ``metric`` says so."""
    if answer is None or is_no_answer(answer):
        return None
    supports = unit_supports(answer, contexts, conversation, grounding.support)
    offline = faithfulness_of(supports)
    tier = grounding.tier
    if tier is None or not supports or not tier.uncertain(offline):
        return offline
    premises = [c.text for c in contexts] + ([" ".join(conversation)] if conversation else [])
    value = tier.rescore(supports, premises)
    if verdicts is not None:
        lo, hi = tier.band
        reason = f"offline {offline:.3f} in the uncertain band [{lo:g}, {hi:g}): rescored by the NLI checker"
        verdicts[metric] = Verdict(value=value, reason=reason, model=tier.name)
    return value


def score_turn(
    turn: Turn,
    *,
    k: int | None = RECALL_K,
    conversation: Sequence[str] = (),
    grounding: Grounding = DEFAULT_GROUNDING,
    verdicts: dict[str, Verdict] | None = None,
    pii: PiiCheck = DEFAULT_PII,
) -> dict[str, float | None]:
    """Every offline turn-level metric of one turn (see ``TURN_METRICS``; None = not applicable).

    ``conversation``: the support the conversation so far gives (``conversation_support``);
    ``faithfulness`` uses it, ``faithfulness_strict`` does not (:func:`grounded_faithfulness`,
    which writes the model tier's verdicts into ``verdicts`` when given). ``correctness`` is
    the coverage of the ground truth's facts (``grounding.correctness``), beside
    faithfulness, not multiplied by it. A reply with no substantive sentence (only
    courtesy) is no answer: not attempted, faithfulness None.

    All values are None when the turn was not run (``answer`` is None). The answer metrics
    (answer_f1, exact_match, correctness, context_recall) are None without a ground truth;
    the retrieval metrics are None without ``relevant_doc_ids`` (context_precision then
    falls back to lexical relevance); ``k`` cuts recall_at_k and ndcg_at_k (the config's
    ``recall_k``, seed 001's 5 by default; None: all retrieved documents); recall_at_3 and
    recall_at_10 are seed 001's other two cuts, reported beside it. Nothing on the turn is changed.
    """
    return score_turn_evidence(turn, k=k, conversation=conversation, grounding=grounding, verdicts=verdicts, pii=pii)[0]


def score_turn_evidence(
    turn: Turn,
    *,
    k: int | None = RECALL_K,
    conversation: Sequence[str] = (),
    grounding: Grounding = DEFAULT_GROUNDING,
    verdicts: dict[str, Verdict] | None = None,
    pii: PiiCheck = DEFAULT_PII,
) -> tuple[dict[str, float | None], Evidence | None]:
    """:func:`score_turn` and the turn's evidence (None when the turn was not run): each
    asserted unit's support by the same rule, whose ``weighted_support`` is the offline
    ``faithfulness`` (a model tier's rescore aside: its verdict says so), and the
    reference's coverage (:mod:`.evidence`)."""
    if turn.answer is None:
        return dict.fromkeys(TURN_METRICS), None
    answer = turn.answer
    gt = turn.ground_truth
    has_gt = bool(tokens(gt))
    ids = distinct_source_ids(turn.contexts)
    rel = turn.relevant_doc_ids
    g = grounding
    scores = {
        "answer_f1": answer_f1(answer, gt) if has_gt else None,
        "exact_match": exact_match(answer, gt) if has_gt else None,
        "correctness": correctness(answer, gt, g.coverage) if has_gt else None,
        "recall_at_k": recall_at_k(ids, rel, k),
        "recall_at_3": recall_at_k(ids, rel, 3),
        "recall_at_10": recall_at_k(ids, rel, 10),
        "mrr": mrr(ids, rel),
        "ndcg_at_k": ndcg_at_k(ids, rel, k),
        "faithfulness": grounded_faithfulness(answer, turn.contexts, conversation, g, verdicts),
        "faithfulness_strict": grounded_faithfulness(answer, turn.contexts, (), g, verdicts, "faithfulness_strict"),
        "context_recall": context_recall(gt, turn.contexts) if has_gt else None,
        "context_precision": context_precision(turn.contexts, rel, gt),
        "safety_pass_rate": safety_pass(answer, turn.negative_assertions, pii),
        "citation_rate": citation_ok(turn),
        "answer_attempt_rate": _attempted(turn),
    }
    return scores, turn_evidence(answer, turn.contexts, conversation, gt if has_gt else "", g.support, g.coverage)


def _attempted(turn: Turn) -> float:
    """1.0 for an answer attempt: the sharded scorer's response class where it classified the
    reply, else any reply that does not abstain."""
    if turn.sharded is not None and turn.sharded.response_class is not None:
        return float(turn.sharded.response_class == "answer_attempt")
    return 0.0 if is_abstention(turn.answer) else 1.0


def safety_failures(conv: Conversation, pii: PiiCheck = DEFAULT_PII) -> list[str]:
    """One message per (turn, forbidden text) the conversation's answers state, e.g.
    "turn 2: answer states forbidden text 'guaranteed refund'", and per piece of personal
    data, e.g. "turn 1: answer contains personal data: email j***@e***.com at characters
    10-30" (masked: the value itself is never written)."""
    out: list[str] = []
    for turn in conv.turns:
        if turn.answer is None:
            continue
        for text in violations(turn.answer, turn.negative_assertions):
            out.append(f"turn {turn.index + 1}: answer states forbidden text {text!r}")
        for hit in pii_hits(turn.answer, pii):
            out.append(f"turn {turn.index + 1}: answer contains personal data: {hit.describe()}")
    return out


def score_conversation(
    conv: Conversation, *, k: int | None = RECALL_K, grounding: Grounding = DEFAULT_GROUNDING, pii: PiiCheck = DEFAULT_PII
) -> None:
    """Score one conversation in place (idempotent).

    - every turn: ``turn.scores.update(score_turn(turn, k=k, conversation=...))`` with the
      turn's ``conversation_support`` (the model tier's verdicts, if any, in ``turn.verdicts``), and
      ``turn.evidence`` (``score_turn_evidence``);
    - ``conv.failures``: one message per safety violation (not repeated on re-scoring);
      ``pii``: the personal-data detectors and the suite's allow-list;
    - ``conv.scores``: for each turn-level metric, its mean over the turns (None values left
      out; None when every turn is None), plus forgetfulness, forgotten_turn_share and
      context_retention from the forgetfulness probe (which also flags forgetful turns and sets
      ``conv.verdicts["forgetfulness"]``).
    """
    supports = conversation_supports(conv.turns, grounding.support)
    for turn, support in zip(conv.turns, supports, strict=True):
        scores, turn.evidence = score_turn_evidence(
            turn, k=k, conversation=support, grounding=grounding, verdicts=turn.verdicts, pii=pii
        )
        turn.scores.update(scores)
    for msg in safety_failures(conv, pii):
        if msg not in conv.failures:
            conv.failures.append(msg)
    for name in TURN_METRICS:
        conv.scores[name] = mean([t.scores.get(name) for t in conv.turns])
    apply_forgetfulness_probe(conv, grounding.coverage)


def keep_offline_twins(conv: Conversation) -> None:
    """Copy the offline values of the metrics an LLM judge will overwrite to their twins
    (``faithfulness`` -> ``faithfulness_offline``, :data:`~pytest_ragdive.metrics.registry.OFFLINE_TWINS`):
    call it after :func:`score_conversation` and before the judge writes. Idempotent."""
    for metric, twin in OFFLINE_TWINS.items():
        if METRICS[metric].level == "turn":
            for turn in conv.turns:
                if metric in turn.scores:
                    turn.scores[twin] = turn.scores[metric]
        if metric in conv.scores:
            conv.scores[twin] = conv.scores[metric]
