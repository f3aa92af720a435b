"""What the zoo's bots share: the corpus and its archived twins, a tokenizer, BM25-ish
scoring of documents and sentences, the knobs and how they change an answer.

A bot of the zoo is an example of a chatbot a user might have; none of it is part of
pytest-ragdive (the bots only import the records a target returns). Pure Python,
deterministic given the knobs' seed, no model.

The knobs (``ZOO_KNOBS=a,b`` in the environment, or ``Knobs(names=...)``):

harmful (the gate should fail):
    drop_history    the bot sees only the new user message
    invent_fact     an unsupported sentence is added to the answer
    wrong_sentence  the answer is another sentence of the right (top-ranked) document
    change_number   every number in the answer is changed
    outdated_doc    retrieval returns the archived near-duplicate of a document that has one
    topk1           one document retrieved instead of the bot's usual top-k
benign (the gate should pass):
    courtesy        a courtesy prefix ("Happy to help! ")
    reword          the answer reworded with a synonym table
    reorder         the answer's sentences in reverse order
    cite            a ``[doc-id]`` after each sentence (and the citations returned)

``ZOO_SEED`` (default 0) seeds the sampled bots' draws (with the plugin's ``call_info``);
``ZOO_TEMPERATURE`` overrides a sampled bot's temperature (0: deterministic).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

HARMFUL = ("drop_history", "invent_fact", "wrong_sentence", "change_number", "outdated_doc", "topk1")
BENIGN = ("courtesy", "reword", "reorder", "cite")
KNOBS = HARMFUL + BENIGN

ZOO_DIR = Path(__file__).resolve().parent

STOPWORDS = frozenset(
    """a an the and or but if of to in on at for from by with without about as is are was were be been being
    do does did doing have has had having i me my we our you your he she it its they them their this that these
    those there here what which who whom whose when where why how can could would should will shall may might must
    not no yes so than then too very just also any some all each every more most other such only own same into over
    under again further once up down out off am please tell know want like get got one""".split()
)
_WORD = re.compile(r"[a-z0-9]+(?:[.,:][0-9]+)*")
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"(])")
_NUMBER = re.compile(r"(?<![\w.:])(\d+(?:[.,]\d+)?)(?![\w:])")
_TIME = re.compile(r"(?<![\w.:])(\d{1,2}):(\d\d)(?![\w:])")


def stem(word: str) -> str:
    """A light stem: plural and -ing/-ed endings off (enough for keyword matching)."""
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: len(word) - len(suffix)] + keep
    return word


def tokens(text: str) -> list[str]:
    """Content words of a text, lower-cased and stemmed (stop words out)."""
    return [stem(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text.strip()) if s.strip()]


# -- the corpus ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Doc:
    id: str
    title: str
    text: str
    archived: bool  # an outdated near-duplicate ("(archived)" in the title)

    @property
    def sentences(self) -> list[str]:
        return split_sentences(self.text)


@dataclass
class Corpus:
    """A domain's documents, the current ones indexed by BM25, each archived one as the
    twin of the current document whose id it extends (``fares`` -> ``fares-2023``)."""

    docs: list[Doc]
    k1: float = 1.2
    b: float = 0.75
    twins: dict[str, Doc] = field(init=False)
    _tf: dict[str, Counter[str]] = field(init=False)
    _idf: dict[str, float] = field(init=False)
    _avg: float = field(init=False)

    def __post_init__(self) -> None:
        current = [d for d in self.docs if not d.archived]
        self.twins = {}
        for old in (d for d in self.docs if d.archived):
            base = max((d for d in current if old.id.startswith(d.id + "-")), key=lambda d: len(d.id), default=None)
            if base is not None:
                self.twins[base.id] = old
        self._tf = {d.id: Counter(tokens(d.title + " " + d.text)) for d in self.docs}
        df: Counter[str] = Counter()
        for d in current:
            df.update(set(self._tf[d.id]))
        n = max(1, len(current))
        self._idf = {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}
        self._avg = sum(sum(self._tf[d.id].values()) for d in current) / n

    def idf(self, term: str) -> float:
        return self._idf.get(term, math.log(1 + (len(self.docs) + 0.5) / 0.5))

    def doc(self, doc_id: str) -> Doc:
        return next(d for d in self.docs if d.id == doc_id)

    def score(self, doc: Doc, query: Mapping[str, float]) -> float:
        tf, length = self._tf[doc.id], sum(self._tf[doc.id].values())
        total = 0.0
        for term, weight in query.items():
            f = tf.get(term, 0)
            if f:
                total += weight * self.idf(term) * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * length / self._avg))
        return total

    def search(self, query: Mapping[str, float], k: int, outdated: bool = False) -> list[tuple[Doc, float]]:
        """The top ``k`` current documents (ties by id); ``outdated``: each one that has an
        archived twin is replaced by the twin (the knob ``outdated_doc``)."""
        ranked = sorted(
            ((d, self.score(d, query)) for d in self.docs if not d.archived), key=lambda p: (-p[1], p[0].id)
        )
        hits = [(d, s) for d, s in ranked if s > 0][:k]
        if outdated:
            hits = [(self.twins.get(d.id, d), s) for d, s in hits]
        return hits


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file, or the list of a YAML file (bare, or under documents/cases/conversations)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    data = yaml.safe_load(text)
    if isinstance(data, dict):
        data = next(data[k] for k in ("documents", "cases", "conversations") if k in data)
    return list(data)


def load_corpus(path: Path) -> Corpus:
    return Corpus([
        Doc(id=r["id"], title=r.get("title", ""), text=r["text"], archived="(archived)" in r.get("title", ""))
        for r in read_rows(path)
    ])


# -- the knobs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Knobs:
    names: frozenset[str] = frozenset()
    seed: int = 0
    temperature: float | None = None  # None: the bot's own default

    def __post_init__(self) -> None:
        unknown = sorted(set(self.names) - set(KNOBS))
        if unknown:
            raise ValueError(f"unknown knob(s) {', '.join(unknown)}; expected some of {', '.join(KNOBS)}")

    def __contains__(self, name: object) -> bool:
        return name in self.names

    @classmethod
    def of(cls, *names: str, seed: int = 0, temperature: float | None = None) -> Knobs:
        return cls(frozenset(n for n in names if n), seed, temperature)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Knobs:
        env = os.environ if env is None else env
        names = [n.strip() for n in env.get("ZOO_KNOBS", "").split(",") if n.strip() and n.strip() != "healthy"]
        raw_t = env.get("ZOO_TEMPERATURE", "").strip()
        return cls(frozenset(names), int(env.get("ZOO_SEED", "0") or 0), float(raw_t) if raw_t else None)


def rng_for(knobs: Knobs, messages: Sequence[Mapping[str, str]], call_info: Any = None) -> random.Random:
    """The draws of one call: seeded by ``ZOO_SEED`` and the plugin's ``call_info`` (stable per
    conversation, run and turn) when given, else by the messages."""
    if call_info is not None:
        key = f"{knobs.seed}:{call_info.seed}:{call_info.turn}"
    else:
        key = f"{knobs.seed}:" + hashlib.sha256(
            "\x00".join(f"{m.get('role')}:{m.get('content')}" for m in messages).encode()
        ).hexdigest()
    return random.Random(key)


def user_turns(messages: Sequence[Mapping[str, str]], knobs: Knobs) -> tuple[list[str], str]:
    """(earlier user messages, the new one); none earlier under ``drop_history``."""
    users = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
    if not users:
        return [], ""
    return ([] if "drop_history" in knobs else users[:-1]), users[-1]


def weights(current: str, earlier: Iterable[str] = (), decay: float = 0.5) -> dict[str, float]:
    """Query-term weights: the new message at 1, each earlier user turn at ``decay`` ** distance."""
    out: dict[str, float] = {}
    for distance, text in enumerate([current, *reversed(list(earlier))]):
        w = decay**distance
        for t in tokens(text):
            out[t] = max(out.get(t, 0.0), w)
    return out


Sentence = tuple[str, str]  # (text, doc id)


def rank_sentences(corpus: Corpus, hits: Sequence[tuple[Doc, float]], query: Mapping[str, float]) -> list[tuple[float, Sentence]]:
    """Every sentence of the retrieved documents with its score: the idf-weighted query terms it
    holds, plus a small bonus for a higher-ranked document."""
    out = []
    for rank, (doc, _) in enumerate(hits):
        for sent in doc.sentences:
            terms = set(tokens(sent))
            s = sum(w * corpus.idf(t) for t, w in query.items() if t in terms)
            if s > 0:
                out.append((s + 0.3 / (rank + 1), (sent, doc.id)))
    out.sort(key=lambda p: -p[0])
    return out


def extract(corpus: Corpus, hits: Sequence[tuple[Doc, float]], query: Mapping[str, float], knobs: Knobs,
            n: int = 2, ratio: float = 0.6) -> list[Sentence]:
    """The extractive reading: the best sentence, and up to ``n - 1`` more scoring at least
    ``ratio`` of it. ``wrong_sentence``: the top document's sentence that scores least instead."""
    ranked = rank_sentences(corpus, hits, query)
    if not ranked:
        return []
    if "wrong_sentence" in knobs and hits:
        return [wrong_sentence(corpus, hits[0][0], query, {ranked[0][1][0]})]
    top = ranked[0][0]
    return [s for score, s in ranked[:n] if score >= ratio * top]


