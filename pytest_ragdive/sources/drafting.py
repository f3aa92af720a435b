"""A golden set drafted from the user's documents (``python -m pytest_ragdive draft-golden``).

The user's LLM (through :class:`~pytest_ragdive.llm.LLMClient`: the project's model,
``[tool.ragdive.llm]`` and cache; a rerun with the same inputs makes no call) drafts cases
of several kinds (:data:`KINDS`), one call per case, with the prompts
``prompts/draft_<kind>.yaml`` (their id and version are in every cache key):

- ``simple``: a specific question one document answers;
- ``multi_document``: a question whose answer needs two documents;
- ``distracting``: a question one document answers, with a detail of another in it;
- ``out_of_scope``: a plausible question no document answers, with the expected refusal
  as its ground truth (and ``relevant_doc_ids: []``);
- ``conversation``: a multi-turn conversation whose follow-ups depend on earlier turns,
  each later turn with its stand-alone rewrite.

Every turn carries its stand-alone question, ground truth and relevant document ids, and
is checked by the RAG-DIVE validator (:func:`pytest_ragdive.sources.validator.validate_turn`,
role ``validator``: the deterministic pre-checks, then one LLM call) against the documents it
was drafted from, with the turns before it as history. A case with an invalid turn is
drafted again once with the validator's reasons; still invalid, it is dropped (and
counted). What is kept is a scripted conversation (:class:`~pytest_ragdive.sources.golden.ScriptedConversation`,
its ``category`` the kind) marked ``reviewed: false``: the loader refuses it, so an
unreviewed draft never gates. ``draft-golden`` lays the drafts out as ``export-review``
rows; ``import-review --accept`` moves the accepted ones into a suite's golden file.

:func:`estimate` says what drafting costs before any call (tokens from the prompts as they
would be sent, the completion lengths assumed, litellm's prices)."""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..core.errors import GoldenError
from ..core.records import Document, Turn
from ..llm.prompts import FENCE_NOTE, fence, load_prompt
from .golden import ScriptedConversation, ScriptedTurn
from .validator import UNANSWERABLE, GeneratedTurn, normalize_question_type, validate_turn

if TYPE_CHECKING:
    from ..llm import LLMClient
    from ..llm.prices import ModelPrice

KINDS: tuple[str, ...] = ("simple", "multi_document", "distracting", "out_of_scope", "conversation")
DOC_SUFFIXES = (".md", ".markdown", ".txt", ".rst")
MAX_DOCS = 5000
MAX_DOC_CHARS = 200_000  # a document read for drafting is cut here
PROMPT_DOC_CHARS = 6000  # of each document, put into a prompt
OUT_OF_SCOPE_CHARS = 400  # of each document, shown to the out-of-scope drafter (its topic)
OUT_OF_SCOPE_DOCS = 20


# --------------------------------------------------------------------------
# documents


def _title(text: str, fallback: str) -> str:
    for line in text.splitlines():
        m = re.match(r"\s*#{1,6}\s+(.+?)\s*#*\s*$", line)
        if m:
            return m.group(1)[:200]
    return fallback


def load_documents(path: Path) -> list[Document]:
    """The documents to draft from: a directory of text files (``.md``, ``.markdown``,
    ``.txt``, ``.rst``; id: the path under the directory, title: the first heading or the
    file name), or a corpus file (JSONL/YAML with id, title, text)."""
    if path.is_file():
        from .golden import load_corpus

        return load_corpus(path)
    if not path.is_dir():
        raise GoldenError(f"{path}: no such directory or corpus file")
    files = sorted(p for p in path.rglob("*") if p.suffix.lower() in DOC_SUFFIXES and p.is_file() and not p.is_symlink())
    if not files:
        raise GoldenError(f"{path}: no documents ({', '.join(DOC_SUFFIXES)} files) to draft from")
    if len(files) > MAX_DOCS:
        raise GoldenError(f"{path}: {len(files)} documents, more than {MAX_DOCS}: draft from a part of them")
    docs = []
    for f in files:
        with f.open(encoding="utf-8", errors="replace") as fh:
            text = fh.read(MAX_DOC_CHARS)
        if text.strip():
            doc_id = f.relative_to(path).as_posix()
            docs.append(Document(id=doc_id, title=_title(text, f.stem.replace("-", " ").replace("_", " ")), text=text))
    if not docs:
        raise GoldenError(f"{path}: every document is empty")
    return docs


# --------------------------------------------------------------------------
# the plan


