"""The zoo (benchmarks/zoo/) and benchmarks/bench_zoo.py: every bot answers, its golden
data loads with the plugin's own loaders, each knob changes what it says it changes,
the sampled bots repeat under a seed; and (slow) the bench records a baseline and gates
a knob with the real pytest command."""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import load_benchmark

from pytest_ragdive.sources.golden import load_conversations, load_corpus, load_single_turn

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "benchmarks") not in sys.path:
    sys.path.insert(0, str(ROOT / "benchmarks"))

from zoo import BOTS, HARMFUL, KNOBS, Knobs, make_bot  # noqa: E402
from zoo.common import INVENTED, change_numbers, reword  # noqa: E402
from zoo.http_bot import BotServer, target_config  # noqa: E402

OWN = [b for b in BOTS if b != "example"]
FOLLOW_UP = {  # a conversation of each domain whose follow-up leans on the first turn
    "keyword": ["How much does an e-bike cost per day?", "And what is the deposit for it?"],
    "rewriting": ["How long can I borrow books for?", "And what if I bring them back late?"],
    "abstractive": ["How often should I come for a check-up?", "What does it cost?"],
    "verbose": ["Can I take my bicycle on the train?", "Are there times when it is not allowed?"],
    "http": ["How much does a meeting room cost?", "Until when can I cancel one?"],
    "example": ["How many API requests per minute does the Pro plan allow?", "And on the Business plan?"],
}


def chat(bot: Any, questions: list[str], call_info: Any = None) -> Any:
    messages: list[dict[str, str]] = []
    reply = None
    for q in questions:
        messages.append({"role": "user", "content": q})
        reply = bot(messages, call_info)
        messages.append({"role": "assistant", "content": reply.answer})
    return reply


@pytest.mark.parametrize("name", OWN)
def test_golden_data_loads_with_the_plugins_loaders(name: str) -> None:
    data = ROOT / "benchmarks" / "zoo" / "data" / BOTS[name].domain
    docs = {d.id for d in load_corpus(data / "corpus.yaml")}
    cases = load_single_turn(data / "single_turn.jsonl")
    convs = load_conversations(data / "conversations.yaml")
    assert 8 <= len(docs) <= 15 and any(d.endswith(("-2022", "-2023")) for d in docs)  # archived twins
    assert len(cases) >= 5 and len(convs) >= 5
    ids = [c.question_id for c in cases] + [c.id for c in convs]
    assert len(ids) == len(set(ids))
    for conv in convs:
        assert len(conv.turns) >= 3
        for turn in conv.turns:
            assert turn.standalone_question and turn.ground_truth and set(turn.relevant_doc_ids) <= docs
    assert all(set(c.relevant_doc_ids) <= docs for c in cases)


@pytest.mark.parametrize("name", list(BOTS))
def test_every_knob_is_accepted_and_the_healthy_bot_retrieves_the_right_document(name: str) -> None:
    healthy = chat(make_bot(name, Knobs.of()), FOLLOW_UP[name][:1])
    assert healthy.answer and healthy.contexts and all(c.doc_id for c in healthy.contexts)
    for knob in KNOBS:
        assert chat(make_bot(name, Knobs.of(knob)), FOLLOW_UP[name]).answer


@pytest.mark.parametrize("name", OWN)
def test_harmful_knobs_change_what_they_name(name: str) -> None:
    def ask(*knobs: str) -> Any:
        return chat(make_bot(name, Knobs.of(*knobs)), FOLLOW_UP[name])

    def seen(reply: Any) -> tuple[str, list[str | None]]:
        return reply.answer, [c.doc_id for c in reply.contexts]

    healthy = ask()
    assert seen(ask("drop_history")) != seen(healthy)  # the follow-up alone is answered (or searched) otherwise
    assert any(s in ask("invent_fact").answer for s in INVENTED)
    assert ask("wrong_sentence").answer != healthy.answer
    assert len(ask("topk1").contexts) == 1 < len(healthy.contexts)
    outdated = ask("outdated_doc")
    assert {c.doc_id for c in outdated.contexts} != {c.doc_id for c in healthy.contexts}


