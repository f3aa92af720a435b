"""(b) Velora Bikes: keyword retrieval whose follow-ups borrow the terms of every earlier
user turn (weights halving with each turn back), and an extractive reader (the best
sentence, plus a second when it scores close). Deterministic."""

from __future__ import annotations

from .base import ZooBot
from .common import weights


class KeywordBot(ZooBot):
    domain = "bikes"
    k = 3

    def query(self, earlier: list[str], current: str) -> dict[str, float]:
        return weights(current, earlier, decay=0.5)
