"""One price lookup for the run's cost and for the estimate (llm/prices.py)."""

from __future__ import annotations

import pytest

from pytest_ragdive.llm.prices import ModelPrice, PriceMap
from pytest_ragdive.run.estimate import price_map

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


def test_the_price_file_read_by_entry_gives_what_a_full_parse_gives() -> None:
    """litellm's 3.5 MB price map is read by entry (no full parse for a run's few models):
    a name that is not there, a duplicate key (the last one counts), an entry indented
    otherwise, a name only mentioned inside another entry: each as json.loads has it."""
    import json

    from pytest_ragdive.llm.prices import _PriceFile

    entries = {
        "gpt-x": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6, "base_model": "gpt-y"},
        "gpt-y": {"input_cost_per_token": 3e-6, "output_cost_per_token": 4e-6},
    }
    text = json.dumps(entries, indent=4)
    text = text[:-2] + ',\n"odd": {"input_cost_per_token": 5e-6, "output_cost_per_token": 6e-6},\n' + (
        '    "gpt-x": {"input_cost_per_token": 7e-6, "output_cost_per_token": 8e-6}\n}'
    )
    full = json.loads(text)
    assert full["gpt-x"]["input_cost_per_token"] == 7e-6  # the duplicate's last value
    for name in ("gpt-x", "gpt-y", "odd", "nope", "base_model", "input_cost_per_token"):
        assert _PriceFile(text).get(name) == full.get(name), name
    clean = _PriceFile(json.dumps(entries, indent=4))
    assert clean.get("gpt-x") == entries["gpt-x"] and clean._full is None  # read by entry, no full parse
    assert PriceMap(_PriceFile(text)).cost("openai/gpt-x", 1, 1) == pytest.approx(15e-6)


def test_litellms_price_file_by_entry_matches_its_full_parse() -> None:
    from pytest_ragdive.llm.prices import _price_file_text, _PriceFile, load_price_table

    text = _price_file_text()
    if text is None:
        pytest.skip("litellm is not installed")
    full = load_price_table()
    names = list(full)[::97] + ["openai/gpt-4o", "gpt-4o", "no-such-model", "input_cost_per_token"]
    for name in names:
        assert _PriceFile(text).get(name) == full.get(name), name
