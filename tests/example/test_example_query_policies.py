"""The example's retrieval-query policies (EXAMPLE_RAG_QUERY, separate from what the reader
sees) and its layout-sensitive reader (EXAMPLE_RAG_READER=first_clause): each does what it
says, and with neither set the bot is the shipped one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "example_project"
if str(EXAMPLE) not in sys.path:
    sys.path.insert(0, str(EXAMPLE))

from example_rag import BotConfig, HelpCentreBot  # noqa: E402
from example_rag.query_policy import retrieval_query, rewrite  # noqa: E402
from example_rag.styles import first_clause  # noqa: E402

INTENT = "How many API requests per minute does the plan allow, and how many days of video history does it keep?"
CLUE = "It is the Business plan."
DIALOGUE = [{"role": "user", "content": INTENT}, {"role": "assistant", "content": "Which plan?"},
            {"role": "user", "content": CLUE}]


def test_the_policies_build_the_retrieval_query() -> None:
    assert retrieval_query(DIALOGUE, "current").current == CLUE
    assert retrieval_query(DIALOGUE, "current").previous == ()
    assert retrieval_query(DIALOGUE, "history").current == f"{INTENT} {CLUE}"
    words = rewrite([INTENT, CLUE, CLUE])  # repeating a turn changes nothing
    assert words == rewrite([INTENT, CLUE]) and words.endswith("Business") and words.count("plan") == 1
    with pytest.raises(ValueError, match="unknown query policy"):
        retrieval_query(DIALOGUE, "everything")


def test_current_searches_the_message_alone_while_the_reader_keeps_the_dialogue() -> None:
    current = HelpCentreBot(BotConfig(query="current"))
    assert current.search_query(DIALOGUE).previous == () and current.query(DIALOGUE).previous == (INTENT,)
    alone = {c.doc_id for c in current.retrieve(DIALOGUE)}
    history = {c.doc_id for c in HelpCentreBot(BotConfig(query="history")).retrieve(DIALOGUE)}
    assert "api-rate-limits" in history and "api-rate-limits" not in alone  # the clue alone misses the article
    shipped = HelpCentreBot()
    assert shipped.config.query is None and shipped.search_query(DIALOGUE) == shipped.query(DIALOGUE)


def test_environment_knob() -> None:
    assert BotConfig.from_env({"EXAMPLE_RAG_QUERY": "Rewrite"}).query == "rewrite"
    assert BotConfig.from_env({}).query is None and BotConfig.from_env({}).reader == "extractive"
    with pytest.raises(ValueError, match="EXAMPLE_RAG_QUERY must be one of current, history, rewrite"):
        BotConfig.from_env({"EXAMPLE_RAG_QUERY": "all"})
    assert BotConfig.from_env({"EXAMPLE_RAG_READER": "first_clause"}).reader == "first_clause"


def test_first_clause_reads_the_first_statement_of_a_message() -> None:
    assert first_clause(INTENT) == INTENT  # one clause: as before
    assert first_clause(f"- {INTENT}\n- {CLUE}") == INTENT  # CONCAT's bullets: the first
    assert first_clause(f"To recap, here is everything I told you. Please answer my question:\n- {INTENT}\n- {CLUE}") \
        == INTENT  # a lead-in ending in ":" is skipped
    assert first_clause(f"Just to reiterate,\n- {INTENT}\n\nAlso,\n\n{CLUE}") == INTENT
    assert first_clause("Is it on Business? And the Pro plan?") == "Is it on Business?"


def test_first_clause_makes_concat_differ_from_full() -> None:
    full = [{"role": "user", "content": "How many API requests per minute does the Business plan allow?"}]
    concat = [{"role": "user", "content": "- How many API requests per minute does the plan allow?\n- It is the Business plan."}]
    shipped, layout = HelpCentreBot(), HelpCentreBot(BotConfig(reader="first_clause"))
    assert shipped(full).answer == layout(full).answer  # one clause: the same answer
    assert "600" in shipped(concat).answer and "600" not in layout(concat).answer  # the plan was in the second bullet