@dataclass(frozen=True)
class DraftTask:
    """One case to draft: its id, kind, the documents shown (the first answers it) and turns."""

    id: str
    kind: str
    doc_ids: tuple[str, ...]
    turns: int = 1


def plan(docs: Sequence[Document], per_kind: int = 2, *, kinds: Sequence[str] = KINDS, turns: int = 3,
         seed: int = 0) -> list[DraftTask]:
    """``per_kind`` cases of each kind, their documents drawn with ``seed`` (the same
    documents and seed give the same plan). Kinds needing two documents are left out of a
    one-document corpus."""
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise GoldenError(f"unknown draft kind(s) {', '.join(unknown)}, expected some of {', '.join(KINDS)}")
    rng = random.Random(seed)
    ids = [d.id for d in docs]
    order = ids[:]
    rng.shuffle(order)
    tasks: list[DraftTask] = []
    for kind in kinds:
        if kind in ("multi_document", "distracting") and len(ids) < 2:
            continue
        for n in range(per_kind):
            anchor = order[(n + KINDS.index(kind)) % len(order)]
            if kind == "out_of_scope":
                shown = tuple(ids[:OUT_OF_SCOPE_DOCS])
            elif kind in ("multi_document", "distracting"):
                other = rng.choice([i for i in ids if i != anchor])
                shown = (anchor, other)
            else:
                shown = (anchor,)
            tasks.append(DraftTask(f"draft-{kind.replace('_', '-')}-{n + 1:02d}", kind, shown,
                                   turns if kind == "conversation" else 1))
    return tasks


# --------------------------------------------------------------------------
# the drafter's reply


class DraftedTurn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    rag_input: str = Field(min_length=1, description="the message a user sends to the chatbot")
    standalone_question: str = Field("", description="a self-contained rewrite of rag_input with the same meaning")
    ground_truth: str = Field(min_length=1, description="the correct answer from the documents (or the expected refusal)")
    question_type: str = Field("Initial", description="Initial (turn 1), then Follow-up, Clarification or Comparative")
    relevant_doc_ids: list[str] = Field(default_factory=list, description="ids of the documents that answer it")

    @field_validator("rag_input", "standalone_question", "ground_truth", mode="before")
    @classmethod
    def _strip(cls, v: Any) -> Any:
        return v.strip() if isinstance(v, str) else v


class GoldenDraft(BaseModel):
    """The drafter's structured output: the turns of one case."""

    model_config = ConfigDict(extra="ignore")

    turns: list[DraftedTurn] = Field(min_length=1)


def _documents_block(task: DraftTask, docs: dict[str, Document]) -> str:
    limit = OUT_OF_SCOPE_CHARS if task.kind == "out_of_scope" else PROMPT_DOC_CHARS
    parts = []
    for n, did in enumerate(task.doc_ids, 1):
        d = docs[did]
        parts.append(f"Document {n}\nDocument id: {did}\nTitle: {d.title or did}\n{fence(d.text[:limit], 'document')}")
    return "\n\n".join(parts)


def messages_for(task: DraftTask, docs: dict[str, Document], feedback: str = "") -> tuple[Any, list[dict[str, str]]]:
    prompt = load_prompt(f"draft_{task.kind}")
    note = ("\nYour previous draft of this case was rejected by the validator; write a new one that fixes it:\n"
            + fence(feedback, "validator feedback") + "\n") if feedback else ""
    return prompt, prompt.render(fence_note=FENCE_NOTE, documents=_documents_block(task, docs), feedback=note,
                                 turns=task.turns)


# --------------------------------------------------------------------------
# drafting and checking


@dataclass
class DraftOutcome:
    task: DraftTask
    conversation: ScriptedConversation | None = None
    attempts: int = 0
    problem: str = ""  # why it was dropped
    notes: list[str] = field(default_factory=list)


def _clean(task: DraftTask, draft: GoldenDraft, docs: dict[str, Document]) -> list[DraftedTurn]:
    turns = draft.turns[: task.turns]
    known = set(task.doc_ids) if task.kind != "out_of_scope" else set()
    out = []
    for i, t in enumerate(turns):
        qtype = "Initial" if i == 0 else normalize_question_type(t.question_type)
        if i and qtype not in ("Follow-up", "Clarification", "Correction", "Comparative"):
            qtype = "Follow-up"
        standalone = t.rag_input if i == 0 else t.standalone_question
        rel = [d for d in dict.fromkeys(t.relevant_doc_ids) if d in known]
        if not rel and known:  # none named (or names that are no id shown): the documents it was drafted from
            rel = list(task.doc_ids) if task.kind == "multi_document" else [task.doc_ids[0]]
        out.append(t.model_copy(update={"question_type": qtype, "standalone_question": standalone,
                                        "relevant_doc_ids": rel}))
    return out


