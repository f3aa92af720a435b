"""The example bot's sampling knob: ``EXAMPLE_RAG_TEMPERATURE`` (default 0: deterministic).

With a temperature ``T > 0`` the reader no longer takes the best-scoring
sentence: it draws one at random with probability proportional to
``score ** (1 / T)`` (ties are broken at random too), so repeated runs of the
same conversation differ as an LLM's do. ``T = 1`` draws in proportion to the
scores; smaller values stay closer to the best sentence.

The draw is seeded per call: from the ``call_info`` the plugin gives the bot
(a seed stable for one conversation in one run, and the turn), else from
``EXAMPLE_RAG_SEED`` and the messages. The same run repeats exactly; another
run (``--ragdive-runs``) draws differently.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from pytest_ragdive import CallInfo

T = TypeVar("T")


class Sampler:
    def __init__(self, temperature: float, seed: str) -> None:
        if temperature <= 0:
            raise ValueError("the sampling temperature must be > 0")
        self.temperature = temperature
        self.rng = random.Random(seed)

    def pick(self, items: Sequence[T], score: Callable[[T], float]) -> T:
        """One item drawn with probability proportional to ``score ** (1 / T)``."""
        weights = [max(0.0, score(i)) ** (1.0 / self.temperature) for i in items]
        if not any(weights):
            return self.rng.choice(list(items))
        return self.rng.choices(list(items), weights=weights, k=1)[0]


def pick(items: Sequence[T], key: Callable[[T], tuple[float, int]], sampler: Sampler | None) -> T:
    """The reader's choice: the best item by ``key`` (deterministic), or a draw by its score."""
    if sampler is None:
        return max(items, key=key)
    return sampler.pick(items, lambda i: key(i)[0])


def sampler_for(
    temperature: float, messages: Sequence[Mapping[str, str]], call_info: CallInfo | None, base_seed: int = 0
) -> Sampler | None:
    """The sampler of one call (None at temperature 0)."""
    if temperature <= 0:
        return None
    return Sampler(temperature, call_seed(messages, call_info, base_seed))


def call_seed(messages: Sequence[Mapping[str, str]], call_info: CallInfo | None, base_seed: int = 0) -> str:
    """The seed of one call: from ``call_info`` (stable per conversation, run and turn)
    when the plugin gives it, else from the messages."""
    if call_info is not None:
        return f"{base_seed}:{call_info.seed}:{call_info.turn}"
    text = "\x00".join(f"{m.get('role')}:{m.get('content')}" for m in messages)
    return f"{base_seed}:{hashlib.sha256(text.encode()).hexdigest()}"
