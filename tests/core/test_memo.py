"""The scoring memos are session state (core/memo.py): registered, cleared at a session's start
and end, and the only module-level caches besides a few per-process resources."""

from __future__ import annotations

import ast
import importlib
import json
import textwrap
from pathlib import Path

import pytest
from factories import contexts, conversation, turn

import pytest_ragdive as rd
from pytest_ragdive.core import memo as memo_mod
from pytest_ragdive.core.memo import MemoScope, clear_memos, memo, memo_sizes
from pytest_ragdive.metrics import text
from pytest_ragdive.metrics.offline import score_conversation

PACKAGE = Path(rd.__file__).resolve().parent

# module (under pytest_ragdive/) -> the functions that keep a functools cache for the whole process
# (read-only data or a per-process resource, not session state); core/memo.py builds every other one
ALLOWED = {
    ("llm/prompts.py", "load_prompt"),  # the bundled prompt files
    ("attacks/library.py", "bundled_attacks"),  # the bundled attack library
    ("attacks/poison.py", "load_poison"),  # the bundled poisoned documents
    ("metrics/ragas_backend.py", "require_ragas"),  # an import
    ("metrics/semantic.py", "embedder"),  # the embedded model, loaded once per process
    ("metrics/judged/combined.py", "reply_schema"),  # one class per set of SPECS names
}
CACHES = {"lru_cache", "cache"}


def _process_caches(tree: ast.Module) -> set[str]:
    """The functions of a module decorated with functools' caches, and ``<use>`` for any other use of them."""
    names = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "functools"
             for a in n.names if a.name in CACHES}
    modules = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
               if a.name == "functools"}

    def is_cache(node: ast.AST) -> bool:
        if isinstance(node, ast.Call):
            node = node.func
        return (isinstance(node, ast.Name) and node.id in names) or (
            isinstance(node, ast.Attribute) and node.attr in CACHES
            and isinstance(node.value, ast.Name) and node.value.id in modules
        )

    found: set[str] = set()
    decorators: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for d in node.decorator_list:
                if is_cache(d):
                    found.add(node.name)
                    decorators.update(id(n) for n in ast.walk(d))
    for node in ast.walk(tree):
        if id(node) not in decorators and isinstance(node, ast.Name | ast.Attribute) and is_cache(node):
            found.add("<use>")
    return found


def _sources(mentioning: str) -> dict[str, ast.Module]:
    """The package's modules whose source mentions ``mentioning``, parsed."""
    texts = {p.relative_to(PACKAGE).as_posix(): p.read_text(encoding="utf-8") for p in sorted(PACKAGE.rglob("*.py"))}
    return {path: ast.parse(src) for path, src in texts.items() if mentioning in src}


def test_no_module_keeps_a_cache_of_its_own_beyond_the_allowed_ones() -> None:
    found = {(path, fn) for path, tree in _sources("functools").items()
             if path != "core/memo.py" for fn in _process_caches(tree)}
    assert found == ALLOWED, "a cache of pure text is a session memo: @memo(maxsize=...) from core/memo.py"


def test_the_guard_sees_every_spelling() -> None:
    src = textwrap.dedent(
        """
        import functools as ft
        from functools import cache as c, lru_cache
        @ft.lru_cache(maxsize=3)
        def a(x): return x
        @c
        def b(x): return x
        @lru_cache
        def d(x): return x
        e = ft.cache(len)
        """
    )
    assert _process_caches(ast.parse(src)) == {"a", "b", "d", "<use>"}


def test_every_memo_is_registered() -> None:
    """Each ``@memo`` of the package is in the registry once its module is imported."""
    want: set[str] = set()
    for path, tree in _sources("@memo").items():
        module = "pytest_ragdive." + path.removesuffix(".py").replace("/", ".")
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(
                isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "memo" for d in node.decorator_list
            ):
                importlib.import_module(module)
                want.add(f"{module}.{node.name}")
    assert len(want) >= 30
    assert want <= set(memo_sizes())
    assert len(memo_mod._MEMOS) + len(memo_mod._HELD) == len(memo_sizes())  # one entry a function, even after a module is imported again


def test_memo_is_lru_caches_own_wrapper() -> None:
    @memo(maxsize=2)
    def double(x: str) -> str:
        return x * 2

    assert type(double).__name__ == "_lru_cache_wrapper"  # no frame of ours around a call
    assert double("ab") == "abab" and double.cache_info().maxsize == 2
    assert memo_sizes()[f"{__name__}.test_memo_is_lru_caches_own_wrapper.<locals>.double"] == 1
    clear_memos()
    assert double.cache_info().currsize == 0


