"""Set-up mistakes caught once, before the first item runs: one line naming the key,
the variable or the file, exit code 4 (issue 24). On 9690bde each of these failed
every item instead (406 lines for no fixture, 15 setup errors for an unset header
variable, 40 failed items for an unset api_key_env)."""

from __future__ import annotations

import pytest
from conftest import PYPROJECT, TOY_CONFTEST

OUT_LIMIT = 25  # lines of output a set-up mistake may take, all told


def setup_error(toy: pytest.Pytester, *args: str) -> str:
    res = toy.runpytest("--ragdive-suite=core", "-p", "no:cacheprovider", *args)
    out = res.stdout.str() + res.stderr.str()
    assert res.ret == pytest.ExitCode.USAGE_ERROR, out
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    assert len(out.splitlines()) <= OUT_LIMIT, out
    assert not (toy.path / "report" / "results.json").exists()  # nothing ran
    errors = [line for line in res.stderr.str().splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1, out
    return errors[0]


def _without_fixture(toy: pytest.Pytester) -> None:
    toy.makeconftest(TOY_CONFTEST.split("@pytest.fixture")[0])  # the bot, but no ragdive_target fixture


def test_no_target_fixture_is_one_line_before_any_item(toy: pytest.Pytester) -> None:
    _without_fixture(toy)
    line = setup_error(toy)
    assert "no target" in line and "ragdive_target" in line and "pyproject.toml" in line


def test_no_target_fixture_under_xdist(toy: pytest.Pytester) -> None:
    """The workers run nothing; the controller ends the session with the one line, exit 4."""
    _without_fixture(toy)
    res = toy.runpytest_subprocess("--ragdive-suite=core", "-p", "no:cacheprovider", "-n", "2")
    out = res.stdout.str() + res.stderr.str()
    assert res.ret == pytest.ExitCode.USAGE_ERROR, out
    assert "INTERNALERROR" not in out and "Traceback" not in out
    assert out.count("ERROR: ragdive setup error: no target") == 1, out


def test_collect_only_needs_no_target(toy: pytest.Pytester) -> None:
    _without_fixture(toy)
    assert toy.runpytest("--ragdive-suite=core", "--collect-only", "-q").ret == 0


def test_unset_header_variable_of_an_http_target(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BOT_TOKEN", raising=False)
    _without_fixture(toy)
    target = 'target = { url = "http://127.0.0.1:9/chat", headers = { Authorization = "Bearer ${BOT_TOKEN}" } }'
    toy.makefile(".toml", pyproject=PYPROJECT.format(extra=target))
    line = setup_error(toy)
    assert "BOT_TOKEN" in line and "'Authorization'" in line and "http://127.0.0.1:9/chat" in line


def test_an_import_target_that_does_not_exist(toy: pytest.Pytester) -> None:
    _without_fixture(toy)
    toy.makefile(".toml", pyproject=PYPROJECT.format(extra='target = "nowhere_module:bot"'))
    line = setup_error(toy)
    assert "target = 'nowhere_module:bot'" in line and "cannot import" in line


def test_an_import_target_that_is_not_callable(toy: pytest.Pytester) -> None:
    _without_fixture(toy)
    toy.makepyfile(botmod="BOT = 42\n")
    toy.makefile(".toml", pyproject=PYPROJECT.format(extra='target = "botmod:BOT"'))
    line = setup_error(toy)
    assert "botmod:BOT" in line and "not callable" in line


def test_a_target_fixture_and_a_config_target_are_two_bots(toy: pytest.Pytester) -> None:
    """The conftest's fixture used to win silently over target = {url=...} (issue 33)."""
    toy.makefile(".toml", pyproject=PYPROJECT.format(extra='target = { url = "http://127.0.0.1:9/chat" }'))
    line = setup_error(toy)
    assert "two targets" in line and "conftest.py:" in line and "http://127.0.0.1:9/chat" in line and "remove one" in line
    # a fixture that wraps the config's target (asks for ragdive_target itself) is not a second bot
    toy.makefile(".toml", pyproject=PYPROJECT.format(extra='target = "conftest:bot"'))
    toy.makeconftest(
        TOY_CONFTEST.split("@pytest.fixture")[0]
        + "@pytest.fixture(scope='session')\ndef ragdive_target(ragdive_target):\n    return ragdive_target\n"
    )
    toy.runpytest("--ragdive-suite=core", "-p", "no:cacheprovider").assert_outcomes(passed=5)


def test_unset_llm_key_variable(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE_KEY", raising=False)
    llm = 'model = "openai/fake-model"\n[tool.ragdive.llm]\napi_base = "http://127.0.0.1:9/v1"\napi_key_env = "NOPE_KEY"\n'
    toy.makefile(".toml", pyproject=PYPROJECT.format(extra=llm))
    line = setup_error(toy)
    assert "NOPE_KEY" in line and "llm.api_key_env" in line and "--ragdive-record-mode=none" in line
    # replaying needs no key: the check is not made (the run goes on, keyless)
    res = toy.runpytest("--ragdive-suite=core", "--ragdive-record-mode=none", "-p", "no:cacheprovider")
    assert res.ret != pytest.ExitCode.USAGE_ERROR, res.stdout.str()


def test_hosted_provider_key_variable(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """No api_key_env and no api_base: the provider's usual variable (here OPENAI_API_KEY)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    toy.makefile(".toml", pyproject=PYPROJECT.format(extra='model = "openai/gpt-4o-mini"'))
    line = setup_error(toy)
    assert "OPENAI_API_KEY" in line and "'openai/gpt-4o-mini'" in line


def test_golden_error_names_the_line_of_the_key(toy: pytest.Pytester) -> None:
    """A bad key inside a turn is reported at the key's line, not at the conversation's first line."""
    convs = toy.path / "data" / "convs.yaml"
    text = convs.read_text().replace("      question_type: Follow-up\n", "      question_typo: Follow-up\n", 1)
    convs.write_text(text)
    key_line = next(i for i, line in enumerate(text.splitlines(), 1) if "question_typo" in line)
    line = setup_error(toy)
    assert f"{convs}:{key_line}: turns.1.question_typo: Extra inputs are not permitted" in line
