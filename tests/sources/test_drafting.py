"""draft-golden: a golden set drafted from documents by the user's LLM (FakeLLMServer here),
checked by the RAG-DIVE validator, marked for review (never gated), reviewed with the
export-review CSV layout and moved into a suite's golden file by import-review --accept."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_ragdive.cli import main
from pytest_ragdive.core.errors import GoldenError
from pytest_ragdive.llm.prices import ModelPrice
from pytest_ragdive.scaffold.project import golden_text
from pytest_ragdive.sources import accept, drafting
from pytest_ragdive.sources.golden import each_conversation, load_conversations
from pytest_ragdive.testing import FAKE_KEY_ENV, FakeLLMServer, default_handler

DOCS = {
    "refunds.md": "# Refunds\nRefunds are paid within 5 working days. The refund goes back to the card. "
                  "Shipping is refunded only for faulty items.\n",
    "returns.md": "# Returns\nYou can return an item within 30 days. Print the label from your account. "
                  "Drop the parcel at any post office.\n",
    "guides/delivery.md": "# Delivery\nStandard delivery takes 3 to 5 days. Express arrives the next day. "
                          "Delivery is free above 50 euros.\n",
}


def corpus(root: Path) -> Path:
    for name, text in DOCS.items():
        (root / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "docs" / name).write_text(text)
    (root / "docs" / "image.png").write_bytes(b"\x89PNG")  # not a document
    return root / "docs"


def test_documents_ids_and_titles(tmp_path: Path) -> None:
    docs = drafting.load_documents(corpus(tmp_path))
    assert [(d.id, d.title) for d in docs] == [
        ("guides/delivery.md", "Delivery"), ("refunds.md", "Refunds"), ("returns.md", "Returns")]
    (tmp_path / "empty").mkdir()
    with pytest.raises(GoldenError, match="no documents"):
        drafting.load_documents(tmp_path / "empty")


def test_the_plan_covers_every_kind_and_is_seeded(tmp_path: Path) -> None:
    docs = drafting.load_documents(corpus(tmp_path))
    tasks = drafting.plan(docs, 2, seed=3)
    assert [t.kind for t in tasks] == [k for k in drafting.KINDS for _ in range(2)]
    assert tasks == drafting.plan(docs, 2, seed=3)
    by_kind = {t.kind: t for t in tasks}
    assert len(by_kind["multi_document"].doc_ids) == 2 == len(set(by_kind["distracting"].doc_ids))
    assert by_kind["conversation"].turns == 3 and by_kind["simple"].turns == 1
    assert set(by_kind["out_of_scope"].doc_ids) == {d.id for d in docs}
    one = drafting.plan(docs[:1], 1)
    assert [t.kind for t in one] == ["simple", "out_of_scope", "conversation"]  # two-document kinds left out
    with pytest.raises(GoldenError, match="unknown draft kind"):
        drafting.plan(docs, 1, kinds=["trivia"])


def test_the_estimate_counts_calls_tokens_and_prices(tmp_path: Path) -> None:
    docs = drafting.load_documents(corpus(tmp_path))
    by_id = {d.id: d for d in docs}
    tasks = drafting.plan(docs, 2)
    price = ModelPrice(input=1e-6, output=4e-6)
    est = drafting.estimate(tasks, by_id, "m1", "m2", lambda m: price)
    turns = sum(t.turns for t in tasks)
    assert est.cases == 10 and est.drafter_calls == round(10 * 1.25) and est.validator_calls == round(turns * 1.25)
    prompt_chars = sum(len(m["content"]) for t in tasks for m in drafting.messages_for(t, by_id)[1])
    assert est.prompt_tokens > prompt_chars * 1.25 / 4  # the drafter's prompts, plus the validator's
    assert est.cost_usd == pytest.approx(est.prompt_tokens * 1e-6 + est.completion_tokens * 4e-6, rel=1e-3)
    unknown = drafting.estimate(tasks, by_id, "m1", "m2", lambda m: None if m == "m2" else price)
    assert unknown.cost_usd is None and "unknown" in unknown.lines()[0]


def _draft(tmp: Path, server: FakeLLMServer, *extra: str) -> int:
    return main(["draft-golden", str(tmp / "docs"), "--model", "openai/fake-model", "--api-base", server.url,
                 "--api-key-env", FAKE_KEY_ENV, "--cache-dir", str(tmp / "cache"), *extra])


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    corpus(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(FAKE_KEY_ENV, "fake-key")
    return tmp_path


def test_draft_golden_end_to_end_offline(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeLLMServer() as server:
        assert _draft(project, server, "--estimate") == 0
        assert server.request_count == 0  # the estimate makes no call
        assert "draft-golden estimate: 10 case(s)" in capsys.readouterr().out
        assert _draft(project, server) == 0
        out = capsys.readouterr().out
        calls = server.request_count
        prompts = [m["content"] for r in server.requests for m in r["messages"] if m["role"] == "system"]
    assert out.index("estimate") < out.index("10 of 10 case(s) drafted and valid")
    assert "import-review golden/drafts/core-review.csv --accept golden/drafts/core.yaml" in out
    assert {p.split("(prompt id: ")[1].split(")")[0] for p in prompts} == {
        *(f"draft_{k}" for k in drafting.KINDS), "validator_turn"}
    drafts = project / "golden" / "drafts" / "core.yaml"
    convs = list(each_conversation(drafts))
    assert len(convs) == 10 and not any(c.reviewed for c in convs)
    with pytest.raises(GoldenError, match="reviewed: false"):
        load_conversations(drafts)  # an unreviewed draft never gates
    kinds = {c.category for c in convs}
    assert kinds == set(drafting.KINDS)
    for c in convs:
        for i, t in enumerate(c.turns):
            assert t.standalone_question and t.ground_truth
            assert t.question_type == ("Initial" if i == 0 else "Follow-up")
        if c.category == "out_of_scope":
            assert c.turns[0].relevant_doc_ids == [] and "don't know" in c.turns[0].ground_truth
        else:
            assert c.turns[0].relevant_doc_ids and set(c.turns[0].relevant_doc_ids) <= set(DOCS)
        if c.category == "multi_document":
            assert len(c.turns[0].relevant_doc_ids) == 2
        if c.category == "conversation":
            assert len(c.turns) == 3
            later = c.turns[1]
            assert " it " in later.rag_input and later.standalone_question != later.rag_input
    rows = list(csv.DictReader((project / "golden" / "drafts" / "core-review.csv").open()))
    assert sum(r["level"] == "turn" for r in rows) == 14 and sum(r["level"] == "dialogue" for r in rows) == 2
    assert all(r["validator"] == "valid" and r["document_text"] for r in rows if r["level"] == "turn"
               and r["role"] != "out_of_scope")
    # a rerun is answered from the cache; the drafts are not overwritten without --force
    with FakeLLMServer() as again:
        assert _draft(project, again) == 4
        assert _draft(project, again, "--force") == 0
        assert again.request_count == 0 and calls > 0


def test_invalid_drafts_are_redrafted_once_then_dropped(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def handler(body: dict[str, Any]) -> Any:
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
        text = json.dumps(body["messages"])
        if schema == "ValidatorOutput" and "seashells" in text:
            return {"valid": False, "reason": "the documents cover payment", "failed_checks": ["ground_truth_unsupported"]}
        return default_handler(body)

    with FakeLLMServer(handler) as server:
        assert _draft(project, server, "--kinds", "simple,out_of_scope", "--per-kind", "1") == 0
        feedback = [r for r in server.requests if "rejected by the validator" in json.dumps(r["messages"])]
    assert len(feedback) == 1 and "the documents cover payment" in json.dumps(feedback[0]["messages"])
    text = (project / "golden" / "drafts" / "core.yaml").read_text()
    assert "# dropped (1): draft-out-of-scope-01: validator: turn 1: the documents cover payment" in text
    assert [c.category for c in each_conversation(project / "golden" / "drafts" / "core.yaml")] == ["simple"]
    assert "1 of 2 case(s) drafted and valid" in capsys.readouterr().out


def _rate(path: Path, no: set[str] = frozenset(), skip: set[str] = frozenset(), rater: str = "ana") -> Path:
    rows = list(csv.DictReader(path.open()))
    for r in rows:
        r["rater"] = rater
        if r["conversation"] in skip:
            continue
        for c in (("correct", "answerable", "plausible") if r["level"] == "turn" else ("diverse", "coherent")):
            r[c] = "no" if r["conversation"] in no and c in ("correct", "coherent") else "yes"
    out = path.with_name(f"{rater}.csv")
    with out.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return out


def test_import_review_accepts_into_the_suite_and_keeps_the_rest(project: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with FakeLLMServer() as server:
        assert _draft(project, server) == 0
    golden = project / "golden" / "core" / "conversations.yaml"
    golden.parent.mkdir(parents=True)
    golden.write_text(golden_text("core"))  # what init writes: comments and an empty list
    drafts = project / "golden" / "drafts" / "core.yaml"
    ids = {c.id.rsplit("-", 1)[0]: c.id for c in each_conversation(drafts)}  # draft-simple-01-<hash of its question>
    simple, conv = ids["draft-simple-01"], ids["draft-conversation-02"]
    filled = _rate(project / "golden" / "drafts" / "core-review.csv", no={simple}, skip={conv})
    assert main(["import-review", str(filled), "--accept", str(drafts), "--into", str(golden)]) == 0
    out = capsys.readouterr().out
    assert "8 accepted into" in out and "1 rejected and 1 not rated yet" in out
    kept = load_conversations(golden)  # loads: every conversation reviewed
    assert len(kept) == 8 and simple not in {c.id for c in kept}
    text = golden.read_text()
    assert text.startswith("# The core suite's golden conversations") and "# conversations:" in text
    assert "reviewed by ana" in text
    left = list(each_conversation(drafts))
    assert {c.id for c in left} == {simple, conv} and not any(c.reviewed for c in left)
    assert f"# rejected: {simple}#turn1 correct (rater ana)" in drafts.read_text()
    # the rest rated later: appended under the ones already there
    filled = _rate(project / "golden" / "drafts" / "core-review.csv", rater="bo")
    assert main(["import-review", str(filled), "--accept", str(drafts), "--into", str(golden)]) == 0
    assert len(load_conversations(golden)) == 10 and "conversations: []" in drafts.read_text()
    assert main(["import-review", str(filled), "--accept", str(drafts), "--into", str(golden)]) == 0
    assert "0 accepted" in capsys.readouterr().out and len(load_conversations(golden)) == 10


def test_accept_never_writes_a_golden_file_the_loader_refuses(tmp_path: Path) -> None:
    golden = tmp_path / "g.yaml"
    golden.write_text("conversations:\n  - id: a\n    turns:\n      - rag_input: hi\nextra: 1\n")
    with pytest.raises(GoldenError, match="not its last key"):
        accept.append_to_golden(golden.read_text(), ["  - id: b"])
    assert accept.append_to_golden("conversations: []\n", ["  - id: b", "    turns: []"]) == (
        "conversations:\n  - id: b\n    turns: []\n")
    assert accept.append_to_golden("- id: a\n  turns: []\n", ["  - id: b"]) == "- id: a\n  turns: []\n- id: b\n"


def test_init_draft_from_drafts_the_core_set(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeLLMServer() as server:
        assert main(["init", "--no-workflow", "--draft-from", "docs", "--model", "openai/fake-model",
                     "--api-base", server.url, "--api-key-env", FAKE_KEY_ENV]) == 0
    out = capsys.readouterr().out
    assert len(list(each_conversation(project / "golden" / "drafts" / "core.yaml"))) == 10
    nxt = out.split("next:")[1]
    assert "import-review golden/drafts/core-review.csv --accept golden/drafts/core.yaml" in nxt


def test_review_cells_that_look_like_formulas_stay_text() -> None:
    from pytest_ragdive.reports.csv_inert import inert_cell

    cells = ("=HYPERLINK(1)", "+1+cmd", "-2+3", "@a", "\tx", "plain", "", "-2", "+1.5", "-2 euros")
    assert [inert_cell(c) for c in cells] == [
        "'=HYPERLINK(1)", "'+1+cmd", "'-2+3", "'@a", "'\tx", "plain", "", "-2", "+1.5", "'-2 euros"]


def test_a_drafters_reply_is_normalised(tmp_path: Path) -> None:
    docs = {d.id: d for d in drafting.load_documents(corpus(tmp_path))}
    multi = drafting.DraftTask("m", "multi_document", ("refunds.md", "returns.md"))
    reply = drafting.GoldenDraft.model_validate({"turns": [
        {"rag_input": " Can I get my money back? ", "standalone_question": "other", "ground_truth": "Yes.",
         "question_type": "whatever", "relevant_doc_ids": ["Refunds", "nope.md"]}]})
    (t,) = drafting._clean(multi, reply, docs)
    # titles or unknown names are not ids: the documents it was drafted from; turn 1 stands alone
    assert (t.rag_input, t.standalone_question, t.question_type) == ("Can I get my money back?",) * 2 + ("Initial",)
    assert t.relevant_doc_ids == ["refunds.md", "returns.md"]
    conv = drafting.DraftTask("c", "conversation", ("refunds.md",), turns=2)
    reply = drafting.GoldenDraft.model_validate({"turns": [
        {"rag_input": "q1", "ground_truth": "a1", "relevant_doc_ids": ["refunds.md"]},
        {"rag_input": "and it?", "standalone_question": "q2", "ground_truth": "a2", "question_type": "follow up"},
        {"rag_input": "extra", "ground_truth": "a3"}]})
    turns = drafting._clean(conv, reply, docs)
    assert [(x.question_type, x.relevant_doc_ids) for x in turns] == [("Initial", ["refunds.md"]),
                                                                      ("Follow-up", ["refunds.md"])]
    oos = drafting.DraftTask("o", "out_of_scope", tuple(docs))
    reply = drafting.GoldenDraft.model_validate({"turns": [
        {"rag_input": "q", "ground_truth": "I don't know.", "relevant_doc_ids": ["refunds.md"]}]})
    assert drafting._clean(oos, reply, docs)[0].relevant_doc_ids == []


def test_export_review_of_drafts_after_a_fix(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeLLMServer() as server:
        assert _draft(project, server, "--kinds", "simple,conversation", "--per-kind", "1") == 0
    drafts = project / "golden" / "drafts" / "core.yaml"
    out = project / "again.csv"
    assert main(["export-review", str(drafts), "-o", str(out), "--corpus", "docs"]) == 0
    again = list(csv.DictReader(out.open()))
    first = list(csv.DictReader((project / "golden" / "drafts" / "core-review.csv").open()))
    assert [(r["item"], r["level"]) for r in again] == [(r["item"], r["level"]) for r in first]
    assert all(r["document_text"] for r in again if r["level"] == "turn")
    assert "every turn of 2 draft(s)" in capsys.readouterr().out
