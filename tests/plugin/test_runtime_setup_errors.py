"""Set-up mistakes found once the run started are one line, exit 4, once, through the
preflight's ``ERROR:`` path (issue 32, case 12). Before: a ``ragdive_target`` fixture that
forgot its ``return`` failed every item (881 lines, exit 1)."""

from __future__ import annotations

import pytest
from conftest import TOY_CONFTEST
from test_preflight import setup_error

pytestmark = pytest.mark.slow  # pytester sessions


def test_a_target_fixture_that_returns_none_is_one_line(toy: pytest.Pytester) -> None:
    toy.makeconftest(TOY_CONFTEST.replace("    return bot\n", "    bot  # the return forgotten\n"))
    line = setup_error(toy)
    assert "ragdive_target fixture returned None" in line and "missing `return`" in line


def test_a_target_fixture_that_returns_something_not_callable_is_one_line(toy: pytest.Pytester) -> None:
    toy.makeconftest(TOY_CONFTEST.replace("    return bot\n", "    return {\"bot\": bot}\n"))
    line = setup_error(toy)
    assert "returned a dict, not callable" in line
