"""The sharding properties P1-P6 of the sharded-RAG study, as far as a rule can check them.

Each check returns messages that name the property. Two kinds:

- **errors** (:func:`check_question`): certain violations; a reviewed question that has one
  is refused by the loader (:func:`pytest_ragdive.sharded.questions.load_sharded`);
- **flags** (:func:`flag_question`): likely violations a person should look at; the sharding
  helper writes them into a proposal (``flags``), the loader accepts them.

=====  ==========================================================  ===========================
P      rule                                                        kind
=====  ==========================================================  ===========================
P1     no shard word outside the question (connectives in          error
       :data:`ALLOWED_WORDS` aside): nothing added
P1     CONCAT information preservation: the shards state at least  error below 80%; below 100%
       80% of the question's content words (:func:`preservation`)  a flag naming the words
P1/P6  every name, number and date of the question is stated       error
       verbatim by some shard
P2     no shard states the answer, an alias, or a declared         error
       ``intermediate_entities`` entry
P3     the first shard asks what the question asks (its first      error
       interrogative: how, what, which...) and is not the whole
       question (it lacks at least one of its content words)
P3     the first shard names a specific (a name or number)         flag: is it identifying?
P4     shard ids are 1..n (the order they are revealed in)         flag
P5     every follow-up adds a content word no earlier shard        error
       stated (a turn that adds nothing is discarded)
P5     a follow-up names two separate specifics, or asks a         flag: two clues packed?
       question
P6     every name and number of a shard occurs verbatim (same      error
       case and form) in the question
=====  ==========================================================  ===========================

Judged (the helper, with a model: prompt ``shard_review``): information equivalence
(nothing dropped or added, no new structure or causal link), intermediate entities named
early, two clues packed into one shard. Left to the reviewer (:data:`REVIEW_ONLY`): the
dependency order of the follow-ups (P4) and nested chains packed into one clue (P5).

A *specific* is a word with a digit ("600", "3,000", "2FA") or a capitalised word that does
not start a sentence ("Business", "SCIM"); consecutive ones are one entity ("Lumio Sensor").
Content words are compared after SQuAD normalisation and a light plural/verb-ending fold
(:func:`content_words`), so "plans" matches "plan".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from ..metrics.text import STOPWORDS, normalize_answer, tokens


class ShardLike(Protocol):
    """What the checks read of one shard (:class:`~pytest_ragdive.sharded.questions.Shard`)."""

    @property
    def shard_id(self) -> int: ...

    @property
    def shard(self) -> str: ...


class QuestionLike(Protocol):
    """What the checks read of a sharded question
    (:class:`~pytest_ragdive.sharded.questions.ShardedQuestion`, which imports this module)."""

    @property
    def question(self) -> str: ...

    @property
    def answer(self) -> str: ...

    @property
    def supporting_doc_ids(self) -> list[str]: ...

    @property
    def shards(self) -> Sequence[ShardLike]: ...

    @property
    def references(self) -> list[str]: ...

    @property
    def intermediate_entities(self) -> list[str]: ...

__all__ = [
    "ALLOWED_WORDS",
    "INTERROGATIVES",
    "MIN_PRESERVATION",
    "REVIEW_ONLY",
    "check_question",
    "contains_phrase",
    "content_words",
    "flag_question",
    "preservation",
    "specifics",
]

#: words a shard may use although the question does not: they bind an earlier
#: entity or frame the clue ("that one", "it is also", "the other one"), never content
ALLOWED_WORDS: frozenset[str] = frozenset(
    """
    also another any anything both else each either first second third last other others one ones
    same some someone something thing things part question asking ask want wanted know looking
    need about regarding concerning it its is are was were be this that those these they them
    there here called named mean meant kind sort type
    not yes no please thanks ok okay well so now again too still
    """.split()
)
#: the interrogatives whose first occurrence in the question the intent shard must keep (P3)
INTERROGATIVES: tuple[str, ...] = ("how", "what", "which", "who", "whom", "whose", "when", "where", "why")
#: the source's CONCAT information-preservation criterion (share of the question kept)
MIN_PRESERVATION = 0.8
#: what no rule checks: written into every helper proposal for the reviewer
REVIEW_ONLY: tuple[str, ...] = (
    "P4: the follow-ups come in the question's dependency order (each may bind only what an earlier one introduced)",
    "P5: no shard packs a nested chain of relations into one clue",
    "P2: no shard names an entity the question only resolves to while reasoning (declare them as "
    "intermediate_entities to have them checked)",
)

_WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’%-]*(?:[.,:][0-9][0-9%]*)*")
_SENTENCE_END = frozenset(".?!:;\n")


def _fold(tok: str) -> str:
    """A light fold for comparing words: plural and common verb endings."""
    if tok.isdigit() or len(tok) <= 3:
        return tok
    for suffix in ("ies", "es", "s", "ing", "ed"):
        if tok.endswith(suffix) and len(tok) - len(suffix) >= 3:
            base = tok[: -len(suffix)]
            return base + "y" if suffix == "ies" else base
    return tok


_ALLOWED_FOLDED = frozenset(_fold(w) for w in ALLOWED_WORDS)


def content_words(text: str) -> list[str]:
    """The folded normalised tokens of ``text`` minus stopwords, in order."""
    return [_fold(t) for t in tokens(text) if t not in STOPWORDS]


def contains_phrase(text: str, phrase: str) -> bool:
    """Whether the normalised tokens of ``phrase`` occur as a contiguous run in ``text``'s."""
    needle = normalize_answer(phrase)
    if not needle:
        return False
    return re.search(rf"(?:^| ){re.escape(needle)}(?: |$)", normalize_answer(text)) is not None


