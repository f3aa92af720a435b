"""The RAG-DIVE Conversation Validator (CV).

Every candidate turn of the Conversation Generator is checked before it is
sent to the chatbot: one LLM call (client role ``validator``) with the
document (or the window of it the generator saw), the conversation so far and
the candidate, all fenced. The validator returns valid/invalid, a reason and
the failed checks among :data:`CHECKS`.

Before the LLM call a cheap deterministic pre-check runs (:func:`precheck`):

* ``document_mentioned``: rag_input or standalone_question names the source
  itself ("according to the document", "the passage says", "this excerpt",
  "the provided text", ...). The patterns only fire on phrases that refer to
  *the source*, so that a knowledge base *about* documents or texts ("how do
  I upload a document?") does not trip it. The ground truth is exempt, since
  "not answerable from the document" is a legal value.
* ``wrong_question_type``: a turn after the first one typed ``Initial``.
* ``standalone_not_self_contained``: a later turn with an empty stand-alone
  question.

A pre-check failure counts as an invalid verdict of that check (and as
``prechecked``) without an LLM call; the generator gets the reason as
feedback like any other. When the validator's own output cannot be parsed
(after the client's one repair call), the check fails closed: the candidate
is *not* valid (failed check ``validator_error``, counted under
``validator_errors`` and ``invalid``), so it is regenerated and then dropped
or flagged like any invalid turn; an unchecked turn never passes as checked.
The counts say why a suite came out empty (the unusable reply is not
cached, so a rerun asks the validator again).

Counts per check and per role are kept in :class:`ValidationStats`, stored on
each generated conversation as ``conv.validation`` and merged across
conversations with :meth:`ValidationStats.merge`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..core.records import OTHER_CHECK, Turn, TurnVerdict
from ..llm.prompts import FENCE_NOTE, fence, load_prompt

if TYPE_CHECKING:
    from ..llm import LLMClient
    from .roles import Role

CHECKS: tuple[str, ...] = (
    "rag_input_not_connected",
    "standalone_not_self_contained",
    "standalone_inconsistent",
    "ground_truth_unsupported",
    "wrong_question_type",
    "document_mentioned",
)
# not validator checks, but counted the same way
MALFORMED_OUTPUT = "malformed_output"  # the generator's reply did not parse
VALIDATOR_ERROR = "validator_error"  # the validator's reply did not parse (the turn fails closed)

# the paper's category names (RAG-DIVE section 5.2) and a few spellings models use
_CHECK_ALIASES: dict[str, str] = {
    "raginputnotconnected": "rag_input_not_connected",
    "notconnected": "rag_input_not_connected",
    "raginput": "rag_input_not_connected",
    "notstandalone": "standalone_not_self_contained",
    "standalonenotselfcontained": "standalone_not_self_contained",
    "notselfcontained": "standalone_not_self_contained",
    "questionnotconsistent": "standalone_inconsistent",
    "standaloneinconsistent": "standalone_inconsistent",
    "inconsistent": "standalone_inconsistent",
    "groundtruth": "ground_truth_unsupported",
    "groundtruthunsupported": "ground_truth_unsupported",
    "groundtruthwrong": "ground_truth_unsupported",
    "type": "wrong_question_type",
    "questiontype": "wrong_question_type",
    "wrongquestiontype": "wrong_question_type",
    "wrongtype": "wrong_question_type",
    "documentmentioned": "document_mentioned",
    "mentionsdocument": "document_mentioned",
}

GeneratedQuestionType = Literal["Initial", "Follow-up", "Clarification", "Correction", "Comparative"]
LATER_TYPES: tuple[str, ...] = ("Follow-up", "Clarification", "Correction", "Comparative")
_TYPE_ALIASES: dict[str, str] = {
    "initial": "Initial",
    "followup": "Follow-up",
    "clarification": "Clarification",
    "clarify": "Clarification",
    "correction": "Correction",
    "correct": "Correction",
    "comparative": "Comparative",
    "comparison": "Comparative",
    "compare": "Comparative",
}

UNANSWERABLE = "not answerable from the document"

_NOUN = r"(?:document|documents|text|passage|passages|excerpt|source text|source document)"
# the noun ends a clause or is followed by a question word or verb: "according to the
# document, who ..." fires, "in the document management system" does not
_TAIL = (
    r"(?=\s*(?:[,.;:?!)]|$)|\s+(?:what|which|who|whom|when|where|why|how|is|are|was|were|does|do|did"
    r"|can|could|should|would|will|has|have|had|about|say|says|mention|mentions|state|states)\b)"
)
_DOC_MENTION_RES = [
    # "according to the document", "in the passage", "from the provided text"
    re.compile(
        rf"\b(?:in|from|according to|based on|per|within)\s+(?:the|this|that|your|my)\s+"
        rf"(?:provided\s+|given\s+|above\s+|attached\s+|following\s+|original\s+)?{_NOUN}\b{_TAIL}",
        re.IGNORECASE,
    ),
    # "the provided text", "the given passage"
    re.compile(rf"\b(?:the|this|that)\s+(?:provided|given|above|attached|following)\s+{_NOUN}\b{_TAIL}", re.IGNORECASE),
    # "the document says", "the passage mentions"
    re.compile(
        rf"\b(?:the|this|that)\s+{_NOUN}\s+(?:say|says|said|state|states|stated|mention|mentions|mentioned"
        r"|describe|describes|described|claim|claims|explain|explains|explained|refer|refers|talk|talks)\b",
        re.IGNORECASE,
    ),
    # "this passage", "this excerpt" (not "this document", which is a legit noun in some domains)
    re.compile(r"\bthis\s+(?:passage|excerpt)\b", re.IGNORECASE),
]


def _norm_key(value: str) -> str:
    return re.sub(r"[^a-z]", "", value.lower())


def normalize_question_type(value: Any) -> Any:
    """Map 'follow up', 'FOLLOW-UP', 'followup' ... onto the canonical question types."""
    if isinstance(value, str):
        return _TYPE_ALIASES.get(_norm_key(value), value.strip())
    return value


def normalize_check(name: str) -> str:
    """A check name as the validator wrote it -> one of :data:`CHECKS` (or ``other``)."""
    s = name.strip()
    if s in CHECKS or s == MALFORMED_OUTPUT:
        return s
    key = _norm_key(s)
    if key in _CHECK_ALIASES:
        return _CHECK_ALIASES[key]
    for check in CHECKS:
        if _norm_key(check) == key:
            return check
    return OTHER_CHECK


def mentions_document(text: str) -> bool:
    """True when the text refers to the information source itself ("according to the passage")."""
    return any(r.search(text) for r in _DOC_MENTION_RES)


# --------------------------------------------------------------------------
# schemas


class GeneratedTurn(BaseModel):
    """The Conversation Generator's structured output for one turn."""

    model_config = ConfigDict(extra="ignore")

    rag_input: str = Field(min_length=1, description="The message sent to the chatbot, phrased in the role.")
    standalone_question: str = Field(
        "", description="Self-contained rewrite of rag_input with the same meaning (= rag_input in turn 1)."
    )
    ground_truth: str = Field(
        min_length=1,
        description=f"The correct answer from the document only, or '{UNANSWERABLE}'.",
    )
    question_type: GeneratedQuestionType = Field(
        "Follow-up", description="Initial (turn 1), Follow-up, Clarification, Correction or Comparative."
    )

    @field_validator("question_type", mode="before")
    @classmethod
    def _norm_type(cls, v: Any) -> Any:
        return normalize_question_type(v)

    @field_validator("rag_input", "standalone_question", "ground_truth", mode="before")
    @classmethod
    def _strip(cls, v: Any) -> Any:
        return v.strip() if isinstance(v, str) else v


