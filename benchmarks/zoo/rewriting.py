"""(c) Northgate City Library: a query-rewriting bot. A follow-up that leans on the
history (a pronoun, an ellipsis such as "And Riverside?", or too few content words)
is rewritten into a stand-alone query: its own words plus the topic of the previous
(rewritten) question; a self-contained message is searched as it is. Retrieval and
reading both see only the rewritten query. Deterministic."""

from __future__ import annotations

import re

from .base import ZooBot
from .common import tokens, weights

PRONOUNS = frozenset("it its they them their that this those these there one ones".split())
ELLIPSIS = re.compile(r"^\s*(and|what about|how about|but)\b", re.IGNORECASE)
QUESTION_WORDS = frozenset(tokens("much long many often cost costs charged pay fee late time"))


def needs_history(message: str) -> bool:
    words = re.findall(r"[a-z']+", message.lower())
    return bool(PRONOUNS & set(words)) or bool(ELLIPSIS.match(message)) or len(tokens(message)) < 3


def rewrite(earlier: list[str], current: str) -> str:
    """The stand-alone query of ``current`` given the earlier user messages."""
    previous = ""
    for message in earlier:  # each earlier message rewritten in turn: the topic carries over
        previous = rewrite_one(previous, message)
    return rewrite_one(previous, current)


def rewrite_one(previous: str, current: str) -> str:
    if not previous or not needs_history(current):
        return current
    own = set(tokens(current))
    topic = [t for t in tokens(previous) if t not in own and t not in QUESTION_WORDS]
    stripped = " ".join(w for w in current.split() if w.lower().strip("?,.!") not in PRONOUNS)
    stripped = ELLIPSIS.sub("", stripped).strip()
    return f"{stripped} ({' '.join(dict.fromkeys(topic))})"


class RewritingBot(ZooBot):
    domain = "library"
    k = 3

    def query(self, earlier: list[str], current: str) -> dict[str, float]:
        return weights(rewrite(earlier, current))
