"""Injected changes of a known size (defaults off): seeded per-turn faults that make
the bot a little worse, so that a benchmark can measure how often the gate catches
a drop of a given size (``benchmarks/bench_gate.py``).

==============================  ====================================================
variable                        with this probability, per answered turn
==============================  ====================================================
EXAMPLE_RAG_BREAK_RATE          the answer is broken: the reader answers from the
                                wrong passage (the first sentence of the
                                lowest-ranked retrieved chunk): a correctness drop
                                that stays grounded
EXAMPLE_RAG_MEMORY_RATE         the answer is blended with one "memory" statement
                                (``styles.blend_memory``): a faithfulness drop
EXAMPLE_RAG_FORGET_RATE         the conversation's history is dropped for this turn
                                (history policy ``none``): a forgetting change
==============================  ====================================================

Each draw is seeded like the sampling knob: from the plugin's ``call_info`` (the
conversation's seed in this run, and the turn) when it is given, else from the
messages, plus ``EXAMPLE_RAG_SEED``; every fault has its own stream, so turning one
on changes neither the others' draws nor the sampler's.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from pytest_ragdive import CallInfo, Context

from .reader import Reading
from .sampling import call_seed
from .text import split_sentences

FAULTS = ("break", "memory", "forget")


@dataclass(frozen=True)
class Faults:
    """The per-turn probability of each fault (0: off)."""

    break_rate: float = 0.0
    memory_rate: float = 0.0
    forget_rate: float = 0.0

    def __post_init__(self) -> None:
        for name in FAULTS:
            rate = getattr(self, f"{name}_rate")
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"EXAMPLE_RAG_{name.upper()}_RATE must be in [0, 1], got {rate}")

    @property
    def any(self) -> bool:
        return any(getattr(self, f"{name}_rate") > 0 for name in FAULTS)

    def draw(
        self, name: str, messages: Sequence[Mapping[str, str]], call_info: CallInfo | None, base_seed: int = 0
    ) -> bool:
        """Whether fault ``name`` strikes this call (a seeded draw; never at rate 0)."""
        rate = float(getattr(self, f"{name}_rate"))
        if rate <= 0:
            return False
        return random.Random(f"{name}:{call_seed(messages, call_info, base_seed)}").random() < rate


def break_answer(reading: Reading, contexts: Sequence[Context]) -> Reading:
    """The answer from the wrong passage: the first sentence of the last
    (lowest-ranked) retrieved chunk. Abstentions, and turns without a context,
    stay as they are."""
    if reading.abstained or not contexts:
        return reading
    last = contexts[-1]
    sentences = split_sentences(last.text)
    if not sentences:
        return reading
    return replace(reading, answer=sentences[0], sentences=[(sentences[0], last.doc_id)])