class ValidatorOutput(BaseModel):
    """The Conversation Validator's structured output for one candidate turn."""

    model_config = ConfigDict(extra="ignore")

    valid: bool
    reason: str = ""
    failed_checks: list[str] = Field(default_factory=list)

    @field_validator("failed_checks", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [p for p in re.split(r"[,;\s]+", v) if p]
        if v is None:
            return []
        return v


# --------------------------------------------------------------------------
# counts


# --------------------------------------------------------------------------
# checking


def precheck(candidate: GeneratedTurn, first: bool) -> TurnVerdict | None:
    """The deterministic checks; an invalid verdict, or None when they pass."""
    failed: list[str] = []
    reasons: list[str] = []
    fields = [("rag_input", candidate.rag_input)]
    if not first:
        fields.append(("standalone_question", candidate.standalone_question))
    named = [name for name, text in fields if mentions_document(text)]
    if named:
        failed.append("document_mentioned")
        reasons.append(
            f"{' and '.join(named)} mention{'s' if len(named) == 1 else ''} the information source itself "
            "(e.g. 'the document', 'the text', 'the passage'); ask as a user who simply wants to know"
        )
    if not first and candidate.question_type == "Initial":
        failed.append("wrong_question_type")
        reasons.append(f"question_type 'Initial' is only for the first turn; use one of {', '.join(LATER_TYPES)}")
    if not first and not candidate.standalone_question:
        failed.append("standalone_not_self_contained")
        reasons.append("standalone_question is empty; write a self-contained rewrite of rag_input")
    if not failed:
        return None
    return TurnVerdict(valid=False, reason="; ".join(reasons), failed_checks=failed, source="precheck")


def format_history(turns: Iterable[Turn]) -> str:
    """The conversation so far as plain text: the user's rag_inputs and the chatbot's answers."""
    lines: list[str] = []
    for n, t in enumerate(turns, 1):
        lines.append(f"Turn {n}\nUser: {t.rag_input}\nChatbot: {t.answer if t.answer is not None else '(no answer)'}")
    return "\n\n".join(lines) if lines else "(none: this is the first turn)"


def position_note(first: bool) -> str:
    if first:
        return (
            "the first turn: rag_input is self-contained, standalone_question is identical to it, "
            "question_type is Initial"
        )
    return (
        "a later turn: rag_input depends on the conversation, standalone_question is self-contained, "
        f"question_type is one of {', '.join(LATER_TYPES)}"
    )


async def validate_turn(
    client: LLMClient,
    *,
    title: str,
    document: str,
    window_note: str,
    history: list[Turn],
    candidate: GeneratedTurn,
    first: bool,
    seed: int | None = None,
    role: Role | None = None,
) -> TurnVerdict:
    """Pre-check, then one validator call for one candidate turn (an adversarial ``role``:
    the red-team validator, which checks the turn is a realistic move of that role)."""
    pre = precheck(candidate, first)
    if pre is not None:
        return pre
    attack = role is not None and role.attack is not None
    prompt = load_prompt("attack_validator_turn" if attack else "validator_turn")
    extra = {"role_name": role.name, "role_instructions": role.instructions} if attack and role is not None else {}
    version = role.prompt_version(prompt.version) if role is not None else prompt.version
    messages = prompt.render(
        **extra,
        fence_note=FENCE_NOTE,
        title=fence(title, "title"),
        window_note=window_note,
        document=fence(document, "document"),
        history_turns=len(history),
        history=fence(format_history(history), "conversation"),
        turn_number=len(history) + 1,
        position=position_note(first),
        candidate=fence(json.dumps(candidate.model_dump(), ensure_ascii=False, indent=1), "candidate turn"),
    )
    res = await client.complete_json(
        "validator", messages, ValidatorOutput, prompt_id=prompt.id, prompt_version=version, seed=seed
    )
    out = res.value
    if out is None:  # fail closed: an unchecked turn is not a valid one
        return TurnVerdict(
            valid=False,
            reason=f"validator output unusable: {res.error or 'invalid'}",
            source="validator_error",
            failed_checks=[VALIDATOR_ERROR],
        )
    if out.valid:
        return TurnVerdict(valid=True, reason=out.reason, source="llm")
    checks: list[str] = []
    for c in out.failed_checks:
        n = normalize_check(c)
        if n not in checks:
            checks.append(n)
    return TurnVerdict(
        valid=False, reason=out.reason or "invalid (no reason given)", failed_checks=checks or [OTHER_CHECK]
    )
