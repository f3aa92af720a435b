"""benchmarks/bench_scoring_sizes.py: the gated command's core suite on a bot whose answers and
contexts have the sizes asked for, the bot's own CPU measured apart from the plugin's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO, load_benchmark

pytestmark = pytest.mark.slow  # starts processes of its own


def test_the_bot_answers_in_the_sizes_asked_and_the_plugin_scores_every_turn(tmp_path: Path) -> None:
    b = load_benchmark("bench_scoring_sizes")
    b.make_project(tmp_path, 2, b.sentences())
    r = b.run(tmp_path, REPO, 4, 6)
    assert r["calls"] >= 2 * 5 and 0 < r["target"] < r["cpu"]  # every turn asked the bot; its CPU is apart
    data = json.loads((tmp_path / "report" / "results.json").read_text())
    turns = [t for c in data["conversations"] for t in c["turns"]]
    assert len(turns) == 10 and all(len(t["contexts"]) == 5 for t in turns)
    assert all(len(c["text"].split(". ")) == 6 for t in turns for c in t["contexts"])  # six sentences a context
    assert all(t["answer"].count(".") == 4 for t in turns)  # four sentences an answer
    # half of the answer is copied from the first context, half from elsewhere: faithfulness sees it
    assert all(t["scores"]["faithfulness"] is not None and 0 < t["scores"]["faithfulness"] < 1 for t in turns)
