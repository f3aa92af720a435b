"""Per-case assertions (``assert:`` in golden data): every type passes and fails, bad ones
are file:line errors (exit 4), a violated one fails its item naming the check, the turn,
the question and the answer, and ``assertion_pass_rate`` is gated with zero tolerance."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import PYPROJECT, results

from pytest_ragdive.core.errors import GoldenError
from pytest_ragdive.core.records import Context, Conversation, Turn, Verdict
from pytest_ragdive.metrics.assertions import TYPES, parse_assertions
from pytest_ragdive.metrics.checks import check_assertions
from pytest_ragdive.sources.golden import load_conversations, load_single_turn

ANSWER = "Open Settings > Billing and press Cancel [billing-faq]. Refunds take 5 days."


def _turn(answer: str = ANSWER, **kw: Any) -> Turn:
    return Turn(rag_input="How do I cancel?", answer=answer, **kw)


def _check(spec: dict[str, Any], turn: Turn | None = None) -> str | None:
    (a,) = parse_assertions([spec])
    t = turn or _turn()
    return a.check(t, Conversation(id="c", turns=[t]))


# each type: an argument the answer meets, and one it does not
CASES: list[tuple[dict[str, Any], dict[str, Any], str]] = [
    ({"contains": "Settings"}, {"contains": "settings"}, "does not contain 'settings'"),
    ({"not_contains": "refund amount"}, {"not_contains": "Refunds"}, "the answer contains 'Refunds'"),
    ({"icontains": "BILLING"}, {"icontains": "invoice"}, "ignoring case"),
    ({"regex": r"\d+ days"}, {"regex": r"\d+ weeks"}, "no match"),
    ({"not_regex": r"\$\d+"}, {"not_regex": r"\d+ days"}, "matches it: '5 days'"),
    ({"max_words": 20}, {"max_words": 5}, "has 12 words"),
    ({"cites": "billing-faq"}, {"cites": "shipping"}, "neither cited nor among the retrieved contexts"),
    ({"language": "en"}, {"language": "de"}, "reads as 'en'"),
    ({"python": "own_checks:short"}, {"python": "own_checks:polite"}, "no please"),
]


@pytest.fixture(autouse=True)
def _own_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "own_checks.py").write_text(textwrap.dedent(
        """
        def short(turn, conversation):
            return len(turn.answer) < 200

        def polite(turn, conversation):
            return True if "please" in turn.answer.lower() else "no please in the answer"

        def boom(turn, conversation):
            raise RuntimeError("checker broke")
        """
    ))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("own_checks", None)


def test_every_type_is_covered() -> None:
    assert {next(iter(ok)) for ok, _, _ in CASES} | {"json_schema", "rubric"} == set(TYPES)


@pytest.mark.parametrize(("ok", "bad", "why"), CASES, ids=[next(iter(c[0])) for c in CASES])
def test_each_type_passes_and_fails(ok: dict[str, Any], bad: dict[str, Any], why: str) -> None:
    assert _check(ok) is None
    got = _check(bad)
    assert got is not None and why in got


def test_cites_reads_citations_and_contexts() -> None:
    turn = _turn("See the FAQ.", citations=["Refund-Policy"], contexts=[Context(id="c1", doc_id="plans", text="x")])
    assert _check({"cites": "refund-policy"}, turn) is None
    assert _check({"cites": "plans"}, turn) is None


def test_json_schema_passes_and_fails() -> None:
    schema = {"type": "object", "required": ["days"], "properties": {"days": {"type": "integer"}}}
    assert _check({"json_schema": schema}, _turn('```json\n{"days": 5}\n```')) is None
    assert "days: 'five' is not of type 'integer'" in (_check({"json_schema": schema}, _turn('{"days": "five"}')) or "")
    assert "not JSON" in (_check({"json_schema": schema}, _turn("five days")) or "")


def test_a_python_check_that_raises_fails_with_its_error() -> None:
    assert "raised RuntimeError: checker broke" in (_check({"python": "own_checks:boom"}) or "")
    assert "cannot load no_such_mod:f" in (_check({"python": "no_such_mod:f"}) or "")


def test_rubric_passes_and_fails_by_the_judge_and_is_skipped_without_one() -> None:
    conv = Conversation(id="c", turns=[_turn()])
    checks = {0: parse_assertions([{"rubric": "The answer is polite."}, {"contains": "Settings"}])}

    async def judge(yes: bool) -> None:
        async def rubric(criteria: str, turn: Turn) -> Verdict:
            assert criteria == "The answer is polite."
            return Verdict(value=1.0 if yes else 0.0, reason="curt" if not yes else "ok")

        await check_assertions(conv, checks, rubric)

    asyncio.run(judge(True))
    assert conv.turns[0].scores["assertion_pass_rate"] == 1.0 and not conv.failures
    asyncio.run(judge(False))
    assert conv.turns[0].scores["assertion_pass_rate"] == 0.5
    assert conv.failures == ["turn 1: assertion rubric 'The answer is polite.' failed: curt"]
    offline = Conversation(id="d", turns=[_turn()])
    asyncio.run(check_assertions(offline, checks, None))
    assert offline.turns[0].scores["assertion_pass_rate"] == 1.0 and not offline.failures
    assert "1 rubric check(s) skipped (no model)" in offline.turns[0].verdicts["assertion_pass_rate"].reason


@pytest.mark.parametrize(
    ("check", "why"),
    [
        ({"regex": "(unclosed"}, "bad regular expression '(unclosed'"),
        ({"not_regex": "[z-a]"}, "bad regular expression"),
        ({"sounds_nice": "x"}, "unknown type 'sounds_nice'"),
        ({"language": "klingon"}, "the offline detector knows en, de"),
        ({"json_schema": {"type": "nope"}}, "not a JSON schema"),
        ({"max_words": "ten"}, "valid integer"),
        ({"python": "no_colon"}, "expected 'package.module:function'"),
        ({"type": "contains"}, "value"),
        ("contains Settings", "expected {type: NAME, value: ...}"),
    ],
)
def test_malformed_assertions_are_file_and_line_errors(tmp_path: Path, check: Any, why: str) -> None:
    rows = [{"question_id": "ok", "question": "q"}, {"question_id": "bad", "question": "q", "assert": [check]}]
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(GoldenError) as e:
        load_single_turn(path)
    assert str(e.value).startswith(f"{path}:2: assert") and why in str(e.value)
    yaml_path = tmp_path / "convs.yaml"
    yaml_path.write_text("- id: a\n  turns:\n    - rag_input: hi\n- id: b\n  turns:\n    - rag_input: hi\n"
                         f"      assert: [{json.dumps(check)}]\n")
    with pytest.raises(GoldenError) as e:
        load_conversations(yaml_path)
    assert str(e.value).startswith(f"{yaml_path}:7: turns.0.assert") and why in str(e.value)  # the key's line


ASSERTS = {
    "q-sky": [{"contains": "blue"}, {"cites": "sky"}, {"max_words": 12}, {"language": "en"}],
    "q-grass": [{"type": "regex", "value": "(?i)green"}, {"not_contains": "Refunds"}],
}
CONV_ASSERT = """      assert:
        - icontains: WHITE
        - not_regex: "(?i)refund"
