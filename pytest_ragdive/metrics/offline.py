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
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

from ..core.records import Conversation, Evidence, Turn
from ..core.stats import mean
from .evidence import reference_coverage, support_units, weighted_support
from .lexical import (
    answer_f1,
    context_recall,
    correctness,
    exact_match,
    faithfulness,
    grounded_units,
    is_abstention,
    split_sentences,
    tokens,
)
from .multiturn import apply_forgetfulness_probe
from .retrieval import context_precision, distinct_source_ids, mrr, ndcg_at_k, recall_at_k
from .safety import citation_ok, safety_pass, violations

__all__ = [
    "CONVERSATION_METRICS",
    "TURN_METRICS",
    "conversation_support",
    "conversation_supports",
    "safety_failures",
    "score_conversation",
    "score_turn",
    "score_turn_evidence",
    "user_statements",
]

#: the turn-level metrics ``score_turn`` computes, in report order
TURN_METRICS: tuple[str, ...] = (
    "answer_f1",
    "exact_match",
    "correctness",
    "recall_at_k",
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
CONVERSATION_METRICS: tuple[str, ...] = ("forgetfulness", "context_retention")


def user_statements(message: str) -> list[str]:
    """The sentences of a user message that state something (questions, ending in "?", do not:
    an answer that echoes the question as a fact is not grounded by it)."""
    return [s for s in split_sentences(message) if not s.rstrip().endswith("?")]


def conversation_supports(turns: Sequence[Turn]) -> Iterator[list[str]]:
    """For each turn in order, what the conversation established before its answer: the
    user's statements up to and including that turn, and the grounded units of earlier
    answers (built once for the whole conversation)."""
    established: list[str] = []
    for t in turns:
        own = user_statements(t.rag_input)
        yield established + own
        established += own
        established += grounded_units(t.answer, t.contexts)


def conversation_support(turns: Sequence[Turn], index: int) -> list[str]:
    """What the conversation established before the answer of ``turns[index]``
    (:func:`conversation_supports`)."""
    return next(itertools.islice(conversation_supports(turns), index, None))


def score_turn(
    turn: Turn, *, k: int | None = None, conversation: Sequence[str] = ()
) -> dict[str, float | None]:
    """Every offline turn-level metric of one turn (see ``TURN_METRICS``; None = not applicable).

    ``conversation``: the support the conversation so far gives (``conversation_support``);
    ``faithfulness`` uses it, ``faithfulness_strict`` does not. ``correctness`` is the
    coverage of the ground truth times ``faithfulness`` (coverage alone when the turn has
    no context and no conversation support to judge support by).

    All values are None when the turn was not run (``answer`` is None). The answer metrics
    (answer_f1, exact_match, correctness, context_recall) are None without a ground truth;
    the retrieval metrics are None without ``relevant_doc_ids`` (context_precision then
    falls back to lexical relevance); ``k`` cuts recall_at_k and ndcg_at_k (None: all
    retrieved documents). Nothing on the turn is changed.
    """
    return score_turn_evidence(turn, k=k, conversation=conversation)[0]


def score_turn_evidence(
    turn: Turn, *, k: int | None = None, conversation: Sequence[str] = ()
) -> tuple[dict[str, float | None], Evidence | None]:
    """:func:`score_turn` and the turn's evidence (None when the turn was not run): each
    asserted unit's support, whose ``weighted_support`` is the ``faithfulness`` score,
    and the reference's coverage (:mod:`.evidence`)."""
    if turn.answer is None:
        return dict.fromkeys(TURN_METRICS), None
    answer = turn.answer
    gt = turn.ground_truth
    has_gt = bool(tokens(gt))
    ids = distinct_source_ids(turn.contexts)
    rel = turn.relevant_doc_ids
    units = support_units(answer, turn.contexts, conversation)
    faithful = weighted_support(units)
    support = faithful if (turn.contexts or conversation) else None
    scores = {
        "answer_f1": answer_f1(answer, gt) if has_gt else None,
        "exact_match": exact_match(answer, gt) if has_gt else None,
        "correctness": correctness(answer, gt, support) if has_gt else None,
        "recall_at_k": recall_at_k(ids, rel, k),
        "mrr": mrr(ids, rel),
        "ndcg_at_k": ndcg_at_k(ids, rel, k),
        "faithfulness": faithful,
        "faithfulness_strict": faithfulness(answer, turn.contexts),
        "context_recall": context_recall(gt, turn.contexts) if has_gt else None,
        "context_precision": context_precision(turn.contexts, rel, gt),
        "safety_pass_rate": safety_pass(answer, turn.negative_assertions),
        "citation_rate": citation_ok(turn),
        "answer_attempt_rate": _attempted(turn),
    }
    evidence = Evidence(support=units, reference=reference_coverage(answer, gt) if has_gt else [])
    object.__setattr__(evidence, "__pydantic_fields_set__", set())  # held until the end of the run: see evidence._record
    return scores, evidence


def _attempted(turn: Turn) -> float:
    """1.0 for an answer attempt: the sharded scorer's response class where it classified the
    reply, else any reply that does not abstain."""
    if turn.sharded is not None and turn.sharded.response_class is not None:
        return float(turn.sharded.response_class == "answer_attempt")
    return 0.0 if is_abstention(turn.answer) else 1.0


def safety_failures(conv: Conversation) -> list[str]:
    """One message per (turn, forbidden text) the conversation's answers state, e.g.
    "turn 2: answer states forbidden text 'guaranteed refund'"."""
    out: list[str] = []
    for turn in conv.turns:
        if turn.answer is None:
            continue
        for text in violations(turn.answer, turn.negative_assertions):
            out.append(f"turn {turn.index + 1}: answer states forbidden text {text!r}")
    return out


def score_conversation(conv: Conversation, *, k: int | None = None) -> None:
    """Score one conversation in place (idempotent).

    - every turn: ``turn.scores.update(score_turn(turn, k=k, conversation=...))`` with the
      turn's ``conversation_support``, and ``turn.evidence`` (``score_turn_evidence``);
    - ``conv.failures``: one message per safety violation (not repeated on re-scoring);
    - ``conv.scores``: for each turn-level metric, its mean over the turns (None values left
      out; None when every turn is None), plus forgetfulness and context_retention from the
      forgetfulness probe (which also flags forgetful turns and sets
      ``conv.verdicts["forgetfulness"]``).
    """
    for turn, support in zip(conv.turns, conversation_supports(conv.turns), strict=True):
        scores, turn.evidence = score_turn_evidence(turn, k=k, conversation=support)
        turn.scores.update(scores)
    for msg in safety_failures(conv):
        if msg not in conv.failures:
            conv.failures.append(msg)
    for name in TURN_METRICS:
        conv.scores[name] = mean([t.scores.get(name) for t in conv.turns])
    apply_forgetfulness_probe(conv)
