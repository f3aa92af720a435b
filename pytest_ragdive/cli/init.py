"""``python -m pytest_ragdive init``: scaffold pytest-ragdive into an existing project.

Writes (:mod:`pytest_ragdive.scaffold`) the ``ragdive_target`` fixture in conftest.py (a
stub, or ``--target module:function``; with ``--url`` an HTTP target whose reply paths
are guessed from one live reply and shown for confirmation), the ``[tool.ragdive]``
config (appended to pyproject.toml, else ragdive.yaml) with a core suite (and an
extended one with ``--extended``), the golden files with commented examples, and the
GitHub workflow with only the jobs of the suites that exist. Never overwrites: a file
that exists is left as it is, and said so. ``--draft-from DOCS_DIR`` then drafts the
golden set (the ``draft-golden`` command). Prints the next three commands."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.request
from pathlib import Path
from typing import Any

from ..core.errors import UsageError
from ..scaffold import project, workflow
from ..scaffold.reply_paths import guess, lines

PROBE_QUESTION = "Hello! What can you help me with?"


def add_arguments(p: argparse.ArgumentParser, command: str = "init") -> None:
    p.add_argument("--dir", type=Path, default=Path("."), help="the project directory (default: here)")
    p.add_argument("--extended", action="store_true", help="an extended suite too (run on pushes to main)")
    p.add_argument("--target", default=None, metavar="MODULE:FUNCTION",
                   help="the chatbot as a Python callable: the conftest fixture returns it")
    p.add_argument("--url", default=None, help="the chatbot behind HTTP: one message is POSTed to it to guess the reply paths")
    p.add_argument("--header", action="append", default=[], metavar="NAME=VALUE",
                   help="a request header for --url (repeatable); ${NAME} in the value is read from the environment")
    p.add_argument("--question", default=PROBE_QUESTION, help="the message POSTed to --url")
    p.add_argument("--yes", "-y", action="store_true", help="accept the guessed reply paths without asking")
    p.add_argument("--no-workflow", action="store_true", help="do not write .github/workflows/ragdive.yml")
    p.add_argument("--draft-from", type=Path, default=None, metavar="DOCS_DIR",
                   help="then draft the core golden set from these documents (see draft-golden; needs --model)")
    p.add_argument("--model", default=None, help="with --draft-from: the LLM that drafts (litellm model string)")
    p.add_argument("--api-base", default=None, help="with --draft-from: an OpenAI-compatible endpoint")
    p.add_argument("--api-key-env", default=None, help="with --draft-from: the variable holding the API key")


def _headers(raw: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for h in raw:
        name, sep, value = h.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--header: expected NAME=VALUE, got {h!r}")
        out[name.strip()] = value
    return out


def _expand(value: str) -> str:
    def sub(m: re.Match[str]) -> str:
        v = os.environ.get(m.group(1))
        if v is None:
            raise UsageError(f"--header: the environment variable {m.group(1)} is not set")
        return v

    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", sub, value)


def probe(url: str, headers: dict[str, str], question: str, timeout_s: float = 30.0) -> Any:
    """One live reply of the bot at ``url`` (the default request of an HTTP target)."""
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--url: expected an http:// or https:// URL, got {url!r}")
    body = json.dumps({"messages": [{"role": "user", "content": question}]}).encode()
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": "application/json",
                                          **{k: _expand(v) for k, v in headers.items()}})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:  # noqa: S310 - the user's own URL
            raw = resp.read(1 << 20)
    except OSError as e:
        raise UsageError(f"--url: {url} did not answer: {getattr(e, 'reason', None) or e}") from None
    try:
        return json.loads(raw)
    except ValueError:
        raise UsageError(f"--url: {url} did not reply with JSON (first bytes: {raw[:80]!r})") from None


def _confirm(prompt: str) -> bool:
    if not sys.stdin.isatty():
        raise UsageError("the guessed reply paths need a confirmation: run in a terminal, or pass --yes")
    return input(prompt).strip().lower() in ("", "y", "yes")


def http_target(args: argparse.Namespace) -> dict[str, Any]:
    headers = _headers(args.header)
    reply = probe(args.url, headers, args.question)
    paths = guess(reply)
    print(f"ragdive init: {args.url} replied; the reply paths guessed from it:")
    print("\n".join(lines(paths)))
    if paths.answer is None:
        raise UsageError(f"--url: no answer found in the reply ({json.dumps(reply)[:200]}); "
                         "write target = {url = ..., answer = \"a.dotted.path\"} by hand")
    if not args.yes and not _confirm("Write these into the config? [Y/n] "):
        raise UsageError("not confirmed: nothing written (edit the paths in the config by hand after init)")
    cfg: dict[str, Any] = {"url": args.url, **paths.config()}
    if headers:
        cfg["headers"] = headers
    return cfg


def _rel(path: Path, base: Path) -> str:
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)


def _repo_root(start: Path) -> Path:
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return start


def run(args: argparse.Namespace) -> int:
    root = args.dir.resolve()
    if not root.is_dir():
        raise UsageError(f"--dir: {args.dir} is not a directory")
    if args.url and args.target:
        raise UsageError("--url and --target name two different bots: give one")
    http = http_target(args) if args.url else None
    results: list[project.Written] = []
    results.append(project.write_new(root / "conftest.py", project.conftest_text(args.target, http is not None)))
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        text = pyproject.read_text(encoding="utf-8")
        config_file = "pyproject.toml"
        if project.has_ragdive_table(text):
            results.append(project.Written(pyproject, False, "already has [tool.ragdive], left as it is"))
        else:
            sep = "" if text.endswith("\n") or not text else "\n"
            with pyproject.open("a", encoding="utf-8") as fh:
                fh.write(sep + project.config_toml(args.extended, http))
            results.append(project.Written(pyproject, True, "[tool.ragdive] appended"))
    else:
        config_file = "ragdive.yaml"
        results.append(project.write_new(root / "ragdive.yaml", project.config_yaml(args.extended, http)))
    for suite in project.suites_of(args.extended):
        results.append(project.write_new(root / project.GOLDEN_FILE.format(suite=suite), project.golden_text(suite)))
    if not args.no_workflow:
        repo = _repo_root(root)
        workdir = _rel(root, repo) if root != repo else "."
        reqs = [r for r in ("requirements.txt",) if (root / r).is_file()]
        install = "pip install pytest-ragdive" + "".join(f" -r {r}" for r in reqs)
        text = workflow.render(
            workdir=workdir, config_file=config_file, extended=args.extended, install=install,
            pip_cache=any((repo / n).is_file() for n in ("requirements.txt", "pyproject.toml")) or bool(reqs),
        )
        results.append(project.write_new(repo / ".github" / "workflows" / "ragdive.yml", text))
    for w in results:
        where = _rel(w.path, root)
        print(f"  {'wrote  ' if w.written else 'skipped'} {where}" + (f" ({w.note})" if w.note else ""))
    drafted = False
    if args.draft_from is not None:
        from . import draft_golden

        ns = draft_golden.build_parser_defaults(
            docs=args.draft_from, suite="core", model=args.model, api_base=args.api_base,
            api_key_env=args.api_key_env, project_dir=root,
        )
        code = draft_golden.run(ns)
        if code:
            return code
        drafted = True
    print("ragdive init: next:")
    for n, cmd in enumerate(project.next_commands(args.extended, str(args.draft_from or "") or None, drafted), 1):
        print(f"  {n}. {cmd}")
    return 0
