"""The gate on a bot that already forgets: the binary verdict saturates, the share of
turns forgotten does not (issue 31)."""

from __future__ import annotations

import factories

from pytest_ragdive.core.records import Conversation, Turn
from pytest_ragdive.gate.rows import check
from pytest_ragdive.metrics.aggregate import aggregate
from pytest_ragdive.metrics.multiturn import apply_forgetfulness_probe

GATE = {"forgetfulness": 0.05, "forgotten_turn_share": 0.05}
FACTS = [
    "Refunds are issued within 14 days to the original payment method.",
    "Exchanges are free within 30 days for unworn shoes.",
    "Gift cards never expire and can be used online.",
]
WRONG = "Could you tell me which order you mean?"


def conv(cid: str, forgotten: int, standalone_right: bool = True, lost: int = 0) -> Conversation:
    """Three follow-ups, the first ``forgotten`` answered wrongly in the conversation (and
    the first ``lost`` wrongly stand-alone too)."""
    turns = [Turn(index=0, rag_input="Can I return shoes?", answer="Yes.")]
    for i, fact in enumerate(FACTS, start=1):
        turns.append(Turn(index=i, rag_input="and?", standalone_question=f"q{i}?", ground_truth=fact,
                          answer=WRONG if i <= forgotten else fact,
                          standalone_answer=fact if standalone_right and i > lost else WRONG))
    c = Conversation(id=cid, turns=turns)
    apply_forgetfulness_probe(c)
    return c


def gate_rows(base: list[Conversation], now: list[Conversation]) -> dict[str, str]:
    baseline = factories.baseline_of(base, GATE)
    rows = check({"core": aggregate("core", now, n_boot=10)}, baseline, GATE, method="band")
    return {r.metric: r.verdict for r in rows}


def test_a_bot_that_forgets_more_fails_on_the_share() -> None:
    # healthy: every conversation already forgets one follow-up of three (verdict 1.0)
    base = [conv(f"c{i}", 1) for i in range(7)]
    now = [conv(f"c{i}", 3) for i in range(7)]  # history dropped: every follow-up forgotten
    verdicts = gate_rows(base, now)
    assert verdicts["forgetfulness"] == "pass"  # saturated: 1.0 -> 1.0
    assert verdicts["forgotten_turn_share"] == "regression"  # 1/3 -> 1


def test_the_same_bot_passes() -> None:
    base = [conv(f"c{i}", 1) for i in range(7)]
    assert set(gate_rows(base, [conv(f"c{i}", 1) for i in range(7)]).values()) == {"pass"}


def test_nothing_answered_is_no_data_not_an_improvement() -> None:
    base = [conv(f"c{i}", 1) for i in range(7)]
    broken = [conv(f"c{i}", 3, standalone_right=False) for i in range(7)]  # retrieval broke
    assert all(c.scores["forgetfulness"] is None for c in broken)
    verdicts = gate_rows(base, broken)
    assert verdicts == {"forgetfulness": "no data", "forgotten_turn_share": "no data"}


def test_an_improvement_on_a_collapsed_scored_set_is_not_comparable() -> None:
    # the broken retrieval: 5 of 7 conversations forgetful (0.714); now only two
    # conversations have a turn answered stand-alone, and neither forgets: 0.000
    base = [conv(f"c{i}", 1 if i < 5 else 0) for i in range(7)]
    broken = [conv(f"c{i}", 0, standalone_right=i < 2) for i in range(7)]
    baseline = factories.baseline_of(base, GATE)
    assert baseline.suites["core"]["forgetfulness"].mean == 5 / 7
    for method in ("band", "band+paired"):
        rows = check({"core": aggregate("core", broken, n_boot=10)}, baseline, GATE, method=method,  # type: ignore[arg-type]
                     convs=broken)
        row = next(r for r in rows if r.metric == "forgetfulness")
        assert row.current == 0.0
        assert row.verdict == "pass" and not row.failed
        assert "not comparable: scored on 2 conversation(s) a run, the baseline on 7" in row.reason
        assert "--ragdive-update-baseline" not in row.reason


def test_a_real_improvement_on_the_same_set_is_still_one() -> None:
    base = [conv(f"c{i}", 1 if i < 5 else 0) for i in range(7)]
    fixed = [conv(f"c{i}", 0) for i in range(7)]
    rows = check({"core": aggregate("core", fixed, n_boot=10)}, factories.baseline_of(base, GATE), GATE, method="band")
    row = next(r for r in rows if r.metric == "forgetfulness")
    assert row.verdict == "improvement" and "--ragdive-update-baseline" in row.reason


