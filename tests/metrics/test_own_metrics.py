"""A team's own metrics (``@pytest_ragdive.metric`` in conftest.py, a config module, an
entry point) through real pytest sessions: the metrics table, results.json, report.html's
per-turn charts, ``baseline show``, the gate, xdist, a metric that raises, a clash."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from conftest import PYPROJECT, TOY_CONFTEST, results

OWN = textwrap.dedent(
    '''
    import asyncio
    import os
    import pytest_ragdive as rd

    @rd.metric("says_colour", level="turn", higher_is_better=True, dimension="answer")
    def says_colour(turn, conversation):
        """1 when the answer names a colour (TOY_NO_COLOUR: never)."""
        if os.environ.get("TOY_NO_COLOUR"):
            return 0.0
        return float(any(c in turn.answer.lower() for c in ("blue", "green", "white")))

    @rd.metric("answer_words", level="turn", higher_is_better=False)
    async def answer_words(turn, conversation):
        await asyncio.sleep(0)
        return len(turn.answer.split())

    @rd.metric("turns_answered", level="conversation", dimension="answer")
    def turns_answered(conversation):
        """answered turns of the conversation"""
        return sum(t.answer is not None for t in conversation.turns)
    '''
)
GATE = "[tool.ragdive.gate]\ncorrectness = 0.05\nsays_colour = 0.05\nanswer_words = 5\nsafety_pass_rate = 0\n"


def _project(toy: pytest.Pytester, conftest_extra: str = OWN, gate: str = GATE, extra: str = "") -> None:
    toy.makeconftest(TOY_CONFTEST + conftest_extra)
    text = PYPROJECT.format(extra="autorun = true\n" + extra)
    head, rest = text.split("[tool.ragdive.gate]")
    rest = rest.split("[tool.ragdive.suites.core]")[1]
    toy.makefile(".toml", pyproject=head + gate + "[tool.ragdive.suites.core]" + rest)


def test_a_conftest_metric_is_reported_baselined_drawn_and_gated(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(toy)
    res = toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline")
    res.assert_outcomes(passed=5)
    from pytest_ragdive.metrics.registry import METRICS

    assert "says_colour" not in METRICS  # the session's registry ended with it
    # the metrics table of the terminal summary
    res.stdout.fnmatch_lines(["*core*answer_words ↓*", "*core*says_colour ↑*1.0000*", "*core*turns_answered ↑*"])
    data = results(toy)
    assert data["suites"]["core"]["says_colour"] == 1.0
    assert data["suites"]["core"]["turns_answered"] == pytest.approx(7 / 5)  # 3 single-turn + 2 x 2 turns
    assert data["custom_metrics"]["says_colour"]["direction"] == "higher"
    assert data["custom_metrics"]["answer_words"] == {
        "direction": "lower", "level": "turn", "dimension": "answer", "definition": "answer_words (conftest.answer_words)",
        "kind": "custom", "origin": "conftest.answer_words"}
    turn = data["conversations"][0]["turns"][0]
    assert "says_colour" in turn["scores"] and "answer_words" in turn["scores"]
    # per-turn charts: the conversations have two turns, so the metric has a curve
    html = (toy.path / "report" / "report.html").read_text()
    assert "says_colour ↑ by turn" in html and "answer_words ↓ by turn" in html
    # the baseline holds it, declared, and `baseline show` reads it without the conftest
    bl = json.loads((toy.path / "b.json").read_text())
    assert bl["suites"]["core"]["says_colour"]["mean"] == 1.0
    assert bl["custom_metrics"]["says_colour"]["level"] == "turn"
    from pytest_ragdive.cli import main

    assert main(["baseline", "show", str(toy.path / "b.json")]) == 0
    # the same bot passes; a drop beyond the tolerance fails the gate
    toy.runpytest("--ragdive-baseline=b.json").assert_outcomes(passed=5)
    monkeypatch.setenv("TOY_NO_COLOUR", "1")
    res = toy.runpytest("--ragdive-baseline=b.json")
    assert res.ret == 1
    res.stdout.fnmatch_lines(["*says_colour ↑*REGRESSION*"])
    rows = {r["metric"]: r for r in results(toy)["gate"]}
    assert rows["says_colour"]["verdict"] == "regression" and rows["correctness"]["verdict"] == "pass"


def test_baseline_show_lists_the_metric_without_its_conftest(toy: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    _project(toy)
    toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline").assert_outcomes(passed=5)
    capsys.readouterr()
    from pytest_ragdive.cli import main

    assert main(["baseline", "show", str(toy.path / "b.json")]) == 0
    out = capsys.readouterr().out
    assert "says_colour ↑" in out and "answer_words ↓" in out and "turns_answered ↑" in out


def test_the_gate_and_report_commands_know_the_metric_from_results_json(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(toy)
    toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline").assert_outcomes(passed=5)
    monkeypatch.setenv("TOY_NO_COLOUR", "1")
    toy.runpytest()  # results.json of a broken run, no gate
    monkeypatch.chdir(toy.path)
    toy.makeconftest(TOY_CONFTEST)  # the command never reads conftest.py
    from pytest_ragdive.cli import main

    out = toy.path / "again"
    assert main(["report", str(toy.path / "report" / "results.json"), "-o", str(out)]) == 0
    assert "says_colour ↑ by turn" in (out / "report.html").read_text()
    assert main(["gate", str(toy.path / "report" / "results.json"), "--baseline", "b.json", "--report-dir", "gated"]) == 1
    rows = {r["metric"]: r["verdict"] for r in json.loads((toy.path / "gated" / "results.json").read_text())["gate"]}
    assert rows["says_colour"] == "regression"


def test_xdist_workers_and_controller_give_the_same_metrics(toy: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    _project(toy)
    toy.runpytest().assert_outcomes(passed=5)
    plain = results(toy)["suites"]["core"]
    toy.runpytest_subprocess("-n", "2").assert_outcomes(passed=5)
    dist = results(toy)
    assert dist["suites"]["core"] == plain and "says_colour" in plain
    assert set(dist["custom_metrics"]) == {"says_colour", "answer_words", "turns_answered"}


RAISES = textwrap.dedent(
    '''
    import pytest_ragdive as rd

    @rd.metric("fragile", level="turn")
    def fragile(turn, conversation):
        if "snow" in turn.rag_input.lower():
            raise KeyError("no snow here")
        return 1.0

    @rd.metric("wordy", level="turn")
    def wordy(turn, conversation):
        return "many"
    '''
)


def test_a_metric_that_raises_fails_its_item_only(toy: pytest.Pytester) -> None:
    _project(toy, RAISES, gate="[tool.ragdive.gate]\ncorrectness = 0.05\n")
    res = toy.runpytest()
    assert res.ret == 1
    res.assert_outcomes(passed=0, failed=5)  # wordy returns a text for every turn
    toy.makeconftest(TOY_CONFTEST + RAISES.replace('return "many"', "return 1"))
    res = toy.runpytest()
    res.assert_outcomes(passed=3, failed=2)  # q-snow and c-colours mention snow
    res.stdout.fnmatch_lines([
        "*failed check(s) in core/q-snow (run 0):*",
        "*turn 1 (Single): question: 'Is snow cold?'*",
        "*answer: 'Snow is white and cold.'*",
        "*metric 'fragile' raised KeyError: 'no snow here'*",
    ])
    data = results(toy)  # the run was not taken down: every conversation is in results.json
    assert len(data["conversations"]) == 5
    snow = next(c for c in data["conversations"] if c["id"] == "q-snow")
    assert snow["turns"][0]["scores"]["fragile"] is None


def test_a_text_instead_of_a_number_names_the_metric(toy: pytest.Pytester) -> None:
    _project(toy, RAISES.split("@rd.metric(\"fragile\"")[0] + RAISES.split("return 1.0\n")[1],
             gate="[tool.ragdive.gate]\ncorrectness = 0.05\n")
    res = toy.runpytest("-k", "q-sky")
    res.stdout.fnmatch_lines(["*metric 'wordy' returned 'many': expected a finite number, a bool or None*"])


def test_a_name_clash_is_a_usage_error(toy: pytest.Pytester) -> None:
    _project(toy, '\nimport pytest_ragdive as rd\n@rd.metric("faithfulness")\ndef mine(turn, conversation):\n    return 1\n')
    res = toy.runpytest()
    assert res.ret == 4
    err = res.stderr.str()
    assert "metric 'faithfulness' (conftest.mine) has the name of a built-in metric" in err and "Traceback" not in err


def test_a_gate_entry_for_an_unknown_metric_is_a_usage_error(toy: pytest.Pytester) -> None:
    _project(toy, gate="[tool.ragdive.gate]\ncorrectness = 0.05\nsays_color = 0.1\n")
    res = toy.runpytest()
    assert res.ret == 4
    assert "key 'gate': unknown metric 'says_color'" in res.stderr.str()


def test_a_bad_signature_fails_at_the_decorator() -> None:
    import pytest_ragdive as rd

    with pytest.raises(TypeError, match=r"called as fn\(conversation\)"):
        rd.metric("x", level="conversation")(lambda turn, conversation: 1.0)
    with pytest.raises(ValueError, match="level 'suite'"):
        rd.metric("x", level="suite")(lambda conversation: 1.0)
    with pytest.raises(ValueError, match="lowercase"):
        rd.metric("Bad Name")


MODULE = textwrap.dedent(
    '''
    import pytest_ragdive as rd

    @rd.metric("short_answer", level="turn", higher_is_better=True, dimension="answer")
    def short_answer(turn, conversation):
        return float(len(turn.answer.split()) <= 8)
    '''
)


def test_metric_modules_and_entry_points_are_sources(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    (toy.path / "team_checks.py").write_text(MODULE)
    ep_dir = toy.mkdir("site")
    (ep_dir / "ep_checks.py").write_text(MODULE.replace("short_answer", "tiny_answer"))
    dist = ep_dir / "ep_checks-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-checks\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[pytest_ragdive.metrics]\ntiny = ep_checks\n")
    monkeypatch.syspath_prepend(str(ep_dir))
    _project(toy, "", gate="[tool.ragdive.gate]\ncorrectness = 0.05\nshort_answer = 0\ntiny_answer = 0\n",
             extra='metric_modules = ["team_checks"]')
    toy.runpytest().assert_outcomes(passed=5)
    data = results(toy)
    assert data["suites"]["core"]["short_answer"] == 1.0 and data["suites"]["core"]["tiny_answer"] == 1.0
    assert data["custom_metrics"]["short_answer"]["origin"] == "team_checks.short_answer"


def test_run_suite_takes_metrics_outside_pytest(tmp_path: Path) -> None:
    import pytest_ragdive as rd
    from pytest_ragdive.metrics.registry import METRICS

    (tmp_path / "cases.jsonl").write_text(json.dumps({"question_id": "a", "question": "Sky?", "expected_answer": "blue"}) + "\n")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ragdive.gate]\nmentions_blue = 0\n[tool.ragdive.suites.core]\nsingle_turn = ["cases.jsonl"]\n'
    )

    @rd.metric("mentions_blue")
    def mentions_blue(turn: rd.Turn, conversation: rd.Conversation) -> float:
        return float("blue" in (turn.answer or ""))

    from pytest_ragdive.core.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown metric 'mentions_blue'"):
        rd.run_suite(lambda messages: "It is blue.", tmp_path / "pyproject.toml")
    cfg = rd.RagdiveConfig.model_validate({"gate": {"mentions_blue": 0}, "suites": {"core": {"single_turn": ["cases.jsonl"]}}})
    cfg.base_dir = str(tmp_path)
    res = rd.run_suite(lambda messages: "It is blue.", cfg, metrics=[mentions_blue])
    assert res.value("mentions_blue") == 1.0
    assert "mentions_blue" not in METRICS  # the run's registry ended with it


def test_the_built_ins_are_declared_by_the_public_decorator_in_one_registry() -> None:
    import pytest_ragdive as rd
    from pytest_ragdive.metrics import registry

    assert rd.metric is registry.metric
    for decl in (*registry._BUILTIN, *registry._TWINS):  # the frozen table: metric(...) declarations, nothing else
        assert isinstance(decl, registry.MetricDecl) and decl.spec.fn is None
    assert [d.spec for d in (*registry._BUILTIN, *registry._TWINS)] == list(registry.BUILTINS.values())
    assert registry.METRICS["forgetfulness"] == registry.metric(
        "forgetfulness", level="conversation", higher_is_better=False, dimension="answer",
        definition=registry.BUILTINS["forgetfulness"].definition).spec
    assert {s.dimension for s in registry.BUILTINS.values()} <= set(registry.DIMENSIONS)
    with pytest.raises(TypeError):
        registry.BUILTINS._specs["x"] = registry.BUILTINS["mrr"]  # type: ignore[index]  # read-only

    @rd.metric("mine")
    def mine(turn: rd.Turn, conversation: rd.Conversation) -> float:
        return 1.0

    reg = registry.BUILTINS.extended(registry.declared_in([mine, mine]))
    assert reg["mine"].kind == "custom" and reg["mine"].fn is mine and "mine" not in registry.BUILTINS
    with reg.active():
        assert registry.METRICS["mine"].origin.endswith("mine")
    assert "mine" not in registry.METRICS
    with pytest.raises(registry.MetricClash, match="declared twice"):
        reg.extended([registry.metric("mine")(lambda turn, conversation: 0.0).__ragdive_metric__])  # type: ignore[attr-defined]


def test_the_controller_adopts_a_workers_metric_and_refuses_a_disagreeing_one() -> None:
    """Under xdist a worker may load a conftest.py the controller did not: the controller
    aggregates with the worker's declaration; one that aggregates differently ends the run."""
    import json as _json
    from types import SimpleNamespace

    from pytest_ragdive.core.config import RagdiveConfig
    from pytest_ragdive.metrics.registry import BUILTINS, MetricRegistry, metric
    from pytest_ragdive.plugin.controller import WORKER_KEY, DistController

    cfg = RagdiveConfig()
    here = metric("ours", higher_is_better=True)(lambda turn, conversation: 1.0).__ragdive_metric__  # type: ignore[attr-defined]
    cfg.use_metrics(BUILTINS.extended([here]))
    used: list[MetricRegistry] = []

    def use(reg: MetricRegistry) -> None:
        cfg.use_metrics(reg)
        used.append(reg)

    sess = SimpleNamespace(notes=[], fatal=[], worker_llm_stats=[], cfg=cfg, use_metrics=use)
    ctl = DistController(sess)  # type: ignore[arg-type]
    theirs = {"deep": {"direction": "lower", "level": "conversation"}, "ours": {"direction": "higher", "level": "turn"}}
    node = SimpleNamespace(workeroutput={WORKER_KEY: _json.dumps({"ran": 1, "metrics": theirs})}, gateway=SimpleNamespace(id="gw0"))
    ctl.pytest_testnodedown(node, None)
    assert not sess.fatal and cfg.metrics["deep"].direction == "lower" and cfg.metrics["ours"] is here
    clash = {"ours": {"direction": "lower", "level": "turn"}}
    node = SimpleNamespace(workeroutput={WORKER_KEY: _json.dumps({"ran": 1, "metrics": clash})}, gateway=SimpleNamespace(id="gw1"))
    ctl.pytest_testnodedown(node, None)
    assert len(sess.fatal) == 1 and "xdist worker gw1 and the controller disagree" in sess.fatal[0]


