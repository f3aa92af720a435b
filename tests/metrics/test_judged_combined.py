"""judge_prompts = "combined": one request per answered turn, each part read as its own
prompt's reply would be, a malformed part asked again alone, a cache of its own; and every
judge prompt static first (instructions, then the shared data, then the answer)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
from test_judged_metrics import (
    EXPECTED_TURN,
    VERDICTS,
    aspect,
    cfg_for,
    make_conv,
    run_judge,
    turn_no,
)

from pytest_ragdive.llm.prompts import FENCE_NOTE, PROMPT_DIR, load_prompt
from pytest_ragdive.metrics.judged import TURN_METRICS
from pytest_ragdive.testing import FakeLLMServer, config_for

ROOT = Path(__file__).resolve().parents[2]


def combined_of(body: dict[str, Any]) -> dict[str, Any]:
    """The combined reply made of the per-metric scripted verdicts of the same turn."""
    n = turn_no(body)
    tasks = re.search(r"Tasks: ([\w, ]+)", body["messages"][-1]["content"]).group(1)  # type: ignore[union-attr]
    return {m: VERDICTS[(m, n)] for m in tasks.split(", ")}


def scripted(body: dict[str, Any]) -> dict[str, Any]:
    a = aspect(body)
    return combined_of(body) if a == "combined" else VERDICTS[(a, turn_no(body))]


def aspects(server: FakeLLMServer) -> list[str]:
    return [aspect(b) for b in server.requests]


def test_combined_mode_one_request_per_turn_same_scores_as_per_metric(tmp_path: Path) -> None:
    conv = make_conv()
    with FakeLLMServer(scripted) as server:
        run_judge(cfg_for(server, tmp_path, judge_prompts="combined"), conv)
        assert server.handler_errors == []
        # two answered turns: one combined request each, plus the two conversation-level ones
        assert sorted(aspects(server)) == ["combined", "combined", "context_retention", "forgetfulness"]
    for n, turn in enumerate(conv.turns, start=1):
        for metric, want in EXPECTED_TURN[n].items():
            assert turn.scores[metric] == pytest.approx(want), (n, metric)
    assert conv.judge_calls is not None and conv.judge_calls.turn == 2


def test_fake_server_answers_the_combined_prompt_validly_by_default(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_peers import samples

    from pytest_ragdive.core.records import Context, Conversation, Turn

    convs = [
        Conversation(id=f"s{i}", turns=[Turn(
            rag_input=d["question"], standalone_question=d["question"], ground_truth=d["ground_truth"],
            answer=d["answer"], contexts=[Context(id=f"c{k}", text=t) for k, t in enumerate(d["contexts"])])])
        for i, d in enumerate(samples(3))
    ]
    with FakeLLMServer() as server:
        for conv in convs:
            run_judge(cfg_for(server, tmp_path, judge_prompts="combined"), conv, {})
        assert len(server.requests) == 3  # one request per sample, no part asked again
        chars = sum(len(m["content"]) for b in server.requests for m in b["messages"])
        assert chars / 4 / 3 <= 1_000  # the prompt tokens per sample (characters / 4, as bench_peers counts)
    for conv in convs:
        verdicts = conv.turns[0].verdicts
        assert verdicts["context_precision"].value == 1.0  # one verdict per context
        assert not any("invalid" in v.reason for v in verdicts.values())


def test_a_malformed_part_is_asked_again_alone(tmp_path: Path) -> None:
    def handler(body: dict[str, Any]) -> dict[str, Any]:
        a = aspect(body)
        if a != "combined":
            return VERDICTS[(a, turn_no(body))]
        reply = combined_of(body)
        if turn_no(body) == 1:
            reply["context_precision"] = {"verdicts": reply["context_precision"]["verdicts"][:2]}  # 2 of 3 contexts
            reply["faithfulness"] = {"claims": "all supported"}  # not the schema
            del reply["correctness"]  # missing
        return reply

    conv = make_conv()
    with FakeLLMServer(handler) as server:
        run_judge(cfg_for(server, tmp_path, judge_prompts="combined"), conv)
        turn1 = [aspect(b) for b in server.requests if turn_no(b) == 1]
    assert sorted(turn1) == ["combined", "context_precision", "correctness", "faithfulness"]
    for n, turn in enumerate(conv.turns, start=1):
        for metric, want in EXPECTED_TURN[n].items():
            assert turn.scores[metric] == pytest.approx(want), (n, metric)


def test_a_part_still_malformed_alone_is_never_scored(tmp_path: Path) -> None:
    def handler(body: dict[str, Any]) -> dict[str, Any]:
        a = aspect(body)
        if a == "context_precision":
            return {"verdicts": [{"context": 1, "relevant": True}]}  # 1 verdict for 3 or 2 contexts
        if a != "combined":
            return VERDICTS[(a, turn_no(body))]
        reply = combined_of(body)
        reply["context_precision"] = {"verdicts": []}
        return reply

    conv = make_conv()
    with FakeLLMServer(handler) as server:
        run_judge(cfg_for(server, tmp_path, judge_prompts="combined"), conv)
    for turn in conv.turns:
        v = turn.verdicts["context_precision"]
        assert v.value is None and v.reason.startswith("invalid judge output: expected")
        assert turn.scores["faithfulness"] is not None


def test_the_two_modes_never_share_cache_entries(tmp_path: Path) -> None:
    def handler(body: dict[str, Any]) -> dict[str, Any]:
        a = aspect(body)
        if a == "combined":
            return {}  # every part asked again alone, with its own prompt
        return VERDICTS[(a, turn_no(body))]

    with FakeLLMServer(handler) as server:
        cfg = config_for(server, cache_dir=str(tmp_path / "cache"), record_mode="new_episodes",
                         llm={"timeout_s": 5.0, "max_retries": 0})
        combined = cfg.model_copy(update={"judge_prompts": "combined"})
        run_judge(combined, make_conv())
        first = aspects(server)
        assert first.count("combined") == 2 and first.count("faithfulness") == 2  # asked again alone
        server.reset()
        run_judge(cfg, make_conv())  # per_metric: the same per-metric prompts, none answered from combined's cache
        assert sorted(aspects(server)) == sorted(a for a in first if a not in ("combined", "forgetfulness",
                                                                               "context_retention"))
        server.reset()
        run_judge(combined, make_conv())  # and each mode answers its own rerun from the cache
        run_judge(cfg, make_conv())
        assert server.requests == []


def test_combined_prompt_counts_in_the_config_hash_only_when_used(tmp_path: Path) -> None:
    plain = config_for("http://127.0.0.1:9")
    combined = config_for("http://127.0.0.1:9", judge_prompts="combined")
    assert "prompt:judge_combined.yaml" not in plain.content_digests()
    assert "prompt:judge_combined.yaml" in combined.content_digests()
    assert plain.config_hash() != combined.config_hash()


# where each value sits in a judge prompt: what a run, a conversation or a turn shares
# first, the answer (what changes most) last
_ORDER = ("criteria", "transcript", "contexts", "reference", "question", "references", "ground_truth", "answer",
          "candidate", "inputs")
_STATIC = {"fence_note", "subject"}  # subject: a rubric judge's constant ("answer" or "conversation")


@pytest.mark.parametrize("path", sorted(PROMPT_DIR.glob("judge_*.yaml")), ids=lambda p: p.stem)
def test_every_judge_prompt_is_static_first(path: Path) -> None:
    p = load_prompt(path.stem)
    names = lambda text: [n for n in re.findall(r"(?<!\{)\{(\w+)\}(?!\})", text)]  # noqa: E731
    assert set(names(p.system)) <= _STATIC, f"{p.id}: the system prompt must not vary per item"
    assert "Reply with one JSON object" in p.system  # the instructions and the reply form come first
    assert not re.search(r"\b(Task|Respond|Reply)\b", p.user), f"{p.id}: instructions after the data"
    data = [n for n in names(p.user) if n in _ORDER]
    assert data == sorted(data, key=_ORDER.index), f"{p.id}: {data}"
    if "answer" in data:
        assert p.user.rstrip().endswith("{answer}"), p.id
    values: dict[str, Any] = {n: "x" for n in names(p.system) + names(p.user)}
    assert p.render(**{**values, "fence_note": FENCE_NOTE})


def test_combined_prompt_covers_every_turn_metric() -> None:
    p = load_prompt("judge_combined")
    for metric in TURN_METRICS:
        assert f"{metric}:" in p.system and f'"{metric}"' in p.system


def test_cascade_asks_the_strong_model_one_combined_request_per_turn(tmp_path: Path) -> None:
    def handler(body: dict[str, Any]) -> dict[str, Any]:
        if body["model"].endswith("strong") and aspect(body) == "combined":
            n = turn_no(body)
            return {
                "faithfulness": {"claims": [{"claim": "c", "supported": True, "reason": "strong ok"}]},
                "context_precision": {"verdicts": [{"context": i, "relevant": True} for i in range(1, 4 if n == 1 else 3)]},
                "context_recall": {"statements": [{"statement": "s", "attributed": True}]},
                "correctness": {"correct": True, "reason": "strong says correct"},
            }
        return scripted(body)

    conv = make_conv()
    with FakeLLMServer(handler) as server:
        cfg = cfg_for(server, tmp_path, judge_prompts="combined", judged_metrics=list(TURN_METRICS),
                      judge_cascade=["openai/cheap", "openai/strong"])
        run_judge(cfg, conv)
        sent = [(b["model"].split("/")[-1], aspect(b), turn_no(b)) for b in server.requests]
    # the cheap model's verdicts have negatives on both turns: the strong model is asked once per turn
    assert sorted(sent) == [("cheap", "combined", 1), ("cheap", "combined", 2),
                            ("strong", "combined", 1), ("strong", "combined", 2)]
    for n, turn in enumerate(conv.turns, start=1):
        for metric in TURN_METRICS:  # every negative re-judged by the strong model, whose verdict stands
            assert turn.scores[metric] == 1.0, metric
            positive = EXPECTED_TURN[n][metric] == 1.0  # the cheap model's verdict was positive: it stands
            assert turn.verdicts[metric].model == ("openai/cheap" if positive else "openai/strong"), (n, metric)
    # turn 1's correctness and turn 2's recall were positive with the cheap model: 6 of 8 re-judged
    assert conv.judge_calls is not None and conv.judge_calls.rejudged == 6


def test_the_estimate_counts_one_combined_call_per_turn_and_finds_its_cache(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "run"))
    import asyncio

    from test_estimate import _answered, _cfg, _price, _write

    from pytest_ragdive.llm import LLMClient
    from pytest_ragdive.llm.cache import LLMCache
    from pytest_ragdive.metrics.backends import judge_conversation
    from pytest_ragdive.run.estimate import cache_lookup, estimate
    from pytest_ragdive.run.planning import plan_all

    _write(tmp_path)
    with FakeLLMServer() as server:
        cfg = _cfg(server, tmp_path, judge_prompts="combined")
        plans = plan_all(cfg, True, [])
        cold = estimate(plans, cfg, price=_price)
        assert server.request_count == 0
        (judge,) = cold.suites[0].roles
        assert judge.calls == 5 + 2  # one per answered turn (2 singles + 3 turns), 2 for the conversation
        convs = {p.key: _answered(c) for p in plans if (c := p.new_conversation()) is not None}

        async def judge_all() -> None:
            client = LLMClient.from_config(cfg)
            try:
                for conv in convs.values():
                    await judge_conversation(conv.model_copy(deep=True), client, cfg, {})
            finally:
                await client.aclose()

        asyncio.run(judge_all())
        assert server.request_count == 7  # the fake server answers every combined part validly
        cache = LLMCache.from_config(cfg)
        assert cache is not None
        with cache:
            warm = estimate(plans, cfg, lookup=cache_lookup(cache), previous=convs, price=_price)
    assert (warm.suites[0].roles[0].calls, warm.suites[0].roles[0].warm_calls) == (7, 0)
