"""(d) Brightsmile Dental Clinic: an abstractive bot that rewords like an LLM does. It reads
the best sentences of the documents retrieved for the new message and the previous user
turn, then restates them: phrases swapped from a synonym table, two sentences merged into
one, the clauses in either order. It samples (temperature 0.7 by default): which second
sentence it adds, which synonym, and the order are drawn from a seeded RNG per call
(``ZOO_SEED`` and the plugin's ``call_info``), so runs differ and a rerun repeats."""

from __future__ import annotations

import random
from collections.abc import Mapping

from .base import ZooBot
from .common import Doc, Sentence, finish, rank_sentences, weights, wrong_sentence

# phrase -> the ways the bot restates it (the first one at temperature 0)
RESTATE: dict[str, tuple[str, ...]] = {
    "costs": ("is priced at", "comes to"),
    "takes": ("lasts", "needs"),
    "about": ("around", "roughly"),
    "we recommend": ("the clinic advises", "we suggest"),
    "free of charge": ("without a fee", "at no cost"),
    "is charged": ("costs", "is billed"),
    "are accepted": ("are taken", "are fine"),
    "should not": ("ought not to", "had better not"),
    "every": ("each", "every single"),
    "appointment": ("visit", "appointment"),
}
CONNECTIVES = ("; also, ", ", and ", "; in addition, ")


class AbstractiveBot(ZooBot):
    domain = "dental"
    k = 3
    temperature = 0.7

    def query(self, earlier: list[str], current: str) -> dict[str, float]:
        return weights(current, earlier[-1:], decay=0.6)

    def read(self, hits: list[tuple[Doc, float]], query: Mapping[str, float], rng: random.Random) -> list[Sentence]:
        ranked = rank_sentences(self.corpus, hits, query)
        if not ranked:
            return []
        top_score, first = ranked[0]
        if "wrong_sentence" in self.knobs:
            return [wrong_sentence(self.corpus, hits[0][0], query, {first[0]})]
        rest = [(s, sent) for s, sent in ranked[1:4] if s >= 0.5 * top_score]
        if not rest:
            return [first]
        if self.temperature <= 0:
            return [first, rest[0][1]]
        # sampled: a second sentence in proportion to score ** (1/T), or none
        options = [(None, top_score * 0.5)] + [(sent, s) for s, sent in rest]
        weights_ = [w ** (1 / self.temperature) for _, w in options]
        second = rng.choices([o for o, _ in options], weights=weights_)[0]
        return [first] if second is None else [first, second]

    def restate(self, text: str, rng: random.Random) -> str:
        out = text
        for phrase, options in RESTATE.items():
            if phrase in out.lower():
                choice = options[0] if self.temperature <= 0 else rng.choice(options)
                idx = out.lower().index(phrase)
                new = choice[0].upper() + choice[1:] if out[idx].isupper() else choice
                out = out[:idx] + new + out[idx + len(phrase):]
        return out

    def compose(self, sentences: list[Sentence], question: str, rng: random.Random) -> tuple[str, list[str]]:
        restated = [(self.restate(t, rng), d) for t, d in sentences]
        if len(restated) == 2:
            (a, da), (b, _) = restated
            if self.temperature > 0 and rng.random() < 0.5:
                a, b = b, a
            joint = CONNECTIVES[0] if self.temperature <= 0 else rng.choice(CONNECTIVES)
            restated = [(a.rstrip(".") + joint + b[0].lower() + b[1:], da)]
        return finish(restated, question, self.knobs)
