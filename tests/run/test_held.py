"""Scored conversations held compactly until the end of the run (held.py): the
reports are byte for byte those of the whole conversations, the decision is the
same, and a user test that asks for a conversation still gets it whole; the
suite bootstrap that resamples every metric with one stream of draws gives the
intervals of resampling each metric on its own."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from conftest import results
from example_outcome import example_outcome

from pytest_ragdive.core.records import Conversation
from pytest_ragdive.gate.outcome import RunOutcome
from pytest_ragdive.gate.ranking import culprits
from pytest_ragdive.metrics.aggregate import _bootstrap_all, aggregate
from pytest_ragdive.reports.html import conversation_body
from pytest_ragdive.reports.write import write_reports
from pytest_ragdive.run.held import HeldConversations


def _files(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


@pytest.mark.parametrize("gate", [True, False])
def test_reports_from_held_conversations_are_those_of_the_whole_ones(tmp_path: Path, gate: bool) -> None:
    # a real scored suite with contexts, one errored conversation, gated against the example's baseline
    outcome = example_outcome(history="none", gate=gate, raise_on="How much is the Pro plan per month?")
    held = HeldConversations(keep_reports=True)
    for c in outcome.conversations:
        held.add(c)
    assert held.had_contexts
    slim = {c.key: c for c in held.values()}
    errored = [c for c in outcome.conversations if c.error]
    assert errored and all(slim[c.key] is c for c in errored)  # held whole
    kept = [c for c in outcome.conversations if not c.error]
    for c in kept:
        s = slim[c.key]
        assert not any(t.contexts or t.standalone_contexts or t.standalone_answer for t in s.turns)
        for st, t in zip(s.turns, c.turns, strict=True):  # the evidence: its worst unit only, what the culprits quote
            w = t.evidence.worst() if t.evidence is not None else None
            assert (st.evidence is None) == (w is None)
            if st.evidence is not None and w is not None:
                assert st.evidence.reference == [] and len(st.evidence.support) == 1
                assert st.evidence.worst() == w.model_copy(update={"span": "", "missing": [], "context_id": None,
                                                                   "start": None, "end": None, "by": "none"})
        assert any(t.contexts for t in c.turns)  # the original is not changed
        assert Conversation.model_validate_json(held.full_json(c.key) or "") == c
        assert held.html_body(c.key) == conversation_body(c)
        assert s.model_copy(update={"turns": c.turns}) == c  # only the turns differ
    assert held.full_json(errored[0].key) is None and held.html_body(errored[0].key) is None

    whole, compact = tmp_path / "whole", tmp_path / "compact"
    write_reports(whole, outcome)
    slim_outcome = RunOutcome.model_validate(
        {**outcome.model_dump(exclude={"conversations"}), "conversations": [slim[c.key] for c in outcome.conversations]}
    )
    write_reports(compact, slim_outcome, held)
    assert _files(whole) == _files(compact)
    if gate:  # the culprits quote the same sentences from slim copies (some quote one)
        quoted = []
        for row in outcome.gate or []:
            got = culprits(row, slim_outcome.conversations)
            assert got == culprits(row, outcome.conversations)
            quoted += [c.quote for c in got if c.quote]
        assert quoted and outcome.baseline_answers
    # and what decides the run reads no context: the suite metrics are the same from slim copies
    for suite in outcome.suites:
        mine = [c for c in slim_outcome.conversations if c.suite == suite]
        assert aggregate(suite, mine) == aggregate(suite, [c for c in outcome.conversations if c.suite == suite])


def test_without_report_dir_nothing_is_stored() -> None:
    outcome = example_outcome(gate=False, markup=False)
    held = HeldConversations(keep_reports=False)
    for c in outcome.conversations:
        held.add(c)
    assert len(held) == len(outcome.conversations)
    assert all(held.full_json(k) is None and held.html_body(k) is None for k in held)
    assert not any(t.contexts for c in held.values() for t in c.turns)


def test_a_run_whose_target_returns_no_context_still_warns(toy: pytest.Pytester) -> None:
    toy.makeconftest(
        "import pytest\n"
        "@pytest.fixture(scope='session')\n"
        "def ragdive_target():\n"
        "    return lambda messages: 'Snow is white and cold.'\n"
    )
    res = toy.runpytest("--ragdive-suite=core", "-p", "no:cacheprovider")
    assert res.ret == 0
    data = results(toy)
    assert any("returned no retrieved contexts" in n for n in data["notes"])
    assert data["suites"]["core"]["faithfulness"] is None


def test_a_user_test_that_asks_for_a_conversation_gets_it_whole(toy: pytest.Pytester) -> None:
    """The user's tests run after the conversation items here: they get the very
    conversation the item ran (not a second run, not a slim copy)."""
    toy.makepyfile(test_mine=(
        "import json\n"
        "def test_has_contexts(ragdive_conversation):\n"
        "    c = ragdive_conversation\n"
        "    assert c.turns and all(t.contexts for t in c.turns)\n"
        "    with open('seen.jsonl', 'a') as f:\n"
        "        f.write(json.dumps([c.id, [t.latency_s for t in c.turns]]) + '\\n')\n"
    ))
    res = toy.runpytest("--ragdive-suite=core", "-p", "no:cacheprovider", "-k", "c-colours or c-grass")
    res.assert_outcomes(passed=4)
    seen = dict(json.loads(line) for line in (toy.path / "seen.jsonl").read_text().splitlines())
    ran = {c["id"]: [t["latency_s"] for t in c["turns"]] for c in results(toy)["conversations"]}
    assert seen == ran  # the same run (its latencies), so the item's conversation was not let go and rerun
    assert all(c["turns"][0]["contexts"] for c in results(toy)["conversations"])


def test_a_plain_run_writes_every_context_to_results_json(toy: pytest.Pytester) -> None:
    assert toy.runpytest("--ragdive-suite=core", "-p", "no:cacheprovider").ret == 0
    data = results(toy)
    assert len(data["conversations"]) == 5
    assert all(t["contexts"] for c in data["conversations"] for t in c["turns"])
    html = (toy.path / "report" / "report.html").read_text()
    assert "retrieved context(s)" in html and "Snow is white and cold." in html


def _bootstrap_one(values: dict[str, list[list[float | None]]], n_boot: int, seed: int) -> tuple[float | None, float | None]:
    """The reference: one metric resampled on its own (as aggregate did before the shared stream)."""
    keys = sorted(values)
    if len(keys) < 2:
        return None, None
    sums, counts = np.zeros(len(keys)), np.zeros(len(keys))
    for i, k in enumerate(keys):
        vals = [v for vs in values[k] for v in vs if v is not None]
        sums[i], counts[i] = sum(vals), len(vals)
    if counts.sum() == 0:
        return None, None
    idx = np.random.default_rng(seed).integers(0, len(keys), size=(n_boot, len(keys)))
    s, n = sums[idx].sum(axis=1), counts[idx].sum(axis=1)
    lo, hi = np.percentile(s[n > 0] / n[n > 0], [2.5, 97.5])
    return float(lo), float(hi)


@pytest.mark.parametrize(("k", "n_boot", "chunk"), [(2, 50, 7), (40, 333, 100), (130, 1000, 64)])
def test_one_stream_of_draws_gives_each_metrics_own_interval(
    k: int, n_boot: int, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_ragdive.core import stats

    monkeypatch.setattr(stats, "MAX_CELLS", chunk * k)  # draws `chunk` resamples at a time
    rng = np.random.default_rng(k)
    metrics: dict[str, dict[str, list[list[float | None]]]] = defaultdict(dict)
    for name, missing in (("a", 0.0), ("b", 0.3), ("none", 1.0)):
        for i in range(k):
            metrics[name][f"c{i:03d}"] = [
                [None if rng.random() < missing else float(rng.random()) for _ in range(int(rng.integers(1, 6)))]
                for _ in range(2)  # two runs of each conversation: one cluster
            ]
    sums = {}
    for name, per in metrics.items():
        keys = sorted(per)
        vals = [[v for vs in per[c] for v in vs if v is not None] for c in keys]
        sums[name] = ([sum(v) for v in vals], [len(v) for v in vals])
    got = _bootstrap_all(sums, k, n_boot, seed=0)
    for name, per in metrics.items():
        assert got[name] == _bootstrap_one(per, n_boot, seed=0), name
    assert got["none"] == (None, None)


def _without_latency(data: dict) -> list[dict]:
    convs = sorted(data["conversations"], key=lambda c: c["id"])
    for c in convs:
        for t in c["turns"]:
            t.pop("latency_s")
    return convs


def test_xdist_writes_the_same_conversations_with_their_contexts(toy: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    got = []
    for extra in ([], ["-n", "2"]):
        res = toy.runpytest_subprocess("--ragdive-suite=core", "-p", "no:cacheprovider", *extra)
        assert res.ret == 0
        got.append(_without_latency(results(toy)))
    assert got[0] == got[1]
    assert all(t["contexts"] for c in got[1] for t in c["turns"])


def test_the_spool_reads_back_what_it_stored_in_a_file_or_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    from pytest_ragdive.run.held import Spool

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    spool = Spool()
    blobs = {f"k{i}": bytes([i]) * (1000 + i) for i in range(20)}
    for k, b in blobs.items():
        spool.put(k, b)
    spool.put("k3", b"again")  # a key stored again: the later bytes
    assert spool.get("k3") == b"again" and all(spool.get(k) == b for k, b in blobs.items() if k != "k3")
    assert spool.get("nope") is None
    assert spool._mem == {} and spool._fh is not None  # in the file, not the heap
    assert list(tmp_path.iterdir()) == []  # an anonymous file: nothing left on disk, even if killed
    spool.clear()
    assert spool.get("k0") is None and spool._fh is None

    def refuse(*a: object, **k: object) -> object:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "TemporaryFile", refuse)
    spool = Spool()
    spool.put("a", b"xyz")
    assert spool.get("a") == b"xyz" and spool._mem == {"a": b"xyz"}  # in memory: nothing lost


def test_a_spool_whose_writes_fail_midway_keeps_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from pytest_ragdive.run.held import Spool

    spool = Spool()
    spool.put("first", b"1" * 100)
    real = os.pwrite

    def full(fd: int, data: bytes, offset: int) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "pwrite", full)
    spool.put("second", b"2" * 100)
    monkeypatch.setattr(os, "pwrite", real)
    spool.put("third", b"3" * 100)
    assert [spool.get(k) for k in ("first", "second", "third")] == [b"1" * 100, b"2" * 100, b"3" * 100]
