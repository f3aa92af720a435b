"""Bad golden and corpus files: exit 4 with the file, line and ids (no
INTERNALERROR, no silent acceptance); judges of generated conversations see
their own corpus."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import PYPROJECT
from test_plugin_llm import CORPUS, scripted

from pytest_ragdive.testing import FAKE_KEY_ENV, FakeLLMServer

TOY_CORPUS = [
    {"id": "sky", "title": "Sky", "text": "The sky is blue on a clear day."},
    {"id": "grass", "title": "Grass", "text": "Grass is green in spring."},
    {"id": "snow", "title": "Snow", "text": "Snow is white and cold."},
]


def with_corpus(toy: pytest.Pytester, docs: list[dict[str, str]] | None = TOY_CORPUS, name: str = "corpus.jsonl") -> None:
    if docs is not None:
        (toy.path / name).write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    toy.makefile(".toml", pyproject=PYPROJECT.format(extra=f'corpus = "{name}"'))


def usage_error(toy: pytest.Pytester) -> str:
    res = toy.runpytest("--ragdive-suite=core")
    out = res.stderr.str() + res.stdout.str()
    assert res.ret == pytest.ExitCode.USAGE_ERROR, out
    assert "Traceback" not in out and "INTERNALERROR" not in out
    return res.stderr.str()


def test_a_consistent_corpus_runs(toy: pytest.Pytester) -> None:
    with_corpus(toy)
    toy.runpytest("--ragdive-suite=core").assert_outcomes(passed=5)


def test_non_utf8_golden_file_names_file_and_line(toy: pytest.Pytester) -> None:
    path = toy.path / "data" / "single.jsonl"
    lines = path.read_bytes().splitlines()
    lines[1] = lines[1].replace(b"grass?", b"gr\xe4ss?")  # latin-1, not UTF-8
    path.write_bytes(b"\n".join(lines) + b"\n")
    err = usage_error(toy)
    assert f"{path}:2: not UTF-8 text (byte 0xe4 at column" in err


def test_non_utf8_corpus_names_file_and_line(toy: pytest.Pytester) -> None:
    with_corpus(toy)
    path = toy.path / "corpus.jsonl"
    path.write_bytes(path.read_bytes() + b'{"id": "x", "text": "caf\xe9"}\n')
    err = usage_error(toy)
    assert f"{path}:4: not UTF-8 text (byte 0xe9" in err


def test_missing_corpus_file(toy: pytest.Pytester) -> None:
    with_corpus(toy, None, name="nowhere.jsonl")
    err = usage_error(toy)
    assert f"{toy.path / 'nowhere.jsonl'}: corpus file not found (corpus = 'nowhere.jsonl'" in err


def test_document_ids_not_in_the_corpus_name_the_files_and_ids(toy: pytest.Pytester) -> None:
    with_corpus(toy, [d for d in TOY_CORPUS if d["id"] != "snow"])
    err = usage_error(toy)
    single, convs = toy.path / "data" / "single.jsonl", toy.path / "data" / "convs.yaml"
    assert f"{single}, {convs}: document id(s) not in the corpus {toy.path / 'corpus.jsonl'}: 'snow' (in c-colours, q-snow)" in err


def test_judges_of_generated_conversations_see_the_generated_corpus(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conftest import TOY_CONFTEST

    monkeypatch.setenv(FAKE_KEY_ENV, "sk-test")
    pytester.makeconftest(TOY_CONFTEST)
    (pytester.path / "gen.jsonl").write_text("\n".join(json.dumps(d) for d in CORPUS) + "\n")
    (pytester.path / "other.jsonl").write_text(json.dumps({"id": "moon", "text": "The moon is grey."}) + "\n")
    with FakeLLMServer(scripted) as server:
        pytester.makefile(
            ".toml",
            pyproject=f"""
[tool.ragdive]
corpus = "other.jsonl"
model = "openai/fake-model"
[tool.ragdive.llm]
api_base = "{server.url}"
api_key_env = "{FAKE_KEY_ENV}"
transport = "openai_http"
timeout_s = 5
[tool.ragdive.suites.core]
generated = {{ conversations = 2, turns = 1, corpus = "gen.jsonl", seed = 1 }}
""",
        )
        res = pytester.runpytest_subprocess("--ragdive-suite=core", "-p", "no:cacheprovider", "--ragdive-record-mode=off")
        res.assert_outcomes(passed=2)
        bodies: list[dict[str, Any]] = server.requests
    correctness = [b for b in bodies if "Reference document the question was written from" in b["messages"][-1]["content"]]
    assert len(correctness) == 2
    for body in correctness:
        text = body["messages"][-1]["content"]
        assert "(none available)" not in text
        assert any(d["text"] in text for d in CORPUS)
