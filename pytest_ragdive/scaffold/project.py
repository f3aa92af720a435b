"""What ``python -m pytest_ragdive init`` writes into a project, as text (pure: no I/O
but :func:`write_new`, which never overwrites).

- ``conftest.py``: the ``ragdive_target`` fixture: a stub to fill in, or one that returns
  the callable given as ``--target module:function``; with ``--url`` no fixture (it would
  win over ``target = {url = ...}``), a comment saying so;
- the ``[tool.ragdive]`` config: appended to pyproject.toml when there is one (nothing
  else in it is touched), else ``ragdive.yaml`` (where the plugin looks: see
  :func:`pytest_ragdive.core.config.find_config_file`);
- ``golden/<suite>/conversations.yaml`` for core (and extended): commented examples of a
  single-turn and a multi-turn case; the suite reads it once it has rows (an empty list
  is an error the loader names, with the command that drafts some);
- ``.github/workflows/ragdive.yml``: :func:`pytest_ragdive.scaffold.workflow.render`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GOLDEN_FILE = "golden/{suite}/conversations.yaml"
DRAFTS_FILE = "golden/drafts/{suite}.yaml"
REVIEW_FILE = "golden/drafts/{suite}-review.csv"
BASELINE_FILE = "baseline.json"
REPORT_DIR = ".ragdive/report"


@dataclass
class Written:
    path: Path
    written: bool
    note: str = ""


def write_new(path: Path, text: str) -> Written:
    """Write ``text`` to ``path`` unless something is there (never overwrites, never follows a link)."""
    if path.exists() or path.is_symlink():
        return Written(path, False, "exists, left as it is")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("x", encoding="utf-8") as fh:
        fh.write(text)
    return Written(path, True)


# --------------------------------------------------------------------------
# conftest.py

_CONFTEST_HEAD = '''"""The chatbot under test, for pytest-ragdive (written by `python -m pytest_ragdive init`).

ragdive sends every conversation of a suite to the `ragdive_target` fixture, one user
message at a time: it is called with the OpenAI-style history (a list of
{"role", "content"} dicts, the new user message last) and returns the answer, as a
string, or as {"answer": ..., "contexts": [{"id": ..., "text": ..., "doc_id": ...}]}
with the retrieved documents (the retrieval and grounding metrics read them). It may be
async. A bot behind HTTP: see docs/your-bot.md (a server started from this file, on a
free port per pytest-xdist worker).
"""

import pytest
'''

_STUB = _CONFTEST_HEAD + '''

@pytest.fixture(scope="session")
def ragdive_target():
    """The chatbot under test: replace the body of `answer` with a call to your bot."""

    def answer(messages):
        question = messages[-1]["content"]
        raise NotImplementedError(f"connect your chatbot in conftest.py (ragdive_target); asked: {question!r}")

    return answer
'''

_IMPORTED = _CONFTEST_HEAD + '''
from {module} import {name}


@pytest.fixture(scope="session")
def ragdive_target():
    """The chatbot under test: {module}.{name}."""
    return {name}
'''

_HTTP = '''"""pytest-ragdive (written by `python -m pytest_ragdive init --url ...`).

