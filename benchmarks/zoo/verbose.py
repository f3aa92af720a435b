"""(e) Lakeline Rail: a verbose bot that hedges and cites. Keyword retrieval over the new
message and every earlier user turn (weights 0.7 per turn back); the two best sentences,
each followed by its ``[doc-id]``, inside a hedging opener and a closing line that are
drawn at random (temperature 1 by default; seeded per call like the abstractive bot)."""

from __future__ import annotations

import random
from dataclasses import replace

from .base import ZooBot
from .common import COURTESY, Sentence, finish, weights

OPENERS = (
    "As far as I can tell from our published information, ",
    "Based on the Lakeline Rail travel conditions, ",
    "If I understood your question correctly, ",
    "According to our current rules, ",
)
CLOSINGS = (
    "Please check the journey planner before you travel, as conditions can change.",
    "Our customer service can confirm this for your specific journey.",
    "I hope this helps with your trip.",
)


class VerboseBot(ZooBot):
    domain = "trains"
    k = 3
    temperature = 1.0

    def query(self, earlier: list[str], current: str) -> dict[str, float]:
        return weights(current, earlier, decay=0.7)

    def compose(self, sentences: list[Sentence], question: str, rng: random.Random) -> tuple[str, list[str]]:
        if self.temperature > 0 and len(sentences) == 2 and rng.random() < 0.3:
            sentences = sentences[::-1]
        knobs = replace(self.knobs, names=self.knobs.names - {"courtesy"})
        body, citations = finish(sentences, question, knobs, cite_always=True)
        if not sentences:
            return body, citations
        sampled = self.temperature > 0
        opener = rng.choice(OPENERS) if sampled else OPENERS[0]
        closing = rng.choice(CLOSINGS) if sampled else CLOSINGS[0]
        answer = opener + body[0].lower() + body[1:] + " " + closing
        if "courtesy" in self.knobs:
            answer = COURTESY + answer
        return answer, citations
