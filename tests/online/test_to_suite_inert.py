"""logs-to-suite writes text from a log as data (issue 32, case 11): a crafted feedback category
stays inside its YAML comment and cannot add a conversation marked reviewed."""

from __future__ import annotations

import yaml

from pytest_ragdive.online.replay import LoggedConversation, LoggedTurn
from pytest_ragdive.online.to_suite import render_candidates, select

CRAFTED = "wrong_answer\n- id: injected\n  title: x\n  reviewed: true\n  turns:\n  - rag_input: hi\n"


def test_a_crafted_category_stays_in_its_comment_and_drafts_stay_unreviewed() -> None:
    for brk in ("\n", "\r", "\x85", "\u2028"):
        conv = LoggedConversation(id="c1", turns=[LoggedTurn(rag_input="q", answer="a", feedback=[CRAFTED.replace("\n", brk)])])
        text = render_candidates(select([conv], low_grounding=0.5, sample=0, seed=0))
        convs = yaml.safe_load(text)["conversations"]
        assert [c["id"] for c in convs] == ["c1"] and convs[0]["reviewed"] is False, text
        assert "reviewed: true" not in text.split("# kept for:")[1].split("\n")[1:]
