"""``ragdive export-review`` and ``ragdive import-review``: a human spot check of
generated turns with the RAG-DIVE study's criteria. The generated conversations
come from the example bot talking to a simulator on the fake LLM server."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest
from example_outcome import EXAMPLE

from pytest_ragdive.cli import main
from pytest_ragdive.cli.review_export import COLUMNS
from pytest_ragdive.cli.review_import import read_ratings, summarize
from pytest_ragdive.core.records import Conversation
from pytest_ragdive.gate.conclude import RunFacts, conclude
from pytest_ragdive.reports.write import write_reports
from pytest_ragdive.run.api import run_suite
from pytest_ragdive.testing import FakeLLMServer, config_for, example_from_schema

CORPUS = EXAMPLE / "corpus" / "helpcentre.jsonl"


def simulator(body: dict[str, Any]) -> Any:
    """Asks about the article it was given; the validator accepts; judges give a minimal verdict."""
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    title = schema.get("title", "")
    if title == "GeneratedTurn":
        msgs = [m for m in body["messages"] if m["role"] != "system"]
        found = re.search(r'Information source: "([^"]*)"', msgs[0]["content"])
        topic = found.group(1) if found else "it"
        n = sum(1 for m in msgs if m["role"] == "assistant")
        if n == 0:
            q = f"What does {topic} say?"
            return {"rag_input": q, "standalone_question": q, "ground_truth": "What the article says.", "question_type": "Initial"}
        return {"rag_input": f"And what else ({n + 1})?", "standalone_question": f"What else does {topic} say ({n + 1})?",
                "ground_truth": "More of the article.", "question_type": "Follow-up"}
    if title == "ValidatorOutput":
        return {"valid": True, "reason": "ok", "failed_checks": []}
    return example_from_schema(schema)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from example_rag import make_bot

    tmp = tmp_path_factory.mktemp("review")
    convs: list[Conversation] = []
    with FakeLLMServer(simulator) as server:
        cfg = config_for(
            server, corpus=str(CORPUS), cache_dir=str(tmp / "cache"),
            llm={"transport": "openai_http", "timeout_s": 5, "max_retries": 0},
            suites={"core": {"generated": {"conversations": 4, "turns": 3, "roles": ["default", "referrer"], "seed": 7}}},
        )
        run_suite(make_bot(), cfg, "core", conversations=convs)
    assert len(convs) == 4 and all(c.source == "generated" and len(c.turns) == 3 for c in convs)
    outcome = conclude(convs, cfg, None, RunFacts(planned=len(convs), backend="llm"))
    write_reports(tmp / "report", outcome)  # the results.json a run writes
    return tmp / "report" / "results.json"


def rows_of(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def test_export_samples_generated_turns_with_the_study_criteria(results: Path, tmp_path: Path) -> None:
    out = tmp_path / "review.csv"
    assert main(["export-review", str(results), "-o", str(out), "--sample", "5", "--corpus", str(CORPUS)]) == 0
    rows = rows_of(out)
    assert tuple(rows[0]) == COLUMNS
    turns = [r for r in rows if r["level"] == "turn"]
    dialogues = [r for r in rows if r["level"] == "dialogue"]
    assert len(turns) == 5 and len({r["item"] for r in turns}) == 5
    assert {r["conversation"] for r in dialogues} == {r["conversation"] for r in turns}
    assert all(r["rag_input"] and r["ground_truth"] and r["answer"] and r["validator"] == "valid" for r in turns)
    assert all(r[c] == "" for r in rows for c in ("correct", "answerable", "plausible", "diverse", "coherent"))
    convs = {c["id"]: c for c in json.loads(results.read_text())["conversations"]}
    d = dialogues[0]
    conv = convs[d["conversation"]]
    assert d["transcript"].startswith("Q1: " + conv["turns"][0]["rag_input"])
    doc = next(json.loads(line) for line in CORPUS.read_text().splitlines() if json.loads(line)["id"] == conv["document_id"])
    assert d["document_text"] and d["document_text"] in doc["text"]

    # the same seed samples the same turns; another seed others; an existing file is kept
    again = tmp_path / "again.csv"
    assert main(["export-review", str(results), "-o", str(again), "--sample", "5"]) == 0
    assert [r["item"] for r in rows_of(again)] == [r["item"] for r in rows]
    assert main(["export-review", str(results), "-o", str(again), "--sample", "5", "--seed", "3"]) == 4
    assert main(["export-review", str(results), "-o", str(again), "--sample", "5", "--seed", "3", "--force"]) == 0
    assert [r["item"] for r in rows_of(again)] != [r["item"] for r in rows]


def test_export_without_generated_turns_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from example_outcome import example_outcome

    outcome = example_outcome(history="full", gate=False, markup=False)
    path = write_reports(tmp_path / "report", outcome)[0]
    assert main(["export-review", str(path), "-o", str(tmp_path / "r.csv"), "--sample", "3"]) == 4
    assert "no generated turns" in capsys.readouterr().err
    assert main(["export-review", str(path), "-o", str(tmp_path / "r.csv"), "--sample", "3", "--source", "all"]) == 0


def fill(src: Path, dst: Path, rater: str, no: dict[str, set[int]]) -> None:
    """A rater's copy: yes everywhere except the listed (criterion -> row numbers among that level's rows)."""
    rows = rows_of(src)
    seen = {"turn": 0, "dialogue": 0}
    for r in rows:
        k = seen[r["level"]]
        seen[r["level"]] += 1
        crit = ("correct", "answerable", "plausible") if r["level"] == "turn" else ("diverse", "coherent")
        for c in crit:
            r[c] = "no" if k in no.get(c, set()) else "yes"
        r["rater"] = rater
    with dst.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(COLUMNS))
        w.writeheader()
        w.writerows(rows)


def test_import_reports_share_and_agreement_per_criterion(results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "review.csv"
    assert main(["export-review", str(results), "-o", str(src), "--sample", "8"]) == 0
    a, b = tmp_path / "alice.csv", tmp_path / "bob.csv"
    # 8 turns: alice says no to answerable on turns 0 and 1, bob on turns 1 and 2
    fill(src, a, "alice", {"answerable": {0, 1}, "coherent": {0}})
    fill(src, b, "bob", {"answerable": {1, 2}})
    s = summarize(read_ratings([a, b]))
    ans = s.criteria["answerable"]
    assert ans.by_rater == {"alice": 0.75, "bob": 0.75} and ans.rated == {"alice": 8, "bob": 8}
    assert ans.agreement == pytest.approx(6 / 8)
    # Cohen's kappa: po = 0.75, pe = 0.75^2 + 0.25^2 = 0.625 -> (0.75 - 0.625) / 0.375
    assert ans.kappa == pytest.approx(1 / 3)
    assert s.criteria["correct"].agreement == 1.0 and s.criteria["correct"].kappa == 1.0
    assert s.criteria["coherent"].level == "dialogue" and s.criteria["coherent"].by_rater["bob"] == 1.0

    assert main(["import-review", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "2 rater(s); 8 turn(s)" in out
    assert re.search(r"^alice\s+100\.0% \(8\)\s+75\.0% \(8\)", out, re.M)
    assert re.search(r"^agreement\s+100\.0%\s+75\.0%", out, re.M)
    assert re.search(r"^Cohen's kappa\s+1\.00\s+0\.33", out, re.M)
    assert "Table 1" in out

    # one file, no rater column filled: the file name is the rater; no agreement to report
    assert main(["import-review", str(a), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["raters"] == ["alice"] and data["criteria"]["answerable"]["agreement"] is None


def test_import_rejects_bad_ratings_with_file_and_line(results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "review.csv"
    assert main(["export-review", str(results), "-o", str(src), "--sample", "3"]) == 0
    rows = rows_of(src)
    rows[1]["correct"] = "maybe"
    bad = tmp_path / "bad.csv"
    with bad.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(COLUMNS))
        w.writeheader()
        w.writerows(rows)
    assert main(["import-review", str(bad)]) == 4
    assert f"{bad}:3: column correct" in capsys.readouterr().err
    rows[1]["correct"] = ""
    rows[1]["coherent"] = "yes"  # a dialogue criterion on a turn row
    with bad.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(COLUMNS))
        w.writeheader()
        w.writerows(rows)
    assert main(["import-review", str(bad)]) == 4
    assert "coherent is rated per dialogue" in capsys.readouterr().err
    assert main(["import-review", str(src)]) == 4  # nothing rated yet
    assert "no ratings found" in capsys.readouterr().err