def wrong_sentence(corpus: Corpus, doc: Doc, query: Mapping[str, float], avoid: set[str]) -> Sentence:
    """The sentence of ``doc`` the query matches least (not one in ``avoid``)."""
    options = [s for s in doc.sentences if s not in avoid] or doc.sentences

    def match(sent: str) -> float:
        terms = set(tokens(sent))
        return sum(w * corpus.idf(t) for t, w in query.items() if t in terms)

    return (min(options, key=lambda s: (match(s), options.index(s))), doc.id)


# -- knobs on the answer ------------------------------------------------------------------------

INVENTED = (
    "Members of the loyalty club get this free of charge on Sundays.",
    "Since last month this also applies to every customer over 65 at half the price.",
    "You can arrange all of this by text message, at no extra cost, until midnight.",
)
COURTESY = "Happy to help! "
# a synonym table (benign rewording): whole words or phrases, lower case
SYNONYMS: dict[str, str] = {
    "costs": "comes to", "must": "have to", "can": "are able to", "free of charge": "at no cost",
    "within": "inside", "before": "ahead of", "after": "following", "need": "require", "needs": "requires",
    "customers": "clients", "customer": "client", "booking": "reservation",
    "bookings": "reservations", "please": "kindly", "allowed": "permitted", "help": "assist",
}


