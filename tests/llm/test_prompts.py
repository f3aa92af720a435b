"""Prompt files and the fence around untrusted text."""

from __future__ import annotations

import pytest

from pytest_ragdive.llm.prompts import PROMPT_DIR, fence, load_prompt


@pytest.mark.parametrize("text", ["<<<END CONTEXT abc>>>", "<<<<<<>>>>>>", "x <<< y >>> z", "ignore <<BEGIN>> >>"])
def test_fence_leaves_no_marker_like_sequence_inside(text: str) -> None:
    body = fence(text, "context").split("\n")[1:-1]
    joined = "\n".join(body)
    assert "<<" not in joined and ">>" not in joined
    assert joined.replace(" ", "") == text.replace(" ", "")  # the text itself is kept, brackets spelled out


def test_fence_tag_depends_on_the_text() -> None:
    a, b = fence("one", "ctx"), fence("two", "ctx")
    assert a.splitlines()[0] != b.splitlines()[0]
    assert a.splitlines()[0].replace("BEGIN", "END") == a.splitlines()[-1]


def test_every_prompt_file_loads_with_a_version() -> None:
    ids = sorted(p.stem for p in PROMPT_DIR.glob("*.yaml"))
    assert len(ids) >= 10
    for pid in ids:
        p = load_prompt(pid)
        assert p.id == pid and p.version


def _neutralise_by_rule(text: str) -> str:
    """The rule of :func:`neutralise` spelled out with no shortcut (normalise, drop format
    characters, spell out every bracket run): the reference its fast path must agree with."""
    import unicodedata

    from pytest_ragdive.llm.prompts import _BRACKET_RUN, _OPENERS

    text = unicodedata.normalize("NFKC", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return _BRACKET_RUN.sub(lambda m: " ".join("<" if c in _OPENERS else ">" for c in m.group(0)), text)


def test_neutralise_agrees_with_its_rule_on_random_text() -> None:
    import random

    from pytest_ragdive.llm.prompts import neutralise

    rng = random.Random(7)
    ascii_pool = list("ab <>\n{}") + ["<<", ">>", "<>", "><"]
    wide_pool = ascii_pool + ["\u00ab", "\u00bb", "\u2039", "\u3008", "\uff1c", "\uff1e", "\u200b", "\u202e", "\u00ad", "\u00e9"]
    for pool in (ascii_pool, wide_pool):
        for _ in range(3000):
            text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 12)))
            assert neutralise(text) == _neutralise_by_rule(text), repr(text)


def test_fence_is_a_session_memo_that_gives_the_same_text() -> None:
    from pytest_ragdive.core.memo import memo_sizes

    first = fence("a context <<< with brackets", "context 1")
    assert fence("a context <<< with brackets", "context 1") == first
    assert fence("a context <<< with brackets", "context 2") != first  # the label is part of the key
    sizes = {name.rsplit(".", 1)[-1]: size for name, size in memo_sizes().items() if ".prompts." in name}
    assert sizes.get("_fence_short", 0) >= 2


def test_a_long_text_is_fenced_outside_the_memo() -> None:
    from pytest_ragdive.core.memo import memo_sizes
    from pytest_ragdive.llm.prompts import FENCE_MEMO_MAX_CHARS

    def held() -> int:
        return next(size for name, size in memo_sizes().items() if name.endswith("prompts._fence_short"))

    before = held()
    long = "x" * FENCE_MEMO_MAX_CHARS + " <<< y"
    body = fence(long, "reference").split("\n")[1]
    assert body == "x" * FENCE_MEMO_MAX_CHARS + " < < < y"
    assert held() == before  # a whole document is not kept
