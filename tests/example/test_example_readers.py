"""The example's reader styles against its recorded baseline, through the plugin's own
suite runner and gate helper: the healthy bot passes the core gate, the one that answers
from "memory" fails it on faithfulness, the one that paraphrases passes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "example_project"
if str(EXAMPLE) not in sys.path:
    sys.path.insert(0, str(EXAMPLE))

from example_rag import BotConfig, HelpCentreBot  # noqa: E402
from example_rag.styles import blend_memory, paraphrase, restate  # noqa: E402

from pytest_ragdive import run_suite  # noqa: E402
from pytest_ragdive.core.config import load_config  # noqa: E402
from pytest_ragdive.core.results import SuiteResult  # noqa: E402
from pytest_ragdive.gate.assertions import assert_no_regression  # noqa: E402
from pytest_ragdive.gate.baseline import load_baseline  # noqa: E402

GATED = ["answer_f1", "correctness", "faithfulness", "recall_at_k", "context_recall", "forgotten_turn_share", "safety_pass_rate"]


def core(reader: str) -> SuiteResult:
    cfg = load_config(EXAMPLE / "pyproject.toml")
    return run_suite(HelpCentreBot(BotConfig(reader=reader)), cfg, "core")


@pytest.fixture(scope="module")
def tolerances() -> dict[str, float]:
    return dict(load_config(EXAMPLE / "pyproject.toml").gate)


def test_healthy_and_paraphrasing_readers_pass(tolerances: dict[str, float]) -> None:
    baseline = load_baseline(EXAMPLE / "baseline.json")
    for reader in ("extractive", "paraphrase"):
        assert_no_regression(core(reader), baseline, GATED, tolerances)


def test_memory_reader_fails_on_faithfulness(tolerances: dict[str, float]) -> None:
    baseline = load_baseline(EXAMPLE / "baseline.json")
    with pytest.raises(AssertionError) as err:
        assert_no_regression(core("memory"), baseline, GATED, tolerances)
    # one line per regressed metric: "core/faithfulness (↑ better): current ..."
    failed = {line.split()[0].split("/")[-1] for line in str(err.value).splitlines()}
    assert "faithfulness" in failed
    # issue 27: its answers are complete (correctness is coverage of the reference, no longer
    # times faithfulness), what it invents is faithfulness's to catch
    assert "correctness" not in failed


def test_styles_change_the_words_not_the_retrieval() -> None:
    bot = HelpCentreBot(BotConfig())
    q = [{"role": "user", "content": "How long does the Cam battery last?"}]
    plain = bot(q)
    memory = HelpCentreBot(BotConfig(reader="memory"))(q)
    para = HelpCentreBot(BotConfig(reader="paraphrase"))(q)
    assert [c.id for c in plain.contexts] == [c.id for c in memory.contexts] == [c.id for c in para.contexts]
    assert memory.answer.startswith(plain.answer.split(". ")[0])
    assert len(memory.answer) > len(plain.answer)
    assert para.answer != plain.answer
    assert restate("Refunds are issued within 14 days.") == "Within 14 days, refunds are issued."
    assert restate("E401 means the API key is missing.") == "E401 indicates the API key is missing."
    assert callable(blend_memory) and callable(paraphrase)