def _source_text(task: DraftTask, docs: dict[str, Document]) -> tuple[str, str]:
    """(title, text) of what a case is checked against: its documents (the out-of-scope
    case: the beginnings of the documents it was shown, the knowledge base's topics)."""
    if len(task.doc_ids) == 1:
        d = docs[task.doc_ids[0]]
        return d.title or d.id, d.text[:PROMPT_DOC_CHARS]
    limit = OUT_OF_SCOPE_CHARS if task.kind == "out_of_scope" else PROMPT_DOC_CHARS
    text = "\n\n".join(f"[{did}] {docs[did].title}\n{docs[did].text[:limit]}" for did in task.doc_ids)
    return "the knowledge base" if task.kind == "out_of_scope" else " / ".join(docs[d].title for d in task.doc_ids), text


async def check(client: LLMClient, task: DraftTask, turns: list[DraftedTurn], docs: dict[str, Document],
                seed: int | None = None) -> str:
    """The validator's verdict on a drafted case: '' when every turn is valid, else the reasons."""
    title, text = _source_text(task, docs)
    history: list[Turn] = []
    for i, t in enumerate(turns):
        candidate = GeneratedTurn(
            rag_input=t.rag_input, standalone_question=t.standalone_question,
            ground_truth=UNANSWERABLE if task.kind == "out_of_scope" else t.ground_truth,
            question_type=t.question_type,
        )
        verdict = await validate_turn(client, title=title, document=text, window_note="", history=history,
                                      candidate=candidate, first=i == 0, seed=seed)
        if not verdict.valid:
            return f"turn {i + 1}: {verdict.reason} ({', '.join(verdict.failed_checks)})"
        history.append(Turn(index=i, rag_input=t.rag_input, standalone_question=t.standalone_question,
                            ground_truth=t.ground_truth, answer=t.ground_truth))
    return ""


def _conversation(task: DraftTask, turns: list[DraftedTurn]) -> ScriptedConversation:
    first = turns[0].rag_input
    # the first question's hash in the id: a later draft (another seed, other documents)
    # never takes the id of a case already accepted
    digest = hashlib.sha256(first.encode("utf-8")).hexdigest()[:6]
    return ScriptedConversation(
        id=f"{task.id}-{digest}",
        title=first if len(first) <= 60 else first[:57] + "...",
        category=task.kind,
        document_id=task.doc_ids[0] if task.kind != "out_of_scope" else None,
        reviewed=False,
        turns=[
            ScriptedTurn(
                rag_input=t.rag_input,
                standalone_question=t.standalone_question,
                ground_truth=t.ground_truth,
                question_type=t.question_type,
                relevant_doc_ids=t.relevant_doc_ids,
            )
            for t in turns
        ],
    )


async def draft_one(client: LLMClient, task: DraftTask, docs: dict[str, Document], seed: int | None = None,
                    retries: int = 1) -> DraftOutcome:
    out = DraftOutcome(task)
    feedback = ""
    for _ in range(retries + 1):
        out.attempts += 1
        prompt, messages = messages_for(task, docs, feedback)
        res = await client.complete_json("simulator", messages, GoldenDraft, prompt_id=prompt.id,
                                         prompt_version=prompt.version, seed=seed)
        if res.value is None:
            out.problem = f"the drafter's reply was unusable: {res.error or 'invalid'}"
            feedback = out.problem
            continue
        turns = _clean(task, res.value, docs)
        if len(turns) < task.turns:
            out.problem = f"{len(turns)} turn(s) drafted, {task.turns} asked for"
            feedback = out.problem
            continue
        problem = await check(client, task, turns, docs, seed)
        if not problem:
            out.conversation, out.problem = _conversation(task, turns), ""
            return out
        out.problem = f"validator: {problem}"
        feedback = problem
    return out


async def draft_all(client: LLMClient, tasks: Sequence[DraftTask], docs: dict[str, Document],
                    seed: int | None = None, concurrency: int = 8) -> list[DraftOutcome]:
    sem = asyncio.Semaphore(max(1, concurrency))

    async def one(t: DraftTask) -> DraftOutcome:
        async with sem:
            return await draft_one(client, t, docs, seed)

    return list(await asyncio.gather(*(one(t) for t in tasks)))


