"""Per-token prices: the one lookup used for the run's cost (the lean transport,
batch judging) and for ``--ragdive-estimate``.

The table is the price map litellm ships, read as JSON without importing
litellm (empty without it); an unknown model has no price (None), never 0.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

# provider prefixes tried when the full name is not in the table ("openai/gpt-4o" -> "gpt-4o")
PREFIXES = ("openai/", "hosted_vllm/", "azure/", "anthropic/", "gemini/", "vertex_ai/", "bedrock/", "mistral/", "groq/")


class ModelPrice(BaseModel):
    """USD per token; the batch rates where the provider has a batch API."""

    input: float
    output: float
    batch_input: float | None = None
    batch_output: float | None = None

    def cost(self, prompt_tokens: int, completion_tokens: int, *, batch: bool = False) -> float:
        """USD of a request; ``batch``: at the batch rates where there are both (else the normal ones)."""
        inp, out = self.input, self.output
        if batch and self.batch_input is not None and self.batch_output is not None:
            inp, out = self.batch_input, self.batch_output
        return prompt_tokens * inp + completion_tokens * out


def load_price_table() -> dict[str, Any]:
    """The price map litellm ships ({} when litellm is not installed or the file is unreadable)."""
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return {}
    for loc in list(spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(loc, "model_prices_and_context_window_backup.json")
        if os.path.isfile(path):
            try:
                with open(path, encoding="utf-8") as fh:
                    data = json.load(fh)
            except (OSError, ValueError):
                return {}
            return data if isinstance(data, dict) else {}
    return {}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class PriceMap:
    """Prices by model over a table (litellm's, loaded on first use, by default)."""

    def __init__(self, table: Mapping[str, Any] | None = None) -> None:
        self._table = table
        self._prices: dict[str, ModelPrice | None] = {}  # by model: looked up once (one per request before)

    def _entries(self) -> Mapping[str, Any]:
        if self._table is None:
            self._table = load_price_table()
        return self._table

    def price(self, model: str) -> ModelPrice | None:
        if model in self._prices:
            return self._prices[model]
        price = self._prices[model] = self._lookup(model)
        return price

    def _lookup(self, model: str) -> ModelPrice | None:
        table = self._entries()
        entry = table.get(model)
        if entry is None:
            entry = next((table.get(model[len(p):]) for p in PREFIXES if model.startswith(p)), None)
        if not isinstance(entry, Mapping):
            return None
        inp, out = _number(entry.get("input_cost_per_token")), _number(entry.get("output_cost_per_token"))
        if inp is None or out is None:
            return None
        return ModelPrice(input=inp, output=out, batch_input=_number(entry.get("input_cost_per_token_batches")),
                          batch_output=_number(entry.get("output_cost_per_token_batches")))

    def cost(self, model: str, pt: int, ct: int, *, batch: bool = False) -> float | None:
        """USD of a request, None for a model without a price."""
        p = self.price(model)
        return None if p is None else p.cost(pt, ct, batch=batch)
