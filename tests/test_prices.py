"""One price lookup for the run's cost and for the estimate (llm/prices.py)."""

from __future__ import annotations

import pytest

from pytest_ragdive.estimate import price_map
from pytest_ragdive.llm.prices import ModelPrice, PriceMap

TABLE = {
    "gpt-x": {"input_cost_per_token": 2e-6, "output_cost_per_token": 8e-6,
              "input_cost_per_token_batches": 1e-6, "output_cost_per_token_batches": 4e-6},
    "no-batch": {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-6},
    "odd": {"input_cost_per_token": True, "output_cost_per_token": "1e-6"},
}


def test_a_request_is_priced_by_its_model_with_provider_prefixes_stripped() -> None:
    prices = PriceMap(TABLE)
    assert prices.cost("gpt-x", 1000, 100) == pytest.approx(1000 * 2e-6 + 100 * 8e-6)
    assert prices.cost("openai/gpt-x", 1000, 100) == prices.cost("gpt-x", 1000, 100)
    assert prices.cost("gpt-x", 1000, 100, batch=True) == pytest.approx(1000 * 1e-6 + 100 * 4e-6)
    assert prices.cost("no-batch", 10, 10, batch=True) == pytest.approx(20e-6)  # no batch rate: the normal one


def test_an_unknown_or_malformed_price_is_none_never_zero() -> None:
    prices = PriceMap(TABLE)
    assert prices.cost("unknown-model", 1000, 100) is None
    assert prices.price("odd") is None  # a bool or a string is not a price


def test_the_estimate_uses_the_same_lookup() -> None:
    price = price_map(TABLE)
    assert price("openai/gpt-x") == ModelPrice(input=2e-6, output=8e-6, batch_input=1e-6, batch_output=4e-6)
    assert price("unknown-model") is None
