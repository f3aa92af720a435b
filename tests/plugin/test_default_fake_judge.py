"""A first LLM-mode run against FakeLLMServer's default replies (issue 33): every judged
metric gets a number, the baseline is written and the next gate passes; a baseline whose
gated metrics all have no value is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import CONVS, SINGLE, llm_project, results
from factories import scored

from pytest_ragdive.core.config import load_config
from pytest_ragdive.gate.conclude import RunFacts, conclude
from pytest_ragdive.gate.outcome import GateStatus
from pytest_ragdive.testing import FAKE_KEY_ENV, FakeLLMServer

CORPUS = [{"id": d, "title": d, "text": t} for d, t in
          {"sky": "The sky is blue on a clear day.", "grass": "Grass is green in spring.", "snow": "Snow is white and cold."}.items()]


def test_default_replies_give_every_judged_metric_a_value_and_the_gate_passes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("TOY_FORGET", "TOY_RAISE_ON", "TOY_UNSAFE", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(FAKE_KEY_ENV, "sk-test-default")
    with FakeLLMServer() as server:
        llm_project(
            pytester, CORPUS,
            llm=f'api_base = "{server.url}"\napi_key_env = "{FAKE_KEY_ENV}"\ntransport = "openai_http"\ntimeout_s = 5',
            rest='[tool.ragdive.suites.core]\nsingle_turn = ["data/single.jsonl"]\nconversations = ["data/convs.yaml"]\n',
        )
        data = pytester.mkdir("data")
        (data / "single.jsonl").write_text("\n".join(json.dumps(r) for r in SINGLE) + "\n")
        (data / "convs.yaml").write_text(CONVS)
        res = pytester.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline", "-p", "no:cacheprovider")
        res.assert_outcomes(passed=5)
        suite = results(pytester)["suites"]["core"]
        for metric in ("faithfulness", "context_precision", "context_recall", "correctness", "forgetfulness"):
            assert suite[metric] is not None, metric
        assert suite["faithfulness"] == suite["context_recall"] == 1.0
        ok = pytester.runpytest("--ragdive-baseline=b.json", "-p", "no:cacheprovider")
        assert ok.ret == 0, ok.stdout.str()[-3000:]
        ok.stdout.fnmatch_lines(["*ragdive gate passed*"])


def test_a_baseline_whose_gated_metrics_all_have_no_value_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ragdive]\nbaseline = "b.json"\n[tool.ragdive.gate]\nfaithfulness = 0.02\ncontext_recall = 0.03\n'
        '[tool.ragdive.suites.core]\nsingle_turn = ["q.jsonl"]\n'
    )
    cfg = load_config(tmp_path / "pyproject.toml")
    cfg.update_baseline = True
    convs = [scored(f"c{i}", faithfulness=[None], correctness=[1.0]) for i in range(3)]
    out = conclude(convs, cfg, None, RunFacts(planned=3))
    assert out.status is GateStatus.BASELINE_REFUSED and out.baseline is None
    assert any("baseline NOT written: suite core: none of its gated metrics (faithfulness, context_recall) had a value"
               in n for n in out.notes)
    convs = [scored(f"c{i}", faithfulness=[1.0], correctness=[1.0]) for i in range(3)]
    assert conclude(convs, cfg, None, RunFacts(planned=3)).status is GateStatus.BASELINE_WRITTEN  # one with a value: written
