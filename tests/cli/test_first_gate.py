"""From documents to a gated PR: an empty project holding only a corpus (.md files) and a
bot (a small Python module) gets to a passing gate in five commands, the ones the tools
print (init; draft-golden against FakeLLMServer; one review import; a recorded baseline;
the gate), a broken bot then fails it, and the workflow init wrote runs the core-only
project's gate on a push to main."""

from __future__ import annotations

import csv
import json
import shlex
import sys
from pathlib import Path

import pytest
import yaml
from gha import Emulator

from pytest_ragdive.testing import FAKE_KEY_ENV, FAKE_KEY_VALUE, FakeLLMServer

CORPUS = {
    "refunds.md": "# Refunds\nRefunds are paid within 5 working days after the parcel arrives. The money goes back "
                  "to the original card. Shipping costs are refunded only for faulty items.\n",
    "returns.md": "# Returns\nYou can return an item within 30 days of delivery. Print the return label from your "
                  "account page. Drop the parcel at any post office.\n",
    "delivery.md": "# Delivery\nStandard delivery takes 3 to 5 working days. Express delivery arrives the next working "
                   "day when ordered before 2 pm. Delivery is free above 50 euros.\n",
}

# keyword retrieval over corpus/*.md; the sentence sharing most words with the question.
# BOT_BROKEN=1: the least relevant document and a canned refusal (a regression to catch)
BOT = '''
import os, re
from pathlib import Path

DOCS = {p.name: p.read_text() for p in sorted((Path(__file__).parent / "corpus").glob("*.md"))}


def _words(text):
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def answer(messages):
    asked = " ".join(m["content"] for m in messages if m["role"] == "user")
    ranked = sorted(DOCS, key=lambda d: (-len(_words(asked) & _words(DOCS[d])), d))
    if os.environ.get("BOT_BROKEN"):
        ranked.reverse()
    body = " ".join(l for l in DOCS[ranked[0]].splitlines() if not l.startswith("#"))
    last = _words(messages[-1]["content"])
    text = max(re.split(r"(?<=[.!?])\\s+", body), key=lambda s: len(last & _words(s)))
    if os.environ.get("BOT_BROKEN"):
        text = "Sorry, I cannot help with that."
    return {"answer": text, "contexts": [{"id": d, "text": DOCS[d], "doc_id": d} for d in ranked[:2]]}
'''


def _argv(command: str) -> list[str]:
    """A printed command line (its trailing comment dropped) as argv for this interpreter."""
    words = shlex.split(command.split("   #")[0])
    head = {"python": [sys.executable], "pytest": [sys.executable, "-m", "pytest"]}[words[0]]
    return head + words[1:]


def _fill_review(path: Path) -> None:
    """What the reviewer does between the commands: yes to every criterion."""
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    for r in rows:
        r["rater"] = "reviewer"
        for c in (("correct", "answerable", "plausible") if r["level"] == "turn" else ("diverse", "coherent")):
            r[c] = "yes"
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


@pytest.mark.slow
def test_from_documents_to_a_gated_pr_in_five_commands(pytester: pytest.Pytester,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    for name, text in CORPUS.items():
        (pytester.path / "corpus").mkdir(exist_ok=True)
        (pytester.path / "corpus" / name).write_text(text)
    pytester.makepyfile(bot=BOT)
    monkeypatch.setenv(FAKE_KEY_ENV, FAKE_KEY_VALUE)
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:cacheprovider -p no:langsmith_plugin")
    monkeypatch.delenv("BOT_BROKEN", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    commands: list[list[str]] = []

    def run(argv: list[str]) -> pytest.RunResult:
        commands.append(argv)
        return pytester.run(*argv, timeout=240)

    # 1. init: the conftest wired to the bot, the config, the golden file, the workflow
    res = run(_argv("python -m pytest_ragdive init --target bot:answer"))
    assert res.ret == 0, res.stderr.str()
    out = res.stdout.str()
    nxt = [ln.split(". ", 1)[1] for ln in out.split("next:")[1].strip().splitlines()]
    assert len(nxt) == 3 and nxt[0].startswith("python -m pytest_ragdive draft-golden DOCS_DIR --model MODEL")
    # 2. draft-golden, as init printed it, with the documents and the model filled in
    with FakeLLMServer() as server:
        draft = nxt[0].split("   #")[0].replace("DOCS_DIR", "corpus").replace("MODEL", "openai/fake-model")
        res = run(_argv(draft) + ["--api-base", server.url, "--api-key-env", FAKE_KEY_ENV])
        assert res.ret == 0, res.stderr.str()
    out = res.stdout.str()
    assert out.index("draft-golden estimate:") < out.index("10 of 10 case(s) drafted and valid")
    import_review = next(ln.strip() for ln in out.splitlines() if ln.strip().startswith("python -m pytest_ragdive import-review"))
    # the reviewer fills the CSV; 3. one review import moves the drafts into the core suite
    _fill_review(pytester.path / "golden" / "drafts" / "core-review.csv")
    res = run(_argv(import_review))
    assert res.ret == 0 and "10 accepted into golden/core/conversations.yaml" in res.stdout.str(), res.stderr.str()
    # 4. the baseline, 5. the gate: the commands init printed
    res = run(_argv(nxt[1]))
    assert res.ret == 0, res.stdout.str()[-3000:]
    assert (pytester.path / "baseline.json").is_file()
    res = run(_argv(nxt[2]))
    assert res.ret == 0, res.stdout.str()[-3000:]
    res.assert_outcomes(passed=10)
    assert len(commands) == 5

    # a broken bot fails the gate
    monkeypatch.setenv("BOT_BROKEN", "1")
    res = pytester.run(*_argv(nxt[2]), timeout=240)
    assert res.ret == 1, res.stdout.str()[-3000:]
    assert "regression" in res.stdout.str() and "ragdive gate failed" in res.stdout.str()
    monkeypatch.delenv("BOT_BROKEN")

    # the workflow init wrote: a push to main runs the core gate only, and it passes
    wf = yaml.safe_load((pytester.path / ".github" / "workflows" / "ragdive.yml").read_text())
    wf["on"] = wf.pop(True)
    emu = Emulator(wf, pytester.path, "push", secrets={"OPENAI_API_KEY": "sk-test"})
    assert [j for j in wf["jobs"] if emu.job_runs(j)] == ["gate"]
    job = emu.run_job("gate")
    gate = job.step("Quality gate")
    assert gate.status == "ran", gate.output[-3000:]
    assert json.loads((pytester.path / ".ragdive" / "report" / "results.json").read_text())["suites"].keys() == {"core"}
