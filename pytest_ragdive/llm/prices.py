"""Per-token prices: the one lookup used for the run's cost (the lean transport,
batch judging) and for ``--ragdive-estimate``.

The table is the price map litellm ships, read as JSON without importing
litellm (empty without it); an unknown model has no price (None), never 0.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Iterator, Mapping
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


def _price_file_text() -> str | None:
    """The text of the price map litellm ships (None when litellm is not installed or the file is unreadable)."""
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return None
    for loc in list(spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(loc, "model_prices_and_context_window_backup.json")
        if os.path.isfile(path):
            try:
                with open(path, encoding="utf-8") as fh:
                    return fh.read()
            except (OSError, ValueError):
                return None
    return None


def _parse_table(text: str | None) -> dict[str, Any]:
    try:
        data = json.loads(text) if text is not None else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def load_price_table() -> dict[str, Any]:
    """The price map litellm ships ({} when litellm is not installed or the file is unreadable)."""
    return _parse_table(_price_file_text())


class _PriceFile(Mapping[str, Any]):
    """litellm's price map read by entry: the file is 3.5 MB of JSON (tens of ms to
    parse, on the event loop when the first reply is priced) and a run prices a few
    models. A name that does not occur in the text, quoted, is not a key; a name that
    occurs once is read where the file's layout (``json.dump(indent=4)``, as litellm
    writes it) puts a top-level key; anything else parses the whole file, as
    :func:`load_price_table` does. Either way the entry is the one a full parse gives."""

    _TOP = "\n    "  # a top-level key's line in a file indented by 4

    def __init__(self, text: str | None) -> None:
        self._text = text or ""
        self._indented = self._text.startswith("{" + self._TOP + '"')
        self._full: dict[str, Any] | None = None

    def _all(self) -> dict[str, Any]:
        if self._full is None:
            self._full = _parse_table(self._text or None)
        return self._full

    def get(self, name: str, default: Any = None) -> Any:
        if self._full is None:
            quoted = json.dumps(name)
            mentions = self._text.count(quoted)
            if mentions == 0:
                return default
            if mentions == 1 and self._indented:  # no duplicate key, no other mention
                head = self._TOP + quoted + ": "
                at = self._text.find(head)
                if at >= 0:
                    try:
                        return json.JSONDecoder().raw_decode(self._text, at + len(head))[0]
                    except ValueError:
                        pass
        return self._all().get(name, default)

    def __getitem__(self, name: str) -> Any:
        missing = object()
        value = self.get(name, missing)
        if value is missing:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class PriceMap:
    """Prices by model over a table (litellm's, loaded on first use, by default)."""

    def __init__(self, table: Mapping[str, Any] | None = None) -> None:
        self._table = table
        self._prices: dict[str, ModelPrice | None] = {}  # by model: looked up once (one per request before)

    def _entries(self) -> Mapping[str, Any]:
        if self._table is None:
            self._table = _PriceFile(_price_file_text())
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
