"""The frame every zoo bot (but the bundled example) shares: messages in, a retrieval
query, documents, chosen sentences, a composed answer, a ``TargetResponse`` out.
A bot overrides :meth:`ZooBot.query` (its history handling) and :meth:`ZooBot.compose`
(its answer style); the knobs (common.py) act at the same points in every bot."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_ragdive import Context, TargetResponse

from .common import ZOO_DIR, Corpus, Doc, Knobs, Sentence, extract, finish, load_corpus, rng_for, top_k, user_turns

_CORPORA: dict[str, Corpus] = {}


def corpus_of(domain: str) -> Corpus:
    """The domain's corpus (``data/<domain>/corpus.yaml``), loaded once per process."""
    if domain not in _CORPORA:
        _CORPORA[domain] = load_corpus(ZOO_DIR / "data" / domain / "corpus.yaml")
    return _CORPORA[domain]


class ZooBot:
    """``bot(messages, call_info=None) -> TargetResponse`` over a domain's corpus."""

    domain = ""
    k = 3  # documents retrieved
    temperature = 0.0  # > 0: the bot samples (compose draws from the call's rng)

    def __init__(self, knobs: Knobs | None = None) -> None:
        self.knobs = Knobs.from_env() if knobs is None else knobs
        if self.knobs.temperature is not None:
            self.temperature = self.knobs.temperature
        self.corpus = corpus_of(self.domain)

    # -- the parts a bot overrides ---------------------------------------------------------------
    def query(self, earlier: list[str], current: str) -> dict[str, float]:
        """The retrieval (and reading) query: term -> weight."""
        raise NotImplementedError

    def read(self, hits: list[tuple[Doc, float]], query: Mapping[str, float], rng: random.Random) -> list[Sentence]:
        return extract(self.corpus, hits, query, self.knobs)

    def compose(self, sentences: list[Sentence], question: str, rng: random.Random) -> tuple[str, list[str]]:
        return finish(sentences, question, self.knobs)

    # -- the call --------------------------------------------------------------------------------
    def respond(self, messages: Sequence[Mapping[str, str]], call_info: Any = None) -> tuple[str, list[Doc], list[str]]:
        """(answer, retrieved documents, citations) of one call."""
        earlier, current = user_turns(messages, self.knobs)
        rng = rng_for(self.knobs, messages, call_info)
        query = self.query(earlier, current)
        hits = self.corpus.search(query, top_k(self.k, self.knobs), outdated="outdated_doc" in self.knobs)
        answer, citations = self.compose(self.read(hits, query, rng), current, rng)
        return answer, [d for d, _ in hits], citations

    def __call__(self, messages: Sequence[Mapping[str, str]], call_info: Any = None) -> TargetResponse:
        answer, docs, citations = self.respond(messages, call_info)
        return TargetResponse(
            answer=answer,
            contexts=[Context(id=f"{d.id}#0", doc_id=d.id, text=d.text) for d in docs],
            citations=citations,
        )
