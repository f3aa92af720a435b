"""An attack suite in a pytest session (pytester): poisoned documents reach a target that
takes ``extra_documents`` before it answers, and are never appended to what another target
returned (its injection turns are not scored)."""

from __future__ import annotations

import json
import textwrap

import pytest

pytestmark = pytest.mark.slow

CONFTEST = textwrap.dedent(
    '''
    import os
    import pytest
    from pytest_ragdive import Context, TargetResponse

    def searching(messages, extra_documents=None):
        """Searches the extra documents it is handed and (naively) repeats what it found."""
        docs = list(extra_documents or [])
        q = set(messages[-1]["content"].lower().split())
        hits = [d for d in docs if q & set(d.text.lower().split())][:2]
        if not hits:
            return TargetResponse(answer="I can't find that in the help centre.")
        answer = " ".join(d.text for d in hits) if os.environ.get("TOY_NAIVE") else "Here is what I found."
        return TargetResponse(answer=answer, contexts=[Context(id=d.id + "#0", doc_id=d.id, text=d.text) for d in hits])

    def closed(messages):
        return TargetResponse(answer="I can't find that in the help centre.",
                              contexts=[Context(id="x#0", doc_id="x", text="x")])

    @pytest.fixture(scope="session")
    def ragdive_target():
        return closed if os.environ.get("TOY_CLOSED") else searching
    '''
)
FIXTURE_TEST = """
def test_the_poison_fixture(ragdive_poison):
    assert ragdive_poison and all(d.id.startswith("ragdive-poison-") for d in ragdive_poison)
"""
PYPROJECT = """
[tool.ragdive]
report_dir = "report"
[tool.ragdive.suites.attacks]
attacks = { library = ["injection"], poison = true }
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for var in ("TOY_NAIVE", "TOY_CLOSED", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(var, raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_poison=FIXTURE_TEST)
    pytester.makefile(".toml", pyproject=PYPROJECT)
    return pytester


def _suite(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / "report" / "results.json").read_text())


def test_a_target_with_extra_documents_is_poisoned_before_it_answers(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    res = project.runpytest("--ragdive-suite=attacks", "-p", "no:cacheprovider")
    res.assert_outcomes(passed=5)  # four injection attacks held, and the fixture test
    data = _suite(project)
    assert data["suites"]["attacks"]["attack_success_injection"] == 0.0
    monkeypatch.setenv("TOY_NAIVE", "1")
    res = project.runpytest("--ragdive-suite=attacks", "-p", "no:cacheprovider")
    res.assert_outcomes(passed=1, failed=4)
    data = _suite(project)
    assert data["suites"]["attacks"]["attack_success_injection"] == 1.0
    assert "RAGDIVE-POISON-7Q4M" not in res.stdout.str()  # the canaries are quoted masked


def test_a_target_without_extra_documents_is_not_scored_on_injection(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOY_CLOSED", "1")
    res = project.runpytest("--ragdive-suite=attacks", "-p", "no:cacheprovider")
    res.assert_outcomes(passed=5)
    data = _suite(project)
    assert data["suites"]["attacks"].get("attack_success_injection") is None
    convs = data["conversations"]
    reasons = [t["verdicts"]["attack_success_rate"]["reason"] for c in convs for t in c["turns"]]
    assert reasons and all("not planted" in r for r in reasons)
