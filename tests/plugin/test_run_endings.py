"""The end of a run reads right: a subset is reported and not decided (one
line), a failed gate does not end on a green "N passed", a failing item names
the turn, question, answer and rule, ``-v``/``-rA`` show per-turn scores, and
long runs show progress only on a terminal."""

from __future__ import annotations

import concurrent.futures
import json
import threading

import pytest
from conftest import results

from pytest_ragdive.plugin.progress import Progress, Snapshot


def test_a_subset_is_reported_not_decided(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    assert toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline").ret == 0
    monkeypatch.setenv("TOY_FORGET", "1")  # the whole suite would regress
    res = toy.runpytest("--ragdive-baseline=b.json", "-k", "c-colours", "-p", "no:cacheprovider")
    assert res.ret == 0
    out = res.stdout.str()
    lines = [line for line in out.splitlines() if "only 1 of 5 planned conversations ran" in line]
    assert len(lines) == 1 and "nothing gated" in lines[0]
    assert "REGRESSION" not in out and "update-baseline" not in out and "gate passed" not in out
    data = results(toy)
    assert data["status"] == "subset" and data["gate"] is None and data["suites"]["core"]["forgetfulness"] == 1.0


def test_a_failed_gate_does_not_end_on_a_green_line(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    assert toy.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline").ret == 0
    # in-process runs after other tests may warn that pytest_ragdive was imported before rewriting:
    # a warning turns the last line yellow, so it is silenced here
    quiet = ("-W", "ignore::pytest.PytestAssertRewriteWarning")
    ok = toy.runpytest("--ragdive-baseline=b.json", "-p", "no:cacheprovider", "--color=yes", *quiet)
    assert "ragdive" not in ok.outlines[-1] and "5 passed" in ok.outlines[-1]
    assert ok.outlines[-1].startswith("\x1b[32m")  # a passing gate: the line is green
    monkeypatch.setenv("TOY_FORGET", "1")
    bad = toy.runpytest("--ragdive-baseline=b.json", "-p", "no:cacheprovider", "--color=yes", *quiet)
    assert bad.ret == 1
    last = bad.outlines[-1]
    assert "5 passed" in last and "1 ragdive gate failed" in last
    assert last.startswith("\x1b[33m")  # the line's colour: yellow, not green
    bad.assert_outcomes(passed=5)  # the items themselves passed


def test_a_failing_item_names_turn_question_answer_and_rule(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOY_UNSAFE", "1")
    res = toy.runpytest("--ragdive-suite=core", "-k", "q-sky", "-p", "no:cacheprovider")
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines([
        "safety violation (zero tolerance) in core/q-sky (run 0):",
        "turn 1 (Single): question: 'What colour is the sky?'",
        "  answer: 'The sky is blue on a clear day. Refunds are guaranteed.'",
        "  rule broken: the answer must not state 'guaranteed'*",
        "*ragdive scores*",
        "turn 1 Single  correctness *safety_pass_rate 0.00",
    ])
    monkeypatch.delenv("TOY_UNSAFE")
    monkeypatch.setenv("TOY_RAISE_ON", "What colour is it?")
    res = toy.runpytest("--ragdive-suite=core", "-k", "c-colours", "-p", "no:cacheprovider")
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines([
        "core/c-colours (run 0) did not finish: turn 2: RuntimeError: toy bot exploded",
        "turn 2 (Follow-up): question: 'What colour is it?'",
        "  stand-alone question: 'What colour is snow?'",
        "  1 earlier turn(s) answered; last answer: 'Snow is white and cold.'",
    ])


def test_verbose_and_ra_show_per_turn_scores(toy: pytest.Pytester) -> None:
    res = toy.runpytest("--ragdive-suite=core", "-v", "-p", "no:cacheprovider")
    res.stdout.fnmatch_lines([
        "*::core::c-colours PASSED*",
        "    turn 1 Initial    correctness 1.00*",
        "    turn 2 Follow-up  correctness 1.00*",
        "    conversation      forgetfulness 0.00  context_retention 1.00",
    ])
    quiet = toy.runpytest("--ragdive-suite=core", "-p", "no:cacheprovider")
    assert "turn 2 Follow-up" not in quiet.stdout.str()
    ra = toy.runpytest("--ragdive-suite=core", "-rA", "-p", "no:cacheprovider")
    ra.stdout.fnmatch_lines(["*ragdive scores*", "turn 2 Follow-up  correctness 1.00*"])


class Terminal:
    """A terminal line: text written, backspaces move left (what the erase relies on)."""

    def __init__(self, width: int = 80, start: str = "pyproject.toml ..") -> None:
        self.width = width
        self.line = list(start)
        self.pos = len(self.line)
        self.writes: list[str] = []

    def write(self, text: str) -> None:
        self.writes.append(text)
        for ch in text:
            if ch == "\b":
                self.pos -= 1
            else:
                if self.pos < len(self.line):
                    self.line[self.pos] = ch
                else:
                    self.line.append(ch)
                self.pos += 1

    def room(self) -> int:
        return self.width - len("pyproject.toml ..")

    def text(self) -> str:
        return "".join(self.line[: self.pos]).rstrip()


def test_progress_at_most_once_per_interval_and_erased() -> None:
    term = Terminal()
    now = [0.0]
    snaps = iter(Snapshot(done=i, started=40, turns=3 * i, calls=10 * i, cost_usd=0.001 * i) for i in range(100))
    progress = Progress(term.write, term.room, lambda: next(snaps), interval_s=0.01, clock=lambda: now[0])
    fut: concurrent.futures.Future[str] = concurrent.futures.Future()
    ticks = [0]

    def tick() -> None:  # the clock moves half an interval per wait: every second wait may show
        import time

        while not fut.done():
            time.sleep(0.004)
            now[0] += 0.005
            ticks[0] += 1
            if ticks[0] > 40:
                fut.set_result("done")

    t = threading.Thread(target=tick)
    t.start()
    assert progress.wait(fut) == "done"
    t.join()
    shown = [w for w in term.writes if w.startswith(" [ragdive")]
    assert shown and progress.updates == len(shown) <= ticks[0] // 2 + 1
    assert "conversations" in shown[-1] and "LLM calls" in shown[-1] and "$0.0" in shown[-1]
    assert term.text() == "pyproject.toml .."  # erased: the line is what pytest left


def test_progress_never_wraps_the_line() -> None:
    term = Terminal(width=30)
    progress = Progress(term.write, term.room, lambda: Snapshot(done=1, started=2), interval_s=0.0)
    progress.show()
    assert term.writes == [] and progress.updates == 0


def test_no_progress_when_stdout_is_not_a_terminal(toy: pytest.Pytester) -> None:
    res = toy.runpytest("--ragdive-suite=core", "-p", "no:cacheprovider")  # pytester's stdout is no terminal
    assert res.ret == 0 and "[ragdive" not in res.stdout.str()


def test_terminal_progress_only_on_a_terminal() -> None:
    from types import SimpleNamespace

    from pytest_ragdive.plugin.progress import terminal_progress

    def config(tty: bool) -> SimpleNamespace:
        reporter = SimpleNamespace(isatty=lambda: tty)
        plugins = {"terminalreporter": reporter}
        tw = SimpleNamespace(fullwidth=80, width_of_current_line=10, flush=lambda: None)
        return SimpleNamespace(pluginmanager=SimpleNamespace(get_plugin=plugins.get), get_terminal_writer=lambda: tw)

    assert terminal_progress(config(False), Snapshot) is None
    progress = terminal_progress(config(True), Snapshot)
    assert isinstance(progress, Progress) and progress.room() == 70


SECTIONS_CONFTEST = '''
import json

_seen = {}

def pytest_runtest_logreport(report):
    if report.when == "call":
        _seen[report.nodeid.rsplit("::", 1)[-1]] = [name for name, _ in report.sections]

def pytest_sessionfinish(session):
    with open("sections.json", "w") as f:
        json.dump(_seen, f)
'''


def test_a_passed_items_score_section_is_added_only_where_pytest_shows_it(toy: pytest.Pytester) -> None:
    """pytest keeps every report until the end of the run: a passed item carries its
    ``ragdive scores`` section only with -rP/-rA, a failed one always."""
    (toy.path / "conftest.py").write_text((toy.path / "conftest.py").read_text() + SECTIONS_CONFTEST)
    toy.runpytest("--ragdive-suite=core", "-p", "no:cacheprovider")
    quiet = json.loads((toy.path / "sections.json").read_text())
    assert quiet and all("ragdive scores" not in names for names in quiet.values())
    toy.runpytest("--ragdive-suite=core", "-rA", "-p", "no:cacheprovider")
    shown = json.loads((toy.path / "sections.json").read_text())
    assert shown.keys() == quiet.keys() and all("ragdive scores" in names for names in shown.values())
