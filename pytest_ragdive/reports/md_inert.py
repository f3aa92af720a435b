"""Text the plugin did not write (a bot's answer, a judge's reason, an error, a conversation
id from golden data), made inert for Markdown: summary.md, ``$GITHUB_STEP_SUMMARY`` and
pr-comment.md quote it with :func:`inert` only.

The text becomes one inline code span on one line: inside it GitHub neither mentions
(``@user``), nor links (``[x](url)``, bare URLs, ``#123``), nor embeds (``![x](url)``), nor
reads HTML (``<img>``, an unclosed ``<!--`` that would hide the rest of a comment). The span
is fenced by a run of backticks longer than any run inside the text, so the text cannot
close it; control characters and line breaks become spaces, so it cannot end the line or
the list item it sits in."""

from __future__ import annotations

import re

__all__ = ["inert"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029\u0085]")
_TICKS = re.compile(r"`+")
_LONG_TICKS = re.compile(r"`{8,}")


def inert(text: str, limit: int = 160, *, table: bool = False) -> str:
    """``text`` as an inline code span of at most about ``limit`` characters (clipped with
    "…"); ``table``: inside a table cell (``|`` escaped, as GFM reads it inside a span too)."""
    t = " ".join(_CONTROL.sub(" ", text).split())
    if len(t) > limit:
        t = t[: max(limit - 1, 1)] + "…"
    t = _LONG_TICKS.sub("```````", t)  # a fence never longer than eight
    if not t:
        return "(empty)"
    fence = "`" * (max((len(m) for m in _TICKS.findall(t)), default=0) + 1)
    pad = " " if t[0] == "`" or t[-1] == "`" else ""
    if table:
        t = t.replace("|", "\\|")
    return f"{fence}{pad}{t}{pad}{fence}"
