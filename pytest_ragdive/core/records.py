"""The pydantic records that every step of the pipeline reads and writes.

A record survives a JSON round trip unchanged (``Model.model_validate_json(
m.model_dump_json()) == m``); that is what travels between xdist workers and
what ``results.json`` holds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# the attack record of adversarial turns (attacks/records.py: pydantic only)
from ..attacks.records import AttackTurn

# the sharded diagnosis' records live beside; re-exported here
from ..sharded.records import (
    ShardedInfo,
    ShardedTurn,
)

QuestionType = Literal[
    "Initial", "Follow-up", "Clarification", "Correction", "Comparative", "Single"
]
Direction = Literal["higher", "lower"]


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Document(Record):
    """One document of the knowledge base."""

    id: str
    title: str = ""
    text: str


class Message(Record):
    """One chat message, OpenAI style."""

    role: Literal["system", "user", "assistant"]
    content: str


class Context(Record):
    """One retrieved context (a chunk), ranked as the target returned it.

    ``doc_id`` names the source document; retrieval metrics compare it with a
    turn's ``relevant_doc_ids``. When the target does not chunk, leave it empty
    and ``id`` is used.
    """

    id: str
    text: str
    doc_id: str | None = None
    score: float | None = None

    @property
    def source_id(self) -> str:
        return self.doc_id or self.id


class TargetResponse(Record):
    """What the chatbot under test returns for one user message."""

    answer: str
    contexts: list[Context] = Field(default_factory=list)
    citations: list[str] = Field(default_factory=list)


class CallInfo(Record):
    """What the plugin tells a target about one call, when the target asks for it.

    A target whose signature has a parameter named ``call_info`` receives this record
    as that keyword (other targets are called with the messages only). ``seed`` is
    derived from suite, conversation id and run (stable across processes and
    machines), so a target that samples can vary from run to run and still repeat
    exactly when the same run is repeated; ``turn`` is the 0-based index of the new
    user message."""

    suite: str = ""
    conversation_id: str = ""
    run: int = 0
    turn: int = 0
    seed: int = 0


class Verdict(Record):
    """One judged (or rule-based) decision with the reason behind it."""

    value: float | None
    reason: str = ""
    model: str | None = None


# --------------------------------------------------------------------------
# typed run metadata (written by one stage, read by others)

OTHER_CHECK = "other"  # an invalid verdict naming no known validator check


class TurnVerdict(Record):
    """The outcome of validating one candidate turn."""

    valid: bool
    reason: str = ""
    failed_checks: list[str] = Field(default_factory=list)
    source: Literal["llm", "precheck", "parse", "validator_error"] = "llm"


class RejectedCandidate(Record):
    """A generated candidate turn the validator sent back, with the reason."""

    candidate: dict[str, Any] | None = None
    reason: str = ""
    failed_checks: list[str] = Field(default_factory=list)
    source: str = "llm"


class TurnGeneration(Record):
    """How the RAG-DIVE simulator produced one turn: its slot in the planned
    turns, the feedback rounds, the final verdict and the rejected candidates."""

    slot: int = 0
    regenerations: int = 0
    validation: TurnVerdict | None = None
    rejected: list[RejectedCandidate] = Field(default_factory=list)


class ValidationCounts(Record):
    """Validation counters of one conversation, one role, or a whole suite.

    ``candidates``: candidate turns produced (each regeneration is one more);
    ``invalid``: invalid verdicts (of which ``prechecked`` came from the
    deterministic pre-check, ``malformed`` were generator replies that did not
    parse); ``regenerations``: feedback rounds; ``accepted``: turns that ended
    valid (``first_try`` without feedback, ``recovered`` after it);
    ``dropped``/``flagged``: turns still invalid after ``max_regenerations``,
    dropped or kept with the ``invalid`` flag; ``validator_errors``: validator
    replies that did not parse (the turn failed closed: counted as invalid too);
    ``turns``: turns sent to the chatbot; ``unanswerable``: of those, turns
    whose ground truth is "not answerable from the document";
    ``by_check``: failed checks counted over all invalid verdicts.
    """

    candidates: int = 0
    invalid: int = 0
    prechecked: int = 0
    malformed: int = 0
    regenerations: int = 0
    accepted: int = 0
    first_try: int = 0
    recovered: int = 0
    dropped: int = 0
    flagged: int = 0
    validator_errors: int = 0
    turns: int = 0
    unanswerable: int = 0
    by_check: dict[str, int] = Field(default_factory=dict)

    def _summed(self, other: ValidationCounts) -> dict[str, Any]:
        data: dict[str, Any] = {}
        for name in ValidationCounts.model_fields:
            if name == "by_check":
                continue
            data[name] = getattr(self, name) + getattr(other, name)
        checks = dict(self.by_check)
        for k, v in other.by_check.items():
            checks[k] = checks.get(k, 0) + v
        data["by_check"] = dict(sorted(checks.items()))
        return data

    def merge(self, other: ValidationCounts) -> ValidationCounts:
        """A new record holding the sums of both."""
        return ValidationCounts(**self._summed(other))

    def invalid_rate(self) -> float | None:
        """Share of candidates that failed validation (the paper's 25.68 of 100)."""
        return None if not self.candidates else self.invalid / self.candidates

    def record(self, verdict: TurnVerdict) -> None:
        """Count one candidate's verdict."""
        self.candidates += 1
        if verdict.source == "validator_error":
            self.validator_errors += 1
        if verdict.valid:
            return
        self.invalid += 1
        if verdict.source == "precheck":
            self.prechecked += 1
        if verdict.source == "parse":
            self.malformed += 1
        for c in verdict.failed_checks or [OTHER_CHECK]:
            self.by_check[c] = self.by_check.get(c, 0) + 1


class ValidationStats(ValidationCounts):
    """:class:`ValidationCounts` in total and per role (``by_role``)."""

    by_role: dict[str, ValidationCounts] = Field(default_factory=dict)

    def merge(self, other: ValidationCounts) -> ValidationStats:
        data = self._summed(other)
        roles = {k: v.model_copy(deep=True) for k, v in self.by_role.items()}
        if isinstance(other, ValidationStats):
            for role, counts in other.by_role.items():
                roles[role] = roles[role].merge(counts) if role in roles else counts.model_copy(deep=True)
        data["by_role"] = dict(sorted(roles.items()))
        return ValidationStats(**data)

    @classmethod
    def for_role(cls, role: str, counts: ValidationCounts) -> ValidationStats:
        """Stats of one conversation: the totals are the one role's counts."""
        return cls(**counts.model_dump(), by_role={role: counts.model_copy(deep=True)})

    @classmethod
    def merge_all(cls, items: Iterable[ValidationCounts]) -> ValidationStats:
        out = cls()
        for item in items:
            out = out.merge(item)
        return out

    @classmethod
    def from_conversations(cls, convs: Iterable[Conversation]) -> ValidationStats:
        """Merge ``conv.validation`` of every conversation that has it."""
        return cls.merge_all(c.validation for c in convs if c.validation is not None)


class JudgeCalls(Record):
    """Judge calls of one conversation (or summed over many).

    ``turn``/``conversation``: calls made for turn-level / conversation-level
    metrics (one per prompt call; with the ragas backend one per LLM call ragas
    makes); ``by_model``: the same calls by model; ``rejudged``: items the
    cascade sent on to a stronger model; ``cached``: calls answered by the cache.
    """

    turn: int = 0
    conversation: int = 0
    by_model: dict[str, int] = Field(default_factory=dict)
    rejudged: int = 0
    cached: int = 0
    not_judged: int = 0  # items left unjudged: record mode none and the call not cached ("not judged (no key)")

    def add(self, level: str, model: str | None, cached: bool = False) -> None:
        if level == "turn":
            self.turn += 1
        else:
            self.conversation += 1
        key = model or "?"
        self.by_model[key] = self.by_model.get(key, 0) + 1
        if cached:
            self.cached += 1

    def merge(self, other: JudgeCalls) -> JudgeCalls:
        by_model = dict(self.by_model)
        for m, n in other.by_model.items():
            by_model[m] = by_model.get(m, 0) + n
        return JudgeCalls(
            turn=self.turn + other.turn,
            conversation=self.conversation + other.conversation,
            by_model=dict(sorted(by_model.items())),
            rejudged=self.rejudged + other.rejudged,
            cached=self.cached + other.cached,
            not_judged=self.not_judged + other.not_judged,
        )

    @classmethod
    def total(cls, conversations: Iterable[Conversation]) -> JudgeCalls:
        out = cls()
        for c in conversations:
            if c.judge_calls is not None:
                out = out.merge(c.judge_calls)
        return out


class DocWindow(Record):
    """The part of a long document the simulator saw (character offsets)."""

    start: int
    end: int
    of: int


class GeneratedSpec(Record):
    """One planned generated conversation (RAG-DIVE CG): which document, which role, how many turns."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    suite: str
    document_id: str
    role: str
    turns: int = Field(ge=1)
    seed: int


# --------------------------------------------------------------------------
# evidence: why a turn scored as it did (what the reports quote and highlight)

SupportVerdict = Literal["supported", "partial", "unsupported"]


class Support(Record):
    """One asserted unit of an answer (a clause, citation markers stripped) and what supports it.

    Whatever rule decides support fills it (the lexical rule of
    :func:`pytest_ragdive.metrics.evidence.support_units`, by the rule of :mod:`pytest_ragdive.metrics.grounding`):
    ``score`` is the unit's support in [0, 1] and ``weight`` its weight in the answer's
    faithfulness, which is ``sum(weight * score) / sum(weight)`` over the units
    (:func:`pytest_ragdive.metrics.evidence.weighted_support`). ``by`` says where the best
    support came from, ``context_id`` and ``span`` which retrieved context (or earlier
    conversation text) and which of its sentences."""

    text: str
    start: int | None = None  # the unit's characters in the answer; None when it is not there verbatim
    end: int | None = None
    score: float
    weight: float = 1.0
    verdict: SupportVerdict
    by: Literal["context", "conversation", "none"] = "none"
    context_id: str | None = None
    span: str = ""  # the matched text (a sentence of that context, or the conversation text), clipped
    missing: list[str] = Field(default_factory=list)  # words of the unit no source holds (at most 8)
    rule: str = "lexical"


class Coverage(Record):
    """One fact of the reference answer (a sentence of the ground truth) and how much of it the answer states."""

    text: str
    covered: float  # share of its terms the answer's asserted units state
    missing: list[str] = Field(default_factory=list)  # its words the answer does not state (at most 8)


class Evidence(Record):
    """The offline scorer's evidence for one turn: each asserted unit's support (faithfulness)
    and each reference fact's coverage (correctness). Judged metrics keep their judge's
    reason in ``Turn.verdicts``."""

    support: list[Support] = Field(default_factory=list)
    reference: list[Coverage] = Field(default_factory=list)

    def worst(self) -> Support | None:
        """The unit with the least support that weighs most (None when every unit is supported)."""
        bad = [u for u in self.support if u.verdict != "supported"]
        return min(bad, key=lambda u: (u.score, -u.weight)) if bad else None


class Turn(Record):
    """One user turn and, once run, the target's answer and the turn's scores."""

    index: int = 0
    rag_input: str
    standalone_question: str = ""
    ground_truth: str = ""
    question_type: QuestionType = "Initial"
    relevant_doc_ids: list[str] = Field(default_factory=list)
    expected_citations: list[str] = Field(default_factory=list)
    negative_assertions: list[str] = Field(default_factory=list)
    # filled by the runner
    answer: str | None = None
    contexts: list[Context] = Field(default_factory=list)
    citations: list[str] = Field(default_factory=list)
    standalone_answer: str | None = None
    standalone_contexts: list[Context] = Field(default_factory=list)
    latency_s: float | None = None
    scores: dict[str, float | None] = Field(default_factory=dict)
    verdicts: dict[str, Verdict] = Field(default_factory=dict)
    flags: list[str] = Field(default_factory=list)
    generation: TurnGeneration | None = None  # generated turns: how the simulator produced it
    sharded: ShardedTurn | None = None  # sharded diagnosis: shards stated, response class, extracted answer
    evidence: Evidence | None = None  # offline scoring: why faithfulness and correctness scored as they did
    attack: AttackTurn | None = None  # adversarial turns: the attack's family and what its checks look for
    meta: dict[str, Any] = Field(default_factory=dict)  # free for users; the plugin never reads it

    @property
    def question(self) -> str:
        return self.standalone_question or self.rag_input


class Conversation(Record):
    """One conversation of one suite in one run, with its scores once scored."""

    id: str
    suite: str = "core"
    run: int = 0
    role: str | None = None
    source: str = "golden"
    document_id: str | None = None
    category: str | None = None
    difficulty: str | None = None
    turns: list[Turn] = Field(default_factory=list)
    scores: dict[str, float | None] = Field(default_factory=dict)
    verdicts: dict[str, Verdict] = Field(default_factory=dict)
    error: str | None = None
    traceback: str | None = None  # of the error, for results.json and -v
    failures: list[str] = Field(default_factory=list)
    # record mode none: why the conversation could not be run (its simulated user's call is not
    # cached); its item is skipped and the suite is gated on the conversations that ran
    not_run: str | None = None
    # typed run metadata (None where it does not apply)
    seed: int | None = None  # generated: the seed of every LLM call of this conversation in this run
    planned_turns: int | None = None  # generated: the turn budget
    window: DocWindow | None = None  # generated: the excerpt of the document the simulator saw
    validation: ValidationStats | None = None  # generated: the validator's counts
    judge_calls: JudgeCalls | None = None  # LLM-judged: the judge calls made
    sharded: ShardedInfo | None = None  # sharded diagnosis: question, condition and outcome
    # the forgetfulness probe: the turns (0-based) answered correctly stand-alone, the ones its
    # share is taken over (None where the probe did not run); the gate checks a baseline's are kept
    eligible_turns: list[int] | None = None
    meta: dict[str, Any] = Field(default_factory=dict)  # free for users; the plugin never reads it

    @property
    def key(self) -> str:
        return f"{self.suite}::{self.id}::run{self.run}"