def test_answer_knobs_on_the_keyword_bot() -> None:
    q = ["How much does an e-bike cost per day?", "And what is the deposit for it?"]
    healthy = chat(make_bot("keyword", Knobs.of()), q)
    assert healthy.answer.startswith("The deposit for an e-bike is 400 euros.")
    assert "800 euros" in chat(make_bot("keyword", Knobs.of("change_number")), q).answer
    assert chat(make_bot("keyword", Knobs.of("courtesy")), q).answer.startswith("Happy to help! The deposit")
    cited = chat(make_bot("keyword", Knobs.of("cite")), q)
    assert "[deposits]" in cited.answer and cited.citations == ["deposits"]
    assert chat(make_bot("keyword", Knobs.of("reorder")), q).answer.startswith("The deposit for a city bike")
    outdated = chat(make_bot("keyword", Knobs.of("outdated_doc")), q)
    assert "deposits-2023" in [c.doc_id for c in outdated.contexts] and "300 euros" in outdated.answer
    assert "deposits" not in [c.doc_id for c in chat(make_bot("keyword", Knobs.of("drop_history")), q[:1]).contexts]


def test_text_knobs() -> None:
    assert change_numbers("open 8:00 to 20:00, 3.20 euros, 2,200 euros, 15 percent") == (
        "open 10:00 to 22:00, 6.4 euros, 4,400 euros, 30 percent"
    )
    assert reword("An e-book loan costs 3 euros; customers must pay within 2 days.") == (
        "An e-book loan comes to 3 euros; clients have to pay inside 2 days."
    )
    with pytest.raises(ValueError, match="unknown knob"):
        Knobs.of("drop_everything")
    assert Knobs.from_env({"ZOO_KNOBS": "healthy"}).names == frozenset()
    assert Knobs.from_env({"ZOO_KNOBS": "topk1, cite", "ZOO_SEED": "3"}) == Knobs.of("topk1", "cite", seed=3)
    assert set(HARMFUL) < set(KNOBS)


@pytest.mark.parametrize("name", [b for b in BOTS if BOTS[b].sampled])
def test_sampled_bots_repeat_under_a_seed_and_vary_across_seeds(name: str) -> None:
    from pytest_ragdive import CallInfo

    questions = FOLLOW_UP[name]

    def answers(seed: int) -> list[str]:
        bot = make_bot(name, Knobs.of(seed=seed))
        return [chat(bot, questions, CallInfo(seed=s, turn=1)).answer for s in range(12)]

    assert answers(1) == answers(1)
    assert answers(1) != answers(2)
    calm = make_bot(name, Knobs.of(temperature=0.0))
    assert len({chat(calm, questions, CallInfo(seed=s, turn=1)).answer for s in range(12)}) == 1


def test_http_bot_answers_in_its_own_shape_with_knobs_from_headers() -> None:
    with BotServer() as server:
        def post(headers: dict[str, str]) -> Any:
            body = json.dumps({"query": "And a fixed one?", "history": [
                {"role": "user", "content": "How much is a hot desk membership?"}]}).encode()
            req = urllib.request.Request(server.url, body, {"Content-Type": "application/json", **headers})
            with urllib.request.urlopen(req, timeout=5) as resp:
                return json.loads(resp.read())["data"]

        plain = post({})
        assert plain["sources"][0]["meta"]["source"] == "memberships" and plain["reply"]
        topk1 = post({"X-Zoo-Knobs": "topk1", "X-Zoo-Seed": "0"})
        assert len(topk1["sources"]) == 1
        assert post({"X-Zoo-Knobs": "courtesy", "X-Zoo-Seed": "0"})["reply"].startswith("Happy to help!")
    cfg = target_config(server.url)
    assert cfg["answer"] == "data.reply" and cfg["context_fields"]["doc_id"] == "meta.source"


@pytest.mark.slow
def test_bench_records_a_baseline_and_gates_knobs_with_real_pytest(tmp_path: Path) -> None:
    mod = load_benchmark("bench_zoo")
    out = mod.main(["--bots", "keyword", "--knobs", "invent_fact", "--runs", "2", "--reruns", "0",
                    "--workdir", str(tmp_path), "--out", str(tmp_path / "zoo.json")])
    gates = out["bots"]["keyword"]["gates"]
    assert gates["healthy"]["rc"] == 0 and gates["healthy"]["failed"] == []
    assert gates["invent_fact"]["rc"] != 0 and "faithfulness" in gates["invent_fact"]["failed"]
    assert json.loads((tmp_path / "zoo.json").read_text())["bots"]["keyword"]["gates"]["invent_fact"]["failed"]
    assert (tmp_path / "keyword" / "baseline.json").is_file()
