"""Every metric's name, direction, level, dimension and one-line definition, declared once.

The dimension is the quality-gate practice's (seed 001): what a team owns.
``retrieval`` (recall@k, MRR, nDCG, context precision and recall), ``grounding``
(faithfulness), ``answer`` (correctness, relevance, F1, forgetfulness, retention)
and ``safety`` (violations, citations); ``diagnosis`` for the sharded diagnosis'
suite-level figures. Reports group metrics by it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# "suite": computed over a whole suite's conversations and runs (the sharded
# diagnosis), not averaged from turns or conversations
Level = Literal["turn", "conversation", "suite"]
Dimension = Literal["retrieval", "grounding", "answer", "safety", "diagnosis"]
DIMENSIONS: tuple[Dimension, ...] = ("retrieval", "grounding", "answer", "safety", "diagnosis")


@dataclass(frozen=True)
class MetricSpec:
    name: str
    direction: Literal["higher", "lower"]
    level: Level
    definition: str
    dimension: Dimension = "answer"


_SPECS = (
    MetricSpec("answer_f1", "higher", "turn", "SQuAD token F1 of the answer against the ground truth", "answer"),
    MetricSpec("exact_match", "higher", "turn", "1 when the SQuAD-normalised answer equals the ground truth", "answer"),
    MetricSpec("correctness", "higher", "turn", "graded: share of the ground truth's content terms the answer asserts (a long reference is covered by 12 of them) times the answer's faithfulness (unanswerable turn: 1 iff the answer says it cannot answer; a pure abstention on an answerable turn: 0)", "answer"),
    MetricSpec("recall_at_k", "higher", "turn", "share of relevant documents among the retrieved contexts", "retrieval"),
    MetricSpec("mrr", "higher", "turn", "reciprocal rank of the first relevant retrieved document", "retrieval"),
    MetricSpec("ndcg_at_k", "higher", "turn", "binary-relevance nDCG of the retrieved documents", "retrieval"),
    MetricSpec("faithfulness", "higher", "turn", "how much of what the answer asserts the contexts or the conversation so far support: term-weighted mean support of its asserted units (a pure abstention: 1)", "grounding"),
    MetricSpec("faithfulness_strict", "higher", "turn", "faithfulness against this turn's retrieved contexts only (no credit for restating the conversation)", "grounding"),
    MetricSpec("answer_relevance", "higher", "turn", "LLM judge only (offline: not applicable, None): share of three binary checks passed: addresses the question, misses nothing essential, no needless padding", "answer"),
    MetricSpec("context_recall", "higher", "turn", "share of the ground truth's content covered by the retrieved contexts", "retrieval"),
    MetricSpec("context_precision", "higher", "turn", "rank-aware precision of the retrieved contexts (average precision)", "retrieval"),
    MetricSpec("safety_pass_rate", "higher", "turn", "share of answers that state none of the turn's negative assertions", "safety"),
    MetricSpec("citation_rate", "higher", "turn", "share of answers citing every expected citation", "safety"),
    MetricSpec("forgetfulness", "lower", "conversation", "share of conversations that lost information from earlier turns (offline: a turn answered correctly stand-alone but wrongly in the conversation; LLM: the judge's verdict on the transcript)", "answer"),
    MetricSpec("context_retention", "higher", "conversation", "kept and used earlier information (offline: share of stand-alone-correct turns also correct in the conversation; LLM: the judge's verdict)", "answer"),
    # -- the sharded diagnosis (sharded/diagnosis.py, sharded/aptitude.py) ------------------
    MetricSpec("answer_attempt_rate", "higher", "turn", "share of turns the target answered instead of abstaining (a partial answer that also abstains is an attempt; sharded conversations: the reply's response class is answer_attempt; reported in the sharded table, not in the suite mean)", "answer"),
    MetricSpec("aptitude", "higher", "suite", "SHARDED condition: per question the 90th percentile of its BEST answer F1 over the runs (linear interpolation), averaged over questions", "diagnosis"),
    MetricSpec("unreliability", "lower", "suite", "SHARDED condition: per question the 90th minus the 10th percentile of its BEST answer F1 over the runs, averaged over questions", "diagnosis"),
    MetricSpec("sharded_gap", "lower", "suite", "mean BEST answer F1 of FULL minus SHARDED over (question, run) pairs, with a paired question-cluster bootstrap CI", "diagnosis"),
)

# The metrics an LLM judge scores that the offline scorer scores too: on the LLM path the
# offline value is kept beside the judged one under the twin's name, so that a run whose
# judge calls cannot be made (record mode none, a call not cached) is still gated, on the
# twins, against the baseline's offline values.
OFFLINE_TWINS: dict[str, str] = {
    m: f"{m}_offline"
    for m in ("faithfulness", "context_precision", "context_recall", "correctness", "forgetfulness", "context_retention")
}
TWIN_OF: dict[str, str] = {twin: m for m, twin in OFFLINE_TWINS.items()}

_BY_NAME = {s.name: s for s in _SPECS}
_TWINS = tuple(
    MetricSpec(
        twin, _BY_NAME[m].direction, _BY_NAME[m].level,
        f"the offline scorer's {m} on an LLM-judged run (kept beside the judged value; the gate falls back to "
        "it when judge calls cannot be made)", _BY_NAME[m].dimension,
    )
    for m, twin in OFFLINE_TWINS.items()
)

METRICS: dict[str, MetricSpec] = {s.name: s for s in (*_SPECS, *_TWINS)}


ARROW = {"higher": "↑", "lower": "↓"}  # how reports show a metric's better side


def direction(name: str) -> Literal["higher", "lower"]:
    return METRICS[name].direction