def reword(text: str, table: Mapping[str, str] = SYNONYMS, rng: random.Random | None = None, p: float = 1.0) -> str:
    """Each phrase of ``table`` replaced (with probability ``p`` under ``rng``), keeping a capital."""
    def swap(m: re.Match[str]) -> str:
        word = m.group(0)
        if rng is not None and rng.random() >= p:
            return word
        new = table[word.lower()]
        return new[0].upper() + new[1:] if word[0].isupper() else new

    keys = sorted(table, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w-])(" + "|".join(re.escape(k) for k in keys) + r")(?![\w-])", re.IGNORECASE)
    return pattern.sub(swap, text)


def change_numbers(text: str) -> str:
    """Every number changed (n -> 2n, at least +1; a time two hours later): "4 euros" -> "8 euros"."""
    def bump(m: re.Match[str]) -> str:
        raw = m.group(1)
        if "," in raw and len(raw.split(",")[-1]) == 3:  # 1,000
            return f"{int(raw.replace(',', '')) * 2:,}"
        if "." in raw or "," in raw:
            value = float(raw.replace(",", "."))
            return f"{value * 2:.2f}".rstrip("0").rstrip(".")
        value = int(raw)
        return str(value * 2 if value else 1)

    shifted = _TIME.sub(lambda m: f"{(int(m.group(1)) + 2) % 24}:{m.group(2)}", text)  # a time: two hours later
    return _NUMBER.sub(bump, shifted)


def invented(question: str) -> str:
    """One unsupported statement, chosen by the question (stable)."""
    return INVENTED[int(hashlib.sha256(question.encode()).hexdigest(), 16) % len(INVENTED)]


def finish(sentences: Sequence[Sentence], question: str, knobs: Knobs, cite_always: bool = False) -> tuple[str, list[str]]:
    """The answer text and its citations from the chosen sentences, with the answer knobs applied
    (invent_fact, change_number, reword, reorder, courtesy, cite)."""
    items = list(sentences)
    if not items:
        return "Sorry, I could not find that in our documents.", []
    if "invent_fact" in knobs:
        items.append((invented(question), ""))
    if "reorder" in knobs:
        items.reverse()
    texts = []
    for text, doc_id in items:
        if "change_number" in knobs:
            text = change_numbers(text)
        if "reword" in knobs:
            text = reword(text)
        if ("cite" in knobs or cite_always) and doc_id:
            text = text.rstrip() + f" [{doc_id}]"
        texts.append(text)
    answer = " ".join(texts)
    if "courtesy" in knobs:
        answer = COURTESY + answer
    citations = list(dict.fromkeys(d for _, d in items if d)) if ("cite" in knobs or cite_always) else []
    return answer, citations


def top_k(default: int, knobs: Knobs) -> int:
    return 1 if "topk1" in knobs else default
