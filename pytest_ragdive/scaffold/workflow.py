"""The GitHub workflow ``init`` writes: the repository's own workflow
(``.github/workflows/ragdive.yml``, kept byte for byte as ``scaffold/ragdive.yml``; a
test checks the two are the same) adapted to a project.

What changes: the working directory and every path under it, the Install step, the
cache keys' inputs (the project's golden data and config instead of the example's and
the plugin's prompts), the header, and, for a project without an extended suite, the
``shard`` and ``merged-gate`` jobs are left out (as they are, they would check the
config and do nothing: left out, the file says what runs). Text edits on the template, so
its comments survive; every edit is checked to have happened (a template that drifted
fails loudly, not with a half-adapted file)."""

from __future__ import annotations

import re
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent / "ragdive.yml"
EXAMPLE_DIR = "example_project"
EXAMPLE_HASH_INPUTS = "'golden/**', 'example_project/pyproject.toml', 'pytest_ragdive/prompts/**'"
EXTENDED_JOBS = ("shard", "merged-gate")


def template_text() -> str:
    return TEMPLATE.read_text(encoding="utf-8")


def _replace(text: str, old: str, new: str, *, count: int | None = None) -> str:
    n = text.count(old)
    if n == 0 or (count is not None and n != count):
        raise ValueError(f"workflow template drifted: expected {count or 'some'} of {old!r}, found {n}")
    return text.replace(old, new)


def job_spans(text: str) -> dict[str, tuple[int, int]]:
    """job name -> (first line, end line) of its block in ``text`` (lines, 0-based, end
    exclusive), the comment lines right above a job counted as its own."""
    lines = text.split("\n")
    try:
        start = lines.index("jobs:") + 1
    except ValueError:
        raise ValueError("workflow template drifted: no top-level jobs: key") from None
    heads = [(i, m.group(1)) for i in range(start, len(lines)) if (m := re.fullmatch(r"  ([A-Za-z0-9_-]+):", lines[i]))]
    spans: dict[str, tuple[int, int]] = {}
    for k, (i, name) in enumerate(heads):
        first = i
        while first - 1 >= start and lines[first - 1].startswith("  #"):
            first -= 1
        spans[name] = (first, len(lines))
        if k:
            prev = heads[k - 1][1]
            spans[prev] = (spans[prev][0], first)
    return spans


def drop_jobs(text: str, names: tuple[str, ...]) -> str:
    lines = text.split("\n")
    spans = job_spans(text)
    missing = [n for n in names if n not in spans]
    if missing:
        raise ValueError(f"workflow template drifted: no job(s) {', '.join(missing)}")
    drop = {i for n in names for i in range(*spans[n])}
    return "\n".join(line for i, line in enumerate(lines) if i not in drop)


HEADER_END = "# What runs when:"


def _header(workdir: str, config_file: str, extended: bool) -> str:
    where = "the repository root" if workdir == "." else f"{workdir}/"
    lines = [
        "# The RAG quality gate of this project, written by `python -m pytest_ragdive init`",
        f"# (the project: {where}; its ragdive config: {config_file}). Check:",
        "#   1. the Install step: pytest-ragdive plus your chatbot's requirements;",
        "#   2. the cache keys' hashFiles(...): your golden data and your config;",
        "#   3. the API key secret (OPENAI_API_KEY here; any litellm provider's variable works).",
    ]
    if not extended:
        lines += [
            "# This project has a core suite only: pushes to main run it once. With an extended",
            "# suite, `python -m pytest_ragdive init --extended` in an empty directory shows the",
            "# shard and merged-gate jobs that run it on pushes to main.",
        ]
    return "\n".join(lines) + "\n#\n"


def render(
    *,
    workdir: str = ".",
    config_file: str = "pyproject.toml",
    golden_glob: str = "golden/**",
    install: str = "pip install pytest-ragdive",
    extended: bool = False,
    pip_cache: bool = True,
) -> str:
    """The workflow for a project whose ragdive config sits in ``workdir`` (relative to
    the repository root, ``.`` for the root itself)."""
    text = template_text()
    head, sep, rest = text.partition(HEADER_END)
    if not sep:
        raise ValueError(f"workflow template drifted: no {HEADER_END!r} line")
    text = _header(workdir, config_file, extended) + sep + rest
    if not extended:
        text = drop_jobs(text, EXTENDED_JOBS)
        text = _replace(
            text,
            "#   push to main      core once (it saves main's core judge cache) and extended once,\n"
            "#                     split over four shards and gated on the merged shards (where the\n"
            "#                     config has an extended suite: the shards check it first)\n",
            "#   push to main      core once (it saves main's core judge cache)\n",
            count=1,
        )
    text = _replace(text, "# tests/project/test_workflow.py runs these commands; .ci/run lints this file (actionlint).\n", "",
                    count=1)
    prefix = "" if workdir == "." else workdir.rstrip("/") + "/"
    inputs = ", ".join(repr(p) for p in (prefix + golden_glob, prefix + config_file))
    text = _replace(text, EXAMPLE_HASH_INPUTS, inputs)
    text = _replace(text, f"working-directory: {EXAMPLE_DIR}", f"working-directory: {workdir}")
    text = _replace(text, f"{EXAMPLE_DIR}/", prefix)
    text = _replace(text, "        # your project: pip install pytest-ragdive -r requirements.txt\n", "", count=1)
    text = _replace(text, 'run: pip install -e "..[example]"', f"run: {install}")
    if not pip_cache:
        text = _replace(text, "          cache: pip\n", "")
    if not extended and ("extended" in text.replace("--ragdive-suite=all", "")) and "--ragdive-suite=extended" in text:
        raise ValueError("workflow template drifted: a core-only workflow still runs the extended suite")
    return text