def test_a_baseline_declares_its_own_metrics_and_they_must_agree(tmp_path: Path) -> None:
    from pytest_ragdive.core.errors import BaselineError
    from pytest_ragdive.gate.baseline import load_baseline
    from pytest_ragdive.metrics.registry import BUILTINS, metric

    bm = {"mean": 0.5, "min": 0.5, "max": 0.5, "direction": "lower"}
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"suites": {"core": {"mine": bm}}}))
    with pytest.raises(BaselineError, match="suites.core.mine: unknown metric"):
        load_baseline(path)  # not built in, not declared by the file, not in a session
    path.write_text(json.dumps({"suites": {"core": {"mine": bm}},
                                "custom_metrics": {"mine": {"direction": "lower", "level": "turn"}}}))
    assert load_baseline(path).custom_metrics["mine"].direction == "lower"
    here = metric("mine", higher_is_better=True)(lambda turn, conversation: 1.0).__ragdive_metric__  # type: ignore[attr-defined]
    with BUILTINS.extended([here]).active(), pytest.raises(BaselineError, match="mine.direction: 'lower', but mine is higher"):
        load_baseline(path)
    path.write_text(json.dumps({"custom_metrics": {"mrr": {"direction": "lower", "level": "turn"}}}))
    with pytest.raises(BaselineError, match="custom_metrics.mrr: .* but mrr is a built-in metric"):
        load_baseline(path)
