"""A zoo of small chatbots of different shapes, each an example of a bot a user might
have, each over a corpus of its own domain with golden data in the plugin's format
(``data/<domain>/``), all with the same knobs (common.py). benchmarks/bench_zoo.py
records a baseline per bot and gates every knob; README.md says how to run one by hand.

    from zoo import make_bot
    bot = make_bot("keyword")              # knobs from ZOO_KNOBS / ZOO_SEED
    bot = make_bot("keyword", Knobs.of("drop_history"))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .common import BENIGN, HARMFUL, KNOBS, ZOO_DIR, Knobs


@dataclass(frozen=True)
class BotSpec:
    name: str
    domain: str  # data/<domain>/ (the example: its own project's files)
    shape: str  # the architecture, in words
    sampled: bool = False  # draws at random per run (temperature > 0)
    http: bool = False  # served over HTTP (the plugin's HTTP target)


BOTS: dict[str, BotSpec] = {s.name: s for s in (
    BotSpec("example", "lumio", "the bundled example: BM25 over chunks, full history, extractive reader"),
    BotSpec("keyword", "bikes", "keyword retrieval, follow-ups borrow every earlier user turn's terms, extractive"),
    BotSpec("rewriting", "library", "rewrites a follow-up (pronoun, ellipsis) into a stand-alone query"),
    BotSpec("abstractive", "dental", "rewords: synonyms, merged and reordered sentences; samples (T=0.7)", sampled=True),
    BotSpec("verbose", "trains", "hedges, cites [doc-id], adds a closing line; samples (T=1)", sampled=True),
    BotSpec("http", "coworking", "behind HTTP with its own reply shape; remembers one turn back", http=True),
)}


def make_bot(name: str, knobs: Knobs | None = None) -> Any:
    """The bot ``name`` (a key of :data:`BOTS`) with ``knobs`` (default: from the environment)."""
    if name == "example":
        from .example import ExampleBot

        return ExampleBot(knobs)
    if name == "keyword":
        from .keyword import KeywordBot

        return KeywordBot(knobs)
    if name == "rewriting":
        from .rewriting import RewritingBot

        return RewritingBot(knobs)
    if name == "abstractive":
        from .abstractive import AbstractiveBot

        return AbstractiveBot(knobs)
    if name == "verbose":
        from .verbose import VerboseBot

        return VerboseBot(knobs)
    if name == "http":
        from .http_bot import CoworkingBot

        return CoworkingBot(knobs)
    raise KeyError(f"no zoo bot {name!r}; expected one of {', '.join(BOTS)}")


__all__ = ["BENIGN", "BOTS", "HARMFUL", "KNOBS", "ZOO_DIR", "BotSpec", "Knobs", "make_bot"]