def test_the_terminal_says_why_instead_of_advising_an_update() -> None:
    from pytest_ragdive.gate.outcome import GateStatus, RunInfo, RunOutcome
    from pytest_ragdive.reports.terminal import terminal_lines

    base = [conv(f"c{i}", 1 if i < 5 else 0) for i in range(7)]
    broken = [conv(f"c{i}", 0, standalone_right=i < 2) for i in range(7)]
    rows = check({"core": aggregate("core", broken, n_boot=10)}, factories.baseline_of(base, GATE), GATE, method="band")
    text = "\n".join(line.text for line in terminal_lines(RunOutcome(info=RunInfo(suites=["core"]), status=GateStatus.PASSED, gate=rows)))
    assert "consider --ragdive-update-baseline" not in text
    assert "not comparable with it" in text and "core/forgetfulness: not comparable" in text


def test_an_older_baseline_without_the_share_is_gated_on_forgetfulness() -> None:
    from pytest_ragdive.gate.rows import where_recorded

    base = factories.baseline_of([conv(f"c{i}", 1) for i in range(3)], {"forgetfulness": 0.05})
    old = {m: bm for m, bm in base.suites["core"].items() if m != "forgotten_turn_share"}
    assert where_recorded({"forgotten_turn_share": 0.05}, old) == {"forgetfulness": 0.05}
    assert where_recorded({"forgotten_turn_share": 0.05}, base.suites["core"]) == {"forgotten_turn_share": 0.05}


def test_losing_eligible_turns_is_not_an_improvement() -> None:
    # every conversation forgets its first follow-up (1/3); now that follow-up is answered
    # wrongly stand-alone too: it leaves the eligible set, the two left are kept (0/2). As many
    # conversations are scored (the count rule cannot see it); the same turns are not eligible
    base = [conv(f"c{i}", 1) for i in range(7)]
    now = [conv(f"c{i}", 1, lost=1) for i in range(7)]
    assert [c.eligible_turns for c in base[:1] + now[:1]] == [[1, 2, 3], [2, 3]]
    baseline = factories.baseline_of(base, GATE)
    assert baseline.suites["core"]["forgotten_turn_share"].eligible == {f"c{i}": [[1, 2, 3]] for i in range(7)}
    for method in ("band", "band+paired"):
        rows = check({"core": aggregate("core", now, n_boot=10)}, baseline, GATE, method=method,  # type: ignore[arg-type]
                     convs=now)
        row = next(r for r in rows if r.metric == "forgotten_turn_share")
        assert row.current == 0.0 and row.verdict == "pass"
        assert "7 of the baseline's eligible turns" in row.reason and "c0 turn 2" in row.reason
        assert "no conversation kept all its eligible turns" in row.reason
        assert "--ragdive-update-baseline" not in row.reason


def test_an_improvement_over_the_conversations_that_kept_their_turns_stands() -> None:
    # two conversations lose a turn, the five others really stop forgetting: an improvement
    base = [conv(f"c{i}", 1) for i in range(7)]
    now = [conv(f"c{i}", 1, lost=1) if i < 2 else conv(f"c{i}", 0) for i in range(7)]
    rows = check({"core": aggregate("core", now, n_boot=10)}, factories.baseline_of(base, GATE), GATE, method="band",
                 convs=now)
    assert next(r for r in rows if r.metric == "forgotten_turn_share").verdict == "improvement"
    # the same loss with nothing better over the kept ones: not comparable, and it says where
    same = [conv(f"c{i}", 1, lost=1) if i < 2 else conv(f"c{i}", 1) for i in range(7)]
    rows = check({"core": aggregate("core", same, n_boot=10)}, factories.baseline_of(base, GATE), GATE, method="band",
                 convs=same)
    row = next(r for r in rows if r.metric == "forgotten_turn_share")
    assert row.verdict == "pass" and "over the 5 conversation(s) that kept theirs it reads 0.333" in row.reason


def test_a_baseline_without_eligible_turns_keeps_the_count_rule() -> None:
    from pytest_ragdive.gate.baseline import dumps_baseline, load_baseline

    base = [conv(f"c{i}", 1) for i in range(7)]
    now = [conv(f"c{i}", 1, lost=1) for i in range(7)]
    baseline = factories.baseline_of(base, GATE)
    for bm in baseline.suites["core"].values():
        bm.eligible = None  # recorded before eligible turns were kept
    rows = check({"core": aggregate("core", now, n_boot=10)}, baseline, GATE, method="band", convs=now)
    assert next(r for r in rows if r.metric == "forgotten_turn_share").verdict == "improvement"
    # the file: eligible turns only on the gated probe metrics (forgetfulness, the share), one
    # conversation a line; read back the same
    full = factories.baseline_of(base, GATE)
    text = dumps_baseline(full)
    assert text.count('"eligible"') == 2 and '"c0": [[1, 2, 3]]' in text
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "b.json").write_text(text)
        assert load_baseline(Path(d) / "b.json").suites["core"]["forgotten_turn_share"].eligible == {
            f"c{i}": [[1, 2, 3]] for i in range(7)}


def test_the_eligible_metrics_are_the_probes() -> None:
    from pytest_ragdive.gate.comparable import ELIGIBLE_METRICS
    from pytest_ragdive.metrics.multiturn import PROBE_METRICS

    assert ELIGIBLE_METRICS == PROBE_METRICS