def specifics(text: str) -> list[list[str]]:
    """The specifics of ``text`` (see the module docstring), grouped into entities: runs of
    consecutive specific words, in order, each word as written."""
    runs: list[list[str]] = []
    last_end = -2
    for m in _WORD_RE.finditer(text):
        word = m.group(0).rstrip("'’-")
        before = text[: m.start()].rstrip()
        initial = not before or before[-1] in _SENTENCE_END
        specific = any(ch.isdigit() for ch in word) or (word[:1].isupper() and not initial and word != "I")
        if specific:
            if runs and text[last_end : m.start()].strip() == "":
                runs[-1].append(word)
            else:
                runs.append([word])
            last_end = m.end()
    return runs


def _words(runs: list[list[str]]) -> list[str]:
    return list(dict.fromkeys(w for run in runs for w in run))


def preservation(q: QuestionLike) -> tuple[float, list[str]]:
    """(share of the question's distinct content words that some shard states, the words no
    shard states): CONCAT's information preservation, offline (1.0 for a question without
    content words)."""
    asked = list(dict.fromkeys(content_words(q.question)))
    stated = {w for s in q.shards for w in content_words(s.shard)}
    missing = [w for w in asked if w not in stated]
    return (1.0 - len(missing) / len(asked) if asked else 1.0), missing


def _ordered(q: QuestionLike) -> list[tuple[int, str]]:
    return [(s.shard_id, s.shard) for s in sorted(q.shards, key=lambda s: s.shard_id)]