def _scored() -> rd.Conversation:
    conv = conversation(
        "c",
        turn("When do refunds arrive?", answer="Refunds arrive within 5 business days [1].",
             ground_truth="Refunds arrive within five business days.",
             contexts=[c.text for c in contexts("Refunds are paid back within 5 business days.", "Shipping is free.")]),
        turn("And my email?", answer="Write to jane.doe@example.com, it is free.", ground_truth="Support answers by email.",
             contexts=["Support answers every email within a day."]),
    )
    score_conversation(conv)
    return conv


def test_scoring_fills_the_memos_and_clearing_changes_no_score() -> None:
    clear_memos()
    assert sum(memo_sizes().values()) == 0
    warm = _scored()
    sizes = memo_sizes()
    for name in ("pytest_ragdive.metrics.text.match_terms", "pytest_ragdive.metrics.safety._pii_hits",
                 "pytest_ragdive.metrics.grounding._unit_supports",
                 "pytest_ragdive.metrics.semantic.Embedder.rows"):  # the embedded model's rows per text too
        assert sizes[name] > 0, name
    again = _scored()  # from the memos
    clear_memos()
    assert sum(memo_sizes().values()) == 0
    cold = _scored()
    assert warm.model_dump_json() == again.model_dump_json() == cold.model_dump_json()
    assert warm.turns[0].scores and warm.failures  # (it scored something: a score per turn, the e-mail address)


def test_memo_scope_clears_on_entry_and_on_exit() -> None:
    text.normalize_answer("a memo before the scope")
    with pytest.raises(RuntimeError), MemoScope():
        assert sum(memo_sizes().values()) == 0
        text.normalize_answer("a memo in the scope")
        assert memo_sizes()["pytest_ragdive.metrics.text.normalize_answer"] == 1
        raise RuntimeError("a failed run")
    assert sum(memo_sizes().values()) == 0


def _probe_hits() -> int:
    """Whether the probe text is still memoised (a hit) or not (a miss)."""
    before = text.normalize_answer.cache_info().hits
    text.normalize_answer("memo probe: filled before the session")
    return text.normalize_answer.cache_info().hits - before


def test_run_suite_starts_and_ends_with_empty_memos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, int]] = []

    @rd.metric("probe_memos", definition="the memos while this run scores")
    def probe(turn: rd.Turn, conversation: rd.Conversation) -> float:
        seen.append((_probe_hits(), sum(memo_sizes().values())))
        return 1.0

    (tmp_path / "q.jsonl").write_text(json.dumps({"question_id": "q1", "question": "Hi?", "expected_answer": "hello"}) + "\n")
    (tmp_path / "pyproject.toml").write_text('[tool.ragdive.suites.core]\nsingle_turn = ["q.jsonl"]\n')
    monkeypatch.chdir(tmp_path)
    _probe_hits()
    assert _probe_hits() == 1  # memoised before the run
    res = rd.run_suite(lambda messages: "hello there", tmp_path / "pyproject.toml", metrics=[probe])
    assert res.value("probe_memos") == 1.0
    assert seen and seen[0][0] == 0  # the run started without the earlier entry
    assert seen[0][1] > 1  # and scoring filled memos
    assert sum(memo_sizes().values()) == 0  # which it emptied when it ended


PROBE_CONFTEST = '''
def _probe_hits():
    from pytest_ragdive.metrics import text
    before = text.normalize_answer.cache_info().hits
    text.normalize_answer("memo probe: filled before the session")
    return text.normalize_answer.cache_info().hits - before

def pytest_sessionstart(session):
    (session.config.rootpath / "start.txt").write_text(str(_probe_hits()))

def pytest_sessionfinish(session):
    from pytest_ragdive.core.memo import memo_sizes
    (session.config.rootpath / "finish.txt").write_text(str(sum(memo_sizes().values())))
'''


def test_a_pytest_session_starts_and_ends_with_empty_memos(toy: pytest.Pytester) -> None:
    toy.makeconftest((toy.path / "conftest.py").read_text() + PROBE_CONFTEST)
    _probe_hits()
    assert _probe_hits() == 1
    toy.runpytest_inprocess("--ragdive-suite=core", "-p", "no:cacheprovider").assert_outcomes(passed=5)
    assert (toy.path / "start.txt").read_text() == "0"  # the earlier entry was gone when the session started
    assert int((toy.path / "finish.txt").read_text()) > 10  # the session scored from its memos
    assert sum(memo_sizes().values()) == 0  # and cleared them when it ended
