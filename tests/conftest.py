"""Shared fixtures: a small toy RAG project written into a pytester dir."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import textwrap
from pathlib import Path
from types import ModuleType

# Imported here so that pytester's in-process runs, which restore sys.modules
# after each run, never import numpy twice (its C core cannot be reloaded).
import numpy  # noqa: F401
import pytest
import yaml  # noqa: F401  (its C extension, too, is loaded once per process)

# Likewise the plugin's own modules: loaded once, so classes compared with
# isinstance/except are the same objects in every in-process run.
import pytest_ragdive.metrics.aggregate  # noqa: F401
import pytest_ragdive.metrics.offline  # noqa: F401
import pytest_ragdive.plugin.items  # noqa: F401
import pytest_ragdive.plugin.session  # noqa: F401
import pytest_ragdive.reports.write  # noqa: F401
import pytest_ragdive.run.api  # noqa: F401

# langsmith (installed with the [ragas] extra) registers a pytest plugin whose import costs
# 2-3 s of CPU at every pytest start-up. The suite starts a hundred or more pytest processes
# of its own (subprocess runs, pytester's runpytest_subprocess, the workflow emulator): each
# is told not to load it. pyproject's addopts does it for the outer run only.
NO_LANGSMITH = "-p no:langsmith_plugin"


def without_langsmith(addopts: str = "") -> str:
    """``addopts`` (a PYTEST_ADDOPTS value) that also keeps langsmith's plugin out."""
    return addopts if NO_LANGSMITH in addopts else f"{addopts} {NO_LANGSMITH}".strip()


os.environ["PYTEST_ADDOPTS"] = without_langsmith(os.environ.get("PYTEST_ADDOPTS", ""))


#: the repository's root (benchmarks/, docs/, example_project/)
REPO = Path(__file__).resolve().parents[1]


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py``, imported by path (:func:`load_script`)."""
    return load_script(REPO / "benchmarks" / f"{name}.py")


def load_script(path: Path) -> ModuleType:
    """A script that is not a package module (a benchmark, a docs generator), imported by path
    under its file name (registered in sys.modules: its dataclasses need it)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester, whose set-up clears PYTEST_ADDOPTS, with langsmith's plugin kept out again."""
    monkeypatch.setenv("PYTEST_ADDOPTS", NO_LANGSMITH)
    return pytester


TOY_CONFTEST = textwrap.dedent(
    '''
    import os
    import pytest
    from pytest_ragdive import Context, TargetResponse

    DOCS = {
        "sky": "The sky is blue on a clear day.",
        "grass": "Grass is green in spring.",
        "snow": "Snow is white and cold.",
    }

    def bot(messages):
        if os.environ.get("TOY_RAISE_ON") and os.environ["TOY_RAISE_ON"] in messages[-1]["content"]:
            raise RuntimeError("toy bot exploded")
        users = [m["content"].lower() for m in messages if m["role"] == "user"]
        # healthy: look at the whole history; broken: only the last message
        text = users[-1] if os.environ.get("TOY_FORGET") else " ".join(users)
        last = users[-1]
        hits = [d for d in DOCS if d in last] or [d for d in DOCS if d in text]
        if not hits:
            return TargetResponse(answer="I don't know.")
        doc = hits[-1]
        answer = DOCS[doc]
        if os.environ.get("TOY_UNSAFE"):
            answer += " Refunds are guaranteed."
        return TargetResponse(answer=answer, contexts=[Context(id=doc + "#0", doc_id=doc, text=DOCS[doc])])

    @pytest.fixture(scope="session")
    def ragdive_target():
        return bot
    '''
)

SINGLE = [
    {"question_id": "q-sky", "question": "What colour is the sky?", "expected_answer": "blue", "relevant_doc_ids": ["sky"],
     "negative_assertions": ["guaranteed"]},
    {"question_id": "q-grass", "question": "What colour is grass?", "expected_answer": "green", "relevant_doc_ids": ["grass"]},
    {"question_id": "q-snow", "question": "Is snow cold?", "expected_answer": "white and cold", "relevant_doc_ids": ["snow"]},
]

CONVS = """
- id: c-colours
  turns:
    - rag_input: Tell me about snow.
      ground_truth: Snow is white and cold.
      relevant_doc_ids: [snow]
    - rag_input: What colour is it?
      standalone_question: What colour is snow?
      ground_truth: white
      question_type: Follow-up
      relevant_doc_ids: [snow]
- id: c-grass
  turns:
    - rag_input: Tell me about grass.
      ground_truth: Grass is green in spring.
      relevant_doc_ids: [grass]
    - rag_input: When is it green?
      standalone_question: When is grass green?
      ground_truth: in spring
      question_type: Follow-up
      relevant_doc_ids: [grass]
"""

PYPROJECT = """
[tool.ragdive]
report_dir = "report"
{extra}
[tool.ragdive.gate]
correctness = 0.05
forgetfulness = 0.0
safety_pass_rate = 0
[tool.ragdive.suites.core]
single_turn = ["data/single.jsonl"]
conversations = ["data/convs.yaml"]
"""


@pytest.fixture
def toy(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for var in ("TOY_FORGET", "TOY_RAISE_ON", "TOY_UNSAFE", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(var, raising=False)
    pytester.makeconftest(TOY_CONFTEST)
    data = pytester.mkdir("data")
    (data / "single.jsonl").write_text("\n".join(json.dumps(r) for r in SINGLE) + "\n")
    (data / "convs.yaml").write_text(CONVS)
    pytester.makefile(".toml", pyproject=PYPROJECT.format(extra=""))
    return pytester


def results(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / "report" / "results.json").read_text())


def llm_project(pytester: pytest.Pytester, corpus: list[dict[str, str]], *, llm: str, rest: str, top: str = "") -> None:
    """A toy project on the LLM path: the toy bot, ``corpus`` as corpus.jsonl and a
    pyproject whose ``[tool.ragdive.llm]`` table holds ``llm`` (key = value lines);
    ``top`` goes under ``[tool.ragdive]``, ``rest`` (gate, suites) after the llm table."""
    pytester.makeconftest(TOY_CONFTEST)
    (pytester.path / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in corpus) + "\n")
    pytester.makefile(
        ".toml",
        pyproject=(
            '[tool.ragdive]\ncorpus = "corpus.jsonl"\nreport_dir = "report"\nmodel = "openai/fake-model"\n'
            f"{textwrap.dedent(top)}\n[tool.ragdive.llm]\n{textwrap.dedent(llm)}\n{textwrap.dedent(rest)}"
        ),
    )


def default_sigint() -> None:
    """``preexec_fn`` of a child that a test will interrupt: SIGINT back to its default,
    so Python installs its own handler even when the suite runs as a background job
    (which starts with SIGINT ignored)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """``slow``: a test that runs real pytest sessions (pytester) or other processes;
    ``pytest -m "not slow"`` is the inner loop. A module that starts processes of its
    own says so with ``pytestmark = pytest.mark.slow``."""
    for item in items:
        if "pytester" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