def check_question(q: QuestionLike) -> list[str]:
    """Every certain violation (structure and P1-P6 errors), one message each (empty when it passes)."""
    problems = _structure(q)
    shards = _ordered(q)
    if not shards or not tokens(q.question):
        return problems
    allowed = set(content_words(q.question)) | _ALLOWED_FOLDED
    question_words = {m.group(0).rstrip("'’-") for m in _WORD_RE.finditer(q.question)}
    for sid, text in shards:
        if not tokens(text):
            continue
        for ref in q.references:
            if contains_phrase(text, ref):
                problems.append(f"P2: shard {sid} contains the answer or an alias ({ref!r})")
                break
        for ent in q.intermediate_entities:
            if contains_phrase(text, ent):
                problems.append(f"P2: shard {sid} names the intermediate entity {ent!r}")
        foreign = [w for w in dict.fromkeys(content_words(text)) if w not in allowed]
        if foreign:
            problems.append(f"P1: shard {sid} uses words that are not in the question: {', '.join(foreign)}")
        changed = [w for w in _words(specifics(text)) if w not in question_words]
        if changed:
            problems.append(f"P6: shard {sid} does not keep the question's own form of: {', '.join(changed)}")
    share, missing = preservation(q)
    if share < MIN_PRESERVATION:
        problems.append(
            f"P1: the shards keep {share:.0%} of the question's content words (CONCAT preservation needs "
            f"{MIN_PRESERVATION:.0%}); missing: {', '.join(missing)}"
        )
    shard_words = {m.group(0).rstrip("'’-") for _, t in shards for m in _WORD_RE.finditer(t)}
    dropped = [w for w in _words(specifics(q.question)) if w not in shard_words]
    if dropped:
        problems.append(f"P1: no shard states the question's {', '.join(dropped)} verbatim")
    problems += _intent(q, shards)
    seen = set(content_words(shards[0][1]))
    for sid, text in shards[1:]:
        new = set(content_words(text)) - seen - _ALLOWED_FOLDED
        if tokens(text) and not new:
            problems.append(f"P5: shard {sid} adds nothing that the earlier shards did not state")
        seen |= set(content_words(text))
    return problems


def _structure(q: QuestionLike) -> list[str]:
    problems: list[str] = []
    if not tokens(q.question):
        problems.append("question is empty")
    if not tokens(q.answer):
        problems.append("answer is empty")
    if not q.supporting_doc_ids:
        problems.append("supporting_doc_ids is empty")
    if len(q.shards) < 2:
        problems.append(f"needs at least two shards, has {len(q.shards)}")
    ids = [s.shard_id for s in q.shards]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        problems.append(f"shard ids used twice: {', '.join(map(str, dup))}")
    seen: dict[str, int] = {}
    for s in q.shards:
        norm = normalize_answer(s.shard)
        if not norm:
            problems.append(f"shard {s.shard_id} is empty")
            continue
        if norm in seen:
            problems.append(f"shard {s.shard_id} repeats shard {seen[norm]}")
        seen.setdefault(norm, s.shard_id)
    return problems


def _intent(q: QuestionLike, shards: list[tuple[int, str]]) -> list[str]:
    """P3's certain part: the first shard asks what the question asks, and not all of it."""
    out: list[str] = []
    first_id, first = shards[0]
    asked = tokens(q.question)
    cue = next((t for t in asked if t in INTERROGATIVES), None)
    if cue is not None and cue not in tokens(first):
        out.append(f"P3: the first shard (shard {first_id}) does not ask what the question asks ({cue!r})")
    if len(shards) > 1 and set(content_words(q.question)) <= set(content_words(first)):
        out.append(f"P3: the first shard (shard {first_id}) states the whole question")
    return out


def flag_question(q: QuestionLike) -> list[str]:
    """The likely violations a person should look at (see the module docstring)."""
    flags: list[str] = []
    shards = _ordered(q)
    if not shards:
        return flags
    share, missing = preservation(q)
    if MIN_PRESERVATION <= share < 1.0:
        flags.append(f"P1: no shard states the question's {', '.join(missing)} ({share:.0%} of its content words kept)")
    named = list(dict.fromkeys(" ".join(run) for run in specifics(shards[0][1])))
    if named:
        flags.append(f"P3: the first shard names {', '.join(named)}: make sure it is not an identifying specific")
    ids = [sid for sid, _ in shards]
    if ids != list(range(1, len(ids) + 1)):
        flags.append(f"P4: shard ids are {', '.join(map(str, ids))}, not 1..{len(ids)} (shards are revealed by id)")
    for sid, text in shards[1:]:
        runs = [" ".join(run) for run in specifics(text)]
        if len(runs) >= 2:
            flags.append(f"P5: shard {sid} names {', '.join(runs)}: one clue, or two packed together?")
        if text.rstrip().endswith("?"):
            flags.append(f"P5: shard {sid} asks a question: a follow-up states one clue")
    return flags