The chatbot under test is the HTTP target of the ragdive config (target = {url = ...}):
no `ragdive_target` fixture here, since a fixture of that name would be used instead
of it. To start the bot from this file, see docs/your-bot.md (a session fixture
starting a server on a free port per pytest-xdist worker).
"""
'''

_TARGET_RE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


def conftest_text(target: str | None = None, http: bool = False) -> str:
    if http:
        return _HTTP
    if target:
        if not _TARGET_RE.fullmatch(target):
            raise ValueError(f"--target: expected module:function (e.g. mybot.app:answer), got {target!r}")
        module, name = target.split(":")
        return _IMPORTED.replace("{module}", module).replace("{name}", name)
    return _STUB


# --------------------------------------------------------------------------
# the config


def suites_of(extended: bool) -> list[str]:
    return ["core", "extended"] if extended else ["core"]


def _toml_value(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items() if v is not None) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def config_toml(extended: bool, http: dict[str, Any] | None = None) -> str:
    """The ``[tool.ragdive]`` tables (appended to pyproject.toml)."""
    out = [
        "",
        "# pytest-ragdive: the RAG quality gate (written by `python -m pytest_ragdive init`;",
        "# every key: the configuration reference of the docs)",
        "[tool.ragdive]",
        f'report_dir = "{REPORT_DIR}"',
    ]
    if http:
        out.append(f"target = {_toml_value(http)}")
    out.append("# model = \"openai/gpt-4o-mini\"  # LLM judges and generated conversations (offline without one)")
    for suite in suites_of(extended):
        out += ["", f"[tool.ragdive.suites.{suite}]", f'conversations = ["{GOLDEN_FILE.format(suite=suite)}"]']
    return "\n".join(out) + "\n"


def config_yaml(extended: bool, http: dict[str, Any] | None = None) -> str:
    import yaml

    data: dict[str, Any] = {"report_dir": REPORT_DIR}
    if http:
        data["target"] = {k: v for k, v in http.items() if v is not None}
    data["suites"] = {s: {"conversations": [GOLDEN_FILE.format(suite=s)]} for s in suites_of(extended)}
    body = yaml.safe_dump({"ragdive": data}, sort_keys=False, allow_unicode=True)
    return ("# pytest-ragdive: the RAG quality gate (written by `python -m pytest_ragdive init`;\n"
            "# every key: the configuration reference of the docs)\n"
            "# model: openai/gpt-4o-mini under ragdive: LLM judges and generated conversations\n" + body)


def has_ragdive_table(pyproject_text: str) -> bool:
    return re.search(r"^\s*\[\s*tool\s*\.\s*ragdive\s*[\].]", pyproject_text, re.MULTILINE) is not None


# --------------------------------------------------------------------------
# golden files

_GOLDEN = """# The {suite} suite's golden conversations (pytest-ragdive; written by `python -m pytest_ragdive init`).
# Each conversation is sent to the chatbot turn by turn; each turn is scored against its
# ground truth and the documents that answer it (relevant_doc_ids: the ids your bot's
# contexts carry). A one-turn conversation is a single-turn case.
#
# Draft them from your documents, review, and keep what is right:
#   python -m pytest_ragdive draft-golden DOCS_DIR --suite {suite} --model MODEL
#   (fill golden/drafts/{suite}-review.csv: yes/no per criterion)
#   python -m pytest_ragdive import-review golden/drafts/{suite}-review.csv --accept golden/drafts/{suite}.yaml --into {golden}
# or write them by hand, for example:
#
# conversations:
#   - id: refund-window
#     category: simple
#     turns:
#       - rag_input: How long do I have to return an item?
#         ground_truth: 30 days from delivery.
#         relevant_doc_ids: [returns.md]
#   - id: refund-follow-up
#     category: conversation
#     turns:
#       - rag_input: How do I return a parcel?
#         ground_truth: Print the label from your account and drop the parcel at any post office.
#         relevant_doc_ids: [returns.md]
#       - rag_input: And how long does the refund take after that?
#         standalone_question: How long does a refund take after a returned parcel is dropped off?
#         ground_truth: 5 working days after the parcel arrives.
#         question_type: Follow-up
#         relevant_doc_ids: [refunds.md]
#   - id: out-of-scope-weather
#     category: out_of_scope
#     turns:
#       - rag_input: What will the weather be tomorrow?
#         ground_truth: I don't know; the help centre does not cover that.
#
# The suite reads this file once the list below has rows (an empty list is an error).
conversations: []
"""


def golden_text(suite: str) -> str:
    return _GOLDEN.format(suite=suite, golden=GOLDEN_FILE.format(suite=suite))


def next_commands(extended: bool, docs: str | None, drafted: bool) -> list[str]:
    """The three commands after ``init``."""
    first = (
        "python -m pytest_ragdive import-review golden/drafts/core-review.csv --accept golden/drafts/core.yaml "
        "--into golden/core/conversations.yaml   # after filling the review CSV"
        if drafted else
        f"python -m pytest_ragdive draft-golden {docs or 'DOCS_DIR'} --model MODEL   "
        "# then fill the review CSV and import-review it"
    )
    return [
        first,
        f"pytest --ragdive-baseline={BASELINE_FILE} --ragdive-update-baseline   # record the baseline",
        f"pytest --ragdive-baseline={BASELINE_FILE}   # the gate, as CI runs it",
    ]
