"""The offline answer step: an extractive reader over the retrieved chunks.

Every sentence of the retrieved chunks is scored by the idf-weighted overlap of
its tokens (and, at half weight, its article's title) with the question. The
new message counts fully; earlier user turns count a little, their weight
decaying with distance, so that they break ties towards the topic of the
conversation. When the new message says nothing by itself ("how many can I
have?") the turn before it counts more. The score is then scaled by:

- how well the sentence's article was retrieved;
- whether the sentence has the kind of answer asked for ("how long" wants a
  duration, "what does ... mean" a definition); an elliptical follow-up
  ("and a Sensor?") asks what the turn before it asked;
- the entities of the conversation (plans, devices, regions, roles, error
  codes): those named in the new message should be in the answer, and a
  sentence about another one of the same type, or about none, is demoted; when
  the new message names none of a type, the latest one named earlier is carried
  over ("how long does it take to charge?" is still about the Cam) with a
  lighter weight and lighter penalties. An article's title counts for its
  sentences ("A full charge takes about 4 hours" in "Lumio Cam battery and
  range" is about the Cam);
- archived articles, pointers to other articles ("for details, see ...") and
  sentences the bot already said are demoted.

The answer is the best sentence plus up to two more that add question tokens the
first did not cover. The reader abstains when nothing scores above a threshold
or when most of the question's words never occur in the help centre. A
comparison ("how does that compare with Business?") is answered with one
sentence per compared entity.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from pytest_ragdive import Context

from .chunking import Chunk
from .history import Query
from .sampling import Sampler, pick
from .text import answer_type, has_answer_type, split_sentences, stem, tokenize, tokenize_query

ABSTAIN = "I can't find that in the help centre."

ENTITY_TYPES: dict[str, frozenset[str]] = {
    kind: frozenset(stem(w) for w in words.split())
    for kind, words in {
        "plan": "starter pro business enterprise",
        "device": "hub cam sensor",
        "region": "canada australia japan uk eu",
        "role": "owner admin member viewer",
    }.items()
}
_CODE = re.compile(r"^[a-z]\d{3}$")
# "business days", "pro rata", "team members": the word is not the entity there
_NOT_BEFORE = {
    (stem(a), stem(b)) for a, b in (("business", "day"), ("business", "hour"), ("pro", "rata"), ("business", "order"))
}
_NOT_AFTER = {(stem("team"), stem("member"))}
_OLD_WORDS = frozenset({stem("archived"), stem("retired"), stem("legacy")})
_POINTER = re.compile(r"\bsee [A-Z]|\bas described in\b")
COMPARATIVE_CUES = frozenset(
    {"compare", "compared", "comparison", "versus", "vs", "difference", "differ", "both", "between"}
)


def entities(tokens: Sequence[str]) -> dict[str, set[str]]:
    """Entities by type in a token sequence (error codes under ``code``)."""
    out: dict[str, set[str]] = {}
    for i, tok in enumerate(tokens):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        prev = tokens[i - 1] if i > 0 else ""
        if (tok, nxt) in _NOT_BEFORE or (prev, tok) in _NOT_AFTER:
            continue
        if _CODE.match(tok):
            out.setdefault("code", set()).add(tok)
            continue
        for kind, names in ENTITY_TYPES.items():
            if tok in names:
                out.setdefault(kind, set()).add(tok)
    return out


@dataclass
class Reading:
    answer: str
    sentences: list[tuple[str, str]] = field(default_factory=list)  # (sentence, doc_id)
    abstained: bool = False
    score: float = 0.0


@dataclass(eq=False)
class _Candidate:
    text: str
    doc_id: str
    tokens: frozenset[str]
    title_tokens: frozenset[str]  # the article's title words not in the sentence
    ents: dict[str, set[str]]  # the sentence's entities, with its article title's
    prior: float  # retrieval, freshness, answer type, entity and repetition multipliers
    archived: bool = False
    position: int = 0  # the sentence's index in its article: ties go to the earlier one


@dataclass
class _State:
    weights: dict[str, float]  # token -> weight (idf included)
    named: dict[str, set[str]]  # entities named in the new message, by type
    carried: dict[str, set[str]]  # entities carried over from earlier turns, by type
    compare: bool
    kind: str | None  # answer type
    elliptical: bool


class ExtractiveReader:
    """Answers from the retrieved chunks; the weights below are the defaults the example ships."""

    def __init__(
        self,
        chunks: Sequence[Chunk],
        min_score: float = 1.0,
        max_unknown_share: float = 0.75,
        history_weight: float = 0.1,
        elliptical_history_weight: float = 0.5,
        title_weight: float = 0.5,
        extra_ratio: float = 0.3,
        max_sentences: int = 3,
        entity_idf: float = 3.0,
        carry_weight: float = 0.3,
        retrieval_share: float = 0.6,
        answer_type_bonus: float = 1.4,
        elliptical_answer_type_bonus: float = 2.0,
        archived_penalty: float = 0.5,
        pointer_penalty: float = 0.5,
        repeat_penalty: float = 0.85,
        other_entity_penalty: float = 0.4,
        missing_entity_penalty: float = 0.5,
        mixed_entity_penalty: float = 0.9,
        carried_other_penalty: float = 0.7,
        carried_missing_penalty: float = 0.85,
    ) -> None:
        n = len(chunks)
        df: dict[str, int] = {}
        for c in chunks:
            for t in set(tokenize(f"{c.title}. {c.text}")):
                df[t] = df.get(t, 0) + 1
        self.idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
        self.unknown_idf = math.log(1 + (n + 0.5) / 0.5)
        self.archived = {c.id: c.archived for c in chunks}
        self.title_tokens = {c.id: frozenset(tokenize(c.title)) for c in chunks}
        # words of an archived title that name what is old ("2023", "v1", "retired"): a
        # question that uses them asks about the old article on purpose
        self.archived_markers = {
            c.id: frozenset(t for t in tokenize(c.title) if any(ch.isdigit() for ch in t) or t in _OLD_WORDS)
            for c in chunks
            if c.archived
        }
        self.position: dict[tuple[str, str], int] = {}
        count: dict[str, int] = {}
        for c in chunks:
            for sent in split_sentences(c.text):
                if (c.doc_id, sent) not in self.position:
                    self.position[(c.doc_id, sent)] = count.get(c.doc_id, 0)
                    count[c.doc_id] = count.get(c.doc_id, 0) + 1
        # an article about one plan or device ("Lumio Cam battery and range") is about it in
        # every sentence; a title naming several ("Free trials of Pro and Business") says nothing
        self.title_entities = {
            c.id: {k: v for k, v in entities(tokenize(c.title)).items() if len(v) == 1} for c in chunks
        }
        self.min_score = min_score
        self.max_unknown_share = max_unknown_share
        self.history_weight = history_weight
        self.elliptical_history_weight = elliptical_history_weight
        self.title_weight = title_weight
        self.extra_ratio = extra_ratio
        self.max_sentences = max_sentences
        self.entity_idf = entity_idf
        self.carry_weight = carry_weight
        self.retrieval_share = retrieval_share
        self.answer_type_bonus = answer_type_bonus
        self.elliptical_answer_type_bonus = elliptical_answer_type_bonus
        self.archived_penalty = archived_penalty
        self.pointer_penalty = pointer_penalty
        self.repeat_penalty = repeat_penalty
        self.other_entity_penalty = other_entity_penalty
        self.missing_entity_penalty = missing_entity_penalty
        self.mixed_entity_penalty = mixed_entity_penalty
        self.carried_other_penalty = carried_other_penalty
        self.carried_missing_penalty = carried_missing_penalty

    # -- the question side ------------------------------------------------------
    @staticmethod
    def has_content(text: str) -> bool:
        """Whether the message has words besides entity names ("And on Business?" has none)."""
        toks = tokenize_query(text)
        names = {t for n in entities(toks).values() for t in n}
        return any(t not in names for t in toks)

    def unknown_share(self, text: str) -> float:
        """Share of the message's idf mass in words the help centre never uses."""
        toks = set(tokenize_query(text))
        if not toks:
            return 0.0
        names = {t for n in entities(sorted(toks)).values() for t in n}
        known = sum(max(self.idf[t], self.entity_idf if t in names else 0.0) for t in toks if t in self.idf)
        unknown = self.unknown_idf * sum(1 for t in toks if t not in self.idf)
        return unknown / (known + unknown)

    def state(self, query: Query) -> _State:
        elliptical = not self.has_content(query.current)
        weights: dict[str, float] = {}
        for text, w in query.weighted(self.elliptical_history_weight if elliptical else self.history_weight):
            for t in tokenize_query(text):
                weights[t] = max(weights.get(t, 0.0), w * self.idf.get(t, 0.0))

        asked = answer_type(query.current)
        kind = asked
        if kind is None and elliptical:  # "and for Business?" asks what the turn before asked
            kind = next((k for k in map(answer_type, reversed(query.previous)) if k), None)
        compare = bool(COMPARATIVE_CUES & set(re.findall(r"[a-z]+", query.current.lower())))
        named = {k: v for k, v in entities(tokenize(query.current)).items() if k != asked}
        carried: dict[str, set[str]] = {}
        for turn in reversed(query.previous):  # newest first: the latest mention wins
            for k, names in entities(tokenize(turn)).items():
                if k == asked:
                    continue  # "which plans have it?": the plan is the answer, not the topic
                if k in named:
                    if compare and len(named[k]) < 2:
                        named[k] = named[k] | names  # "how does that compare with Business?"
                elif k not in carried:
                    carried[k] = set(names)
        for group, weight in ((named, None), (carried, self.carry_weight)):
            for k, names in group.items():
                for t in ENTITY_TYPES.get(k, ()):
                    if t not in names and t in weights:
                        weights[t] = 0.0  # superseded: "no, I meant Business"
                for t in names:
                    w = max(self.idf.get(t, 0.0), self.entity_idf)
                    weights[t] = w if weight is None else max(weights.get(t, 0.0), weight * w)
        return _State(weights, named, carried, compare, kind, elliptical)

    # -- the passage side -------------------------------------------------------
    def _entity_factor(self, ents: dict[str, set[str]], st: _State) -> float:
        f = 1.0
        for k, names in st.named.items():
            if k not in ents:
                f *= self.missing_entity_penalty
            elif not ents[k] & names:
                f *= self.other_entity_penalty
            elif ents[k] - names:
                f *= self.mixed_entity_penalty
        for k, names in st.carried.items():
            if k not in ents:
                f *= self.carried_missing_penalty
            elif not ents[k] & names:
                f *= self.carried_other_penalty
        return f

    def _candidates(self, contexts: Sequence[Context], st: _State, said: str, current: str = "") -> list[_Candidate]:
        # how well the sentence's article was retrieved (its best chunk), so that
        # where a chunk boundary falls matters less
        doc_score: dict[str, float] = {}
        for c in contexts:
            doc_score[c.source_id] = max(doc_score.get(c.source_id, 0.0), c.score or 0.0)
        top = max(doc_score.values(), default=0.0) or 1.0
        asked_tokens = set(tokenize(current))
        seen: set[str] = set()
        out = []
        for ctx in contexts:
            rel = max(0.0, doc_score[ctx.source_id] / top)
            base = 1.0 - self.retrieval_share + self.retrieval_share * rel
            archived = self.archived.get(ctx.id, False)
            if archived and not self.archived_markers.get(ctx.id, frozenset()) & asked_tokens:
                base *= self.archived_penalty
            title = self.title_tokens.get(ctx.id, frozenset())
            for sent in split_sentences(ctx.text):
                if sent in seen:
                    continue
                seen.add(sent)
                toks = tokenize(sent)
                ents = {**self.title_entities.get(ctx.id, {}), **entities(toks)}
                p = base * self._entity_factor(ents, st)
                if st.kind is not None and has_answer_type(sent, st.kind):
                    p *= self.elliptical_answer_type_bonus if st.elliptical else self.answer_type_bonus
                if sent in said:
                    p *= self.repeat_penalty  # already told the user
                if _POINTER.search(sent):
                    p *= self.pointer_penalty  # "for current prices, see ...": not an answer
                pos = self.position.get((ctx.source_id, sent), 0)
                out.append(_Candidate(sent, ctx.source_id, frozenset(toks), title - set(toks), ents, p, archived, pos))
        return out

    def _gain(self, cand: _Candidate, weights: dict[str, float], covered: frozenset[str] = frozenset()) -> float:
        """The weight of the question tokens the sentence adds; one entity per type counts."""
        names = {t for n in cand.ents.values() for t in n}
        total = sum(weights[t] for t in cand.tokens if t in weights and t not in covered and t not in names)
        total += self.title_weight * sum(
            weights[t] for t in cand.title_tokens if t in weights and t not in covered and t not in names
        )
        for n in cand.ents.values():
            total += max((weights.get(t, 0.0) for t in n if t not in covered), default=0.0)
        # rounded so that set iteration order (hash seed) cannot break a tie differently
        return round(cand.prior * total, 9)

    def _compare(self, cands: list[_Candidate], st: _State) -> list[_Candidate]:
        kind = next((k for k, v in st.named.items() if len(v) >= 2), None)
        if kind is None:
            return []
        names = st.named[kind]
        picked: list[_Candidate] = []
        for name in sorted(names):
            pool = [c for c in cands if name in c.ents.get(kind, set()) and c not in picked]
            alone = [c for c in pool if not (c.ents[kind] & names) - {name}]  # about this one only
            pool = alone or pool
            if pool:
                picked.append(max(pool, key=lambda c: (self._gain(c, st.weights), -c.position)))
        return picked

    def read(self, query: Query, contexts: Sequence[Context], sampler: Sampler | None = None) -> Reading:
        if self.unknown_share(query.current) > self.max_unknown_share:
            return Reading(ABSTAIN, abstained=True)
        st = self.state(query)
        cands = self._candidates(contexts, st, " ".join(query.answers), query.current)
        if not cands:
            return Reading(ABSTAIN, abstained=True)
        if st.compare:
            picked = self._compare(cands, st)
            best = max((self._gain(c, st.weights) for c in picked), default=0.0)
            if len(picked) >= 2 and best >= self.min_score:
                return Reading(" ".join(c.text for c in picked), [(c.text, c.doc_id) for c in picked], score=best)
        picked = []
        covered: frozenset[str] = frozenset()
        best = 0.0
        for _ in range(self.max_sentences):
            # extra sentences never come from archived articles
            rest = [c for c in cands if c not in picked and not (picked and c.archived)]
            if not rest:
                break
            cand = pick(rest, lambda c, cov=covered: (self._gain(c, st.weights, cov), -c.position), sampler)
            gain = self._gain(cand, st.weights, covered)
            if not picked:
                if gain < self.min_score:
                    return Reading(ABSTAIN, abstained=True, score=gain)
                best = gain
            elif gain < self.extra_ratio * best:
                break
            picked.append(cand)
            covered = covered | cand.tokens | cand.title_tokens
        return Reading(" ".join(c.text for c in picked), [(c.text, c.doc_id) for c in picked], score=best)