# --------------------------------------------------------------------------
# the files


def render_drafts(outcomes: Sequence[DraftOutcome], source: str) -> str:
    """The drafts file (YAML): each kept case with a comment naming its kind and
    documents, ``reviewed: false``; the dropped ones listed in comments at the top."""
    import yaml

    kept = [o for o in outcomes if o.conversation is not None]
    lines = [
        f"# Drafted golden cases from {source}, by `python -m pytest_ragdive draft-golden` (LLM drafts,",
        "# each checked by the RAG-DIVE validator). Every case is reviewed: false: the loader refuses",
        "# it, so it never gates. Review them (the review CSV beside this file), then",
        "# `python -m pytest_ragdive import-review REVIEW.csv --accept THIS_FILE --into GOLDEN_FILE`",
        "# moves the accepted ones into the suite's golden file.",
    ]
    dropped = [o for o in outcomes if o.conversation is None]
    if dropped:
        lines.append(f"# dropped ({len(dropped)}): " + "; ".join(f"{o.task.id}: {o.problem[:160]}" for o in dropped))
    lines.append("conversations:" if kept else "conversations: []")
    for o in kept:
        assert o.conversation is not None
        data = o.conversation.model_dump(exclude_defaults=True)
        data = {"id": data.pop("id"), "title": data.pop("title"), "reviewed": False, **data}
        text = yaml.safe_dump([data], sort_keys=False, allow_unicode=True, width=100)
        lines.append(f"  # {o.task.kind}, from {', '.join(o.task.doc_ids[:4])}"
                     f"{' ...' if len(o.task.doc_ids) > 4 else ''}; validator: valid"
                     f"{' (second draft)' if o.attempts > 1 else ''}")
        lines.extend(f"  {ln}" if ln else ln for ln in text.rstrip("\n").split("\n"))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# the estimate


class DraftEstimate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cases: int
    drafter_model: str
    validator_model: str
    drafter_calls: int
    validator_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None  # None: a model missing from the price map
    redraft_rate: float

    def lines(self) -> list[str]:
        cost = "unknown (a model not in litellm's price map)" if self.cost_usd is None else f"${self.cost_usd:.4f}"
        return [
            f"draft-golden estimate: {self.cases} case(s); {self.drafter_calls} drafter call(s) ({self.drafter_model}) "
            f"and {self.validator_calls} validator call(s) ({self.validator_model}), assuming "
            f"{self.redraft_rate:.0%} drafted twice; about {self.prompt_tokens:,} prompt and "
            f"{self.completion_tokens:,} completion tokens: {cost} with nothing cached "
            "(a rerun with the same documents is answered from the cache: free)",
        ]


def estimate(tasks: Sequence[DraftTask], docs: dict[str, Document], drafter_model: str, validator_model: str,
             price: Callable[[str], ModelPrice | None], *, chars_per_token: float = 4.0, redraft_rate: float = 0.25,
             drafter_tokens_per_turn: int = 150, validator_prompt_tokens: int = 1200,
             validator_completion_tokens: int = 60) -> DraftEstimate:
    """What drafting ``tasks`` costs with nothing cached: each drafter prompt as it would
    be sent, each turn's validator call at an assumed size, ``redraft_rate`` of the cases
    drafted twice."""
    factor = 1.0 + redraft_rate
    d_in = d_out = v_in = v_out = 0.0
    d_calls = v_calls = 0.0
    for t in tasks:
        _, msgs = messages_for(t, docs)
        chars = sum(len(m["content"]) for m in msgs)
        d_calls += factor
        d_in += factor * chars / chars_per_token
        d_out += factor * drafter_tokens_per_turn * t.turns
        v_calls += factor * t.turns
        v_in += factor * t.turns * (validator_prompt_tokens + min(chars, PROMPT_DOC_CHARS * 2) / chars_per_token)
        v_out += factor * t.turns * validator_completion_tokens
    cost: float | None = 0.0
    for model, tin, tout in ((drafter_model, d_in, d_out), (validator_model, v_in, v_out)):
        p = price(model)
        if p is None or cost is None:
            cost = None
            continue
        cost += p.cost(round(tin), round(tout))
    return DraftEstimate(
        cases=len(tasks), drafter_model=drafter_model, validator_model=validator_model,
        drafter_calls=round(d_calls), validator_calls=round(v_calls), prompt_tokens=round(d_in + v_in),
        completion_tokens=round(d_out + v_out), cost_usd=cost, redraft_rate=redraft_rate,
    )
