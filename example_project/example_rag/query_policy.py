"""Retrieval-query policies (``EXAMPLE_RAG_QUERY``): what the retriever searches with,
separate from what the reader sees (``EXAMPLE_RAG_HISTORY``).

The sharded-RAG study's two policies, and a third:

- ``current``: the current user message only (the study's CURRENT): a follow-up such as
  "It is the Business plan." is searched on its own, while the reader still sees the
  dialogue its history policy keeps;
- ``history``: every user turn so far, concatenated (the study's HISTORY);
- ``rewrite``: a deterministic rewrite of the user turns into one keyword query, each
  content word once, in the order it was first said (what entity- and keyword-extracting
  retrievers do before searching: the query no longer depends on how the question was
  split, worded or repeated).

Unset, the retriever gets the history policy's query (the earlier turns with weights
that decay with their distance): the shipped behaviour, whose figures the example's
baseline records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .history import Query
from .text import tokenize

QUERY_POLICIES = ("current", "history", "rewrite")


def user_messages(messages: Sequence[Mapping[str, str]]) -> list[str]:
    """The user messages of a conversation, in order."""
    return [str(m.get("content", "")) for m in messages if m.get("role") == "user"]


def rewrite(turns: Sequence[str]) -> str:
    """The user turns as one keyword query: each word with a content token (stemmed, synonyms
    merged) the first time that token occurs, in order."""
    seen: set[str] = set()
    words: list[str] = []
    for turn in turns:
        for word in turn.split():
            toks = [t for t in tokenize(word) if t not in seen]
            if toks:
                seen.update(toks)
                words.append(word.strip(".,;:!?\"'()-"))
    return " ".join(w for w in words if w)


def retrieval_query(messages: Sequence[Mapping[str, str]], policy: str) -> Query:
    """The retriever's query for the last user message under ``policy`` (one of :data:`QUERY_POLICIES`)."""
    if policy not in QUERY_POLICIES:
        raise ValueError(f"unknown query policy {policy!r}, expected one of {', '.join(QUERY_POLICIES)}")
    turns = user_messages(messages)
    if not turns:
        raise ValueError("the conversation has no user message")
    if policy == "current":
        return Query(current=turns[-1])
    if policy == "history":
        return Query(current=" ".join(turns))
    return Query(current=rewrite(turns))
