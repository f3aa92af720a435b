"""report.html's answers with their units drawn in (issue 34): escaping a stretch of text at a
time gives the page that escaping word by word gave."""

from __future__ import annotations

import random

from pytest_ragdive.core.records import Support
from pytest_ragdive.reports.html_conv import marked


def test_units_drawn_by_stretches_are_the_word_by_word_html() -> None:
    words = ["Returns", "take", "30", "days.", "<b>", "&", "\"quoted\"", "it's", "[doc-1]", "\n", "  ", "refund"]
    rng = random.Random(7)
    drawn = 0
    for _ in range(500):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(0, 14)))
        units = []
        for _ in range(rng.randint(0, 3)):
            a = rng.randint(0, len(text))
            b = rng.randint(a, len(text))
            units.append(Support(text=text[a:b], start=a if rng.random() < 0.9 else None, end=b, score=rng.random(),
                                 verdict=rng.choice(["supported", "partial", "unsupported"]), span="<s> & \"x\"",
                                 missing=["a<b"]))
        word_by_word = marked(text, units, {-1})  # a changed set no word is in: the word-by-word path, nothing marked
        assert marked(text, units) == word_by_word, (text, units)
        drawn += "<span" in word_by_word
    assert drawn > 100
