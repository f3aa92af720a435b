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


def test_each_model_is_looked_up_once() -> None:
    """Every request is priced: the table is searched once per model, not once per request."""

    class Counting(dict):  # type: ignore[type-arg]
        gets = 0

        def get(self, *a, **k):  # type: ignore[no-untyped-def]
            Counting.gets += 1
            return super().get(*a, **k)

    prices = PriceMap(Counting({"gpt-4o": {"input_cost_per_token": 2e-6, "output_cost_per_token": 8e-6}}))
    costs = [prices.cost("openai/gpt-4o", 1000, 100) for _ in range(5)] + [prices.cost("nope", 1, 1) for _ in range(5)]
    assert costs[:5] == [pytest.approx(2e-3 + 8e-4)] * 5 and costs[5:] == [None] * 5
    searched = Counting.gets
    assert prices.cost("openai/gpt-4o", 10, 0) == pytest.approx(2e-5)
    assert Counting.gets == searched <= 4