"""


def _asserted(toy: pytest.Pytester) -> None:
    """The toy's golden data with assert: lists on two cases and one conversation turn."""
    from conftest import CONVS, SINGLE

    rows = [{**r, "assert": ASSERTS[r["question_id"]]} if r["question_id"] in ASSERTS else r for r in SINGLE]
    (toy.path / "data" / "single.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    marker = "      ground_truth: white\n      question_type: Follow-up\n      relevant_doc_ids: [snow]\n"
    assert marker in CONVS
    (toy.path / "data" / "convs.yaml").write_text(CONVS.replace(marker, marker + CONV_ASSERT))


def test_a_violated_assertion_fails_its_item_naming_check_turn_question_and_answer(
    toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _asserted(toy)
    toy.makefile(".toml", pyproject=PYPROJECT.format(extra="").replace("safety_pass_rate = 0\n",
                                                                        "safety_pass_rate = 0\nassertion_pass_rate = 0\n"))
    res = toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline")
    res.assert_outcomes(passed=5)
    data = results(toy)
    assert data["suites"]["core"]["assertion_pass_rate"] == 1.0
    assert json.loads((toy.path / "b.json").read_text())["suites"]["core"]["assertion_pass_rate"]["tolerance"] == 0.0
    monkeypatch.setenv("TOY_UNSAFE", "1")  # "Refunds are guaranteed." appended to every answer
    res = toy.runpytest("--ragdive-baseline=b.json")
    res.assert_outcomes(passed=2, failed=3)  # q-sky breaks its negative assertion (safety) too
    res.stdout.fnmatch_lines([
        "*failed check(s) in core/c-colours (run 0):*",
        "*turn 2 (Follow-up): question: 'What colour is it?'*",
        "*stand-alone question: 'What colour is snow?'*",
        "*answer: 'Snow is white and cold. Refunds are guaranteed.'*",
        "*assertion not_regex '(?i)refund' failed: the answer matches it: 'Refund'*",
    ])
    res.stdout.fnmatch_lines(["*failed check(s) in core/q-grass*", "*assertion not_contains 'Refunds' failed*"])
    rows = {r["metric"]: r for r in results(toy)["gate"]}
    assert rows["assertion_pass_rate"]["verdict"] == "regression" and rows["assertion_pass_rate"]["tolerance"] == 0.0


def test_assertion_pass_rate_is_gated_only_where_the_baseline_holds_it(toy: pytest.Pytester) -> None:
    """The default gate lists it: a suite without assert: checks is not failed for lacking it."""
    toy.makefile(".toml", pyproject=PYPROJECT.format(extra="").split("[tool.ragdive.gate]")[0]
                 + "[tool.ragdive.suites.core]\nsingle_turn = [\"data/single.jsonl\"]\nconversations = [\"data/convs.yaml\"]\n")
    toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline").assert_outcomes(passed=5)
    assert "assertion_pass_rate" not in json.loads((toy.path / "b.json").read_text())["suites"]["core"]
    res = toy.runpytest("--ragdive-baseline=b.json")
    res.assert_outcomes(passed=5)
    assert res.ret == 0 and "assertion_pass_rate" not in {r["metric"] for r in results(toy)["gate"]}
    _asserted(toy)  # checks added after the baseline: reported, a note, not gated until re-recorded
    res = toy.runpytest("--ragdive-baseline=b.json")
    assert "assertion_pass_rate not in the baseline: not gated" in res.stdout.str().replace("\n", " ")


def test_malformed_assertion_in_a_run_is_exit_4_with_file_and_line(toy: pytest.Pytester) -> None:
    from conftest import SINGLE

    bad = [*SINGLE[:1], {"question_id": "q-bad", "question": "q?", "assert": [{"regex": "[unclosed"}]}]
    (toy.path / "data" / "single.jsonl").write_text("\n".join(json.dumps(r) for r in bad) + "\n")
    res = toy.runpytest("--ragdive-suite=core")
    assert res.ret == 4
    err = res.stderr.str()
    assert "single.jsonl:2: assert.0.regex.value: bad regular expression '[unclosed'" in err and "Traceback" not in err
