"""Text the plugin did not write, made inert for a CSV file a person opens in a spreadsheet
(review.csv, a drafted golden set's review sheet): the one rule both writers use.

A cell that starts like a formula (OWASP's list: ``=``, ``+``, ``-``, ``@``, a tab or a
carriage return) gets a leading ``'`` so the spreadsheet shows it as the text it is (the
bot's answer ``=HYPERLINK(...)`` is not a link). A plain number (``-2``, ``+1.5``) cannot
run as a formula and stays a number."""

from __future__ import annotations

import re

__all__ = ["inert_cell"]

#: what a spreadsheet reads as the start of a formula
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")


def inert_cell(value: str) -> str:
    """``value`` as a CSV cell a spreadsheet shows as text (a plain number stays a number)."""
    if value.startswith(_FORMULA_START) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value
