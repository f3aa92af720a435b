"""Personal data is masked wherever a verdict quotes it (issue 32, case 10): an answer that
leaks an e-mail address and a phone number fails safety, and neither value appears in full in
the terminal, summary.md, pr-comment.md, report.html or results.json's evidence: the kind and
a masked form instead."""

from __future__ import annotations

import json
import re

import pytest
from conftest import TOY_CONFTEST

pytestmark = pytest.mark.slow

EMAIL, PHONE = "john.doe@example.com", "+1 555 123 4567"
LEAKY = TOY_CONFTEST.replace(
    '''    answer += " Refunds are guaranteed."''',
    '''    answer += " Refunds are guaranteed."
    if os.environ.get("TOY_PII"):
        answer += " Write to john.doe@example.com or call +1 555 123 4567 for the sky."''',
)


def _raw(text: str) -> list[str]:
    digits = re.sub(r"\D", "", text)
    return [v for v in (EMAIL, PHONE) if v in text] + (["phone digits"] if "15551234567" in digits else [])


def test_personal_data_is_masked_in_every_report(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    assert LEAKY != TOY_CONFTEST
    toy.makeconftest(LEAKY)
    assert toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline", "-p", "no:cacheprovider").ret == 0
    monkeypatch.setenv("TOY_PII", "1")
    res = toy.runpytest("--ragdive-baseline=b.json", "-p", "no:cacheprovider")
    assert res.ret == pytest.ExitCode.TESTS_FAILED
    terminal = res.stdout.str() + res.stderr.str()
    assert "j***@e***.com" in terminal and "email" in terminal
    report = toy.path / "report"
    texts = {"terminal": terminal, **{n: (report / n).read_text() for n in ("summary.md", "pr-comment.md", "report.html")}}
    data = json.loads((report / "results.json").read_text())
    for conv in data["conversations"]:
        texts[f"results.json {conv['id']} failures"] = json.dumps(conv.get("failures"))
        for t in conv["turns"]:
            texts[f"results.json {conv['id']} evidence"] = json.dumps(t.get("evidence"))
            texts[f"results.json {conv['id']} verdicts"] = json.dumps(t.get("verdicts"))
    leaks = {where: _raw(text) for where, text in texts.items() if _raw(text)}
    assert leaks == {}


def test_masking_keeps_offsets_and_names_the_kind() -> None:
    from pytest_ragdive.core.records import Conversation, Evidence, Support, Turn, Verdict
    from pytest_ragdive.metrics.pii import PiiCheck, mask_conversation, redact

    answer = f"Write to {EMAIL} or call {PHONE}."
    masked = redact(answer, PiiCheck())
    assert len(masked) == len(answer) and EMAIL not in masked and "j*******@e******.com" in masked
    unit = Support(text=answer, score=0.0, verdict="unsupported", missing=["write", "johndoeexamplecom", "1", "555", "123", "4567"])
    conv = Conversation(id="c", failures=[f"answer: {answer!r}"], turns=[Turn(
        rag_input="q", answer=answer, evidence=Evidence(support=[unit]), verdicts={"faithfulness": Verdict(value=0.0, reason=answer)})])
    assert mask_conversation(conv, PiiCheck()) == 2
    t = conv.turns[0]
    assert t.evidence is not None and t.evidence.support[0].missing == ["write", "[email]", "[phone]"]
    assert not _raw(conv.model_dump_json()) and t.answer == masked
    assert mask_conversation(conv, PiiCheck(frozenset())) == 0  # no detector: nothing masked
