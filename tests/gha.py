"""A small GitHub Actions emulator for testing a workflow file offline.

It evaluates the expressions the workflow uses (contexts, ``==``/``!=``,
``&&``/``||``/``!``, ``always()``, ``hashFiles()``), runs ``run:`` steps in
bash the way a runner does (``bash --noprofile --norc -eo pipefail``, the
job's working directory, ``$GITHUB_OUTPUT`` and ``$GITHUB_STEP_SUMMARY``),
and plays the few actions the workflow uses with local equivalents: the
artifact store is a directory (paths kept relative to their common parent, hidden
files left out unless ``include-hidden-files``), the junit publisher parses the
files it is pointed at, the sticky PR comment is one comment per header, updated in
place, and steps that only prepare a real runner (checkout, Python setup,
installing) are skipped with the reason recorded. A pull request comes from a fork
(another repository, a read-only token) unless ``fork=False``; by default it is a
fork exactly when no secret is given.
"""

from __future__ import annotations

import fnmatch
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}", re.S)
TOKEN = re.compile(r"\s*(?:('(?:[^']|'')*')|(==|!=|&&|\|\||!|\(|\)|,)|([A-Za-z_][\w.\-*]*)|(\d+))")
# steps that only prepare a hosted runner; the test runs in the installed environment
SKIPPED_ACTIONS = {
    "actions/checkout": "the test workspace is already a copy of the repository's example",
    "actions/setup-python": "the test runs in the Python that runs the test suite",
}
SKIPPED_RUN_NAMES = {"Install": "installs into the runner's Python; the test suite's environment already has it"}


@dataclass
class StepResult:
    name: str
    status: str  # ran, failed, skipped, not_run (condition false)
    reason: str = ""
    rc: int = 0
    output: str = ""


@dataclass
class JobResult:
    name: str
    steps: list[StepResult] = field(default_factory=list)
    summary: str = ""
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return any(s.status == "failed" for s in self.steps)

    def step(self, name: str) -> StepResult:
        return next(s for s in self.steps if s.name == name)


class Emulator:
    def __init__(self, workflow: dict[str, Any], workspace: Path, event: str, secrets: dict[str, str] | None = None,
                 env: dict[str, str] | None = None, fork: bool | None = None) -> None:
        self.wf = workflow
        self.workspace = workspace
        self.event = event
        self.secrets = secrets or {}
        self.fork = (not self.secrets) if fork is None else fork
        self.comments: dict[str, str] = {}  # the sticky PR comments: header -> body
        self.comment_posts = 0
        self.env_override = env or {}
        self.artifacts = workspace.parent / "artifacts"
        self.artifacts.mkdir(exist_ok=True)
        self.junit: list[Path] = []
        self.cache_paths: list[tuple[str, Path, str]] = []  # (action, path, key)
        self.executed: list[tuple[str, str, str]] = []  # (job, step, command) for run steps
        self.job_results: dict[str, str] = {}  # job -> success | failure | skipped (the `needs` context)
        self.job_outputs: dict[str, dict[str, str]] = {}  # job -> its `outputs:` (the `needs` context)

    # -- expressions ----------------------------------------------------------
    def context(self, job: str, matrix: dict[str, Any], steps: dict[str, dict[str, str]], env: dict[str, str]) -> dict[str, Any]:
        repo = "lumio/helpcentre"
        event: dict[str, Any] = {}
        if self.event == "pull_request":
            head = "contributor/helpcentre" if self.fork else repo
            event = {"pull_request": {"number": 1, "head": {"repo": {"full_name": head}}}}
        return {
            "github": {"event_name": self.event, "ref": "refs/heads/main" if self.event == "push" else "refs/pull/1/merge",
                       "sha": "0" * 40, "run_id": "4242", "run_attempt": "1", "workspace": str(self.workspace),
                       "repository": repo, "server_url": "https://github.com", "event": event},
            "runner": {"os": "Linux"},
            "matrix": {k: str(v) for k, v in matrix.items()},
            "secrets": dict(self.secrets),
            "env": env,
            "steps": {k: {"outputs": v} for k, v in steps.items()},
            "needs": {k: {"result": v, "outputs": self.job_outputs.get(k, {})} for k, v in self.job_results.items()},
        }

    def hash_files(self, *patterns: str) -> str:
        h = hashlib.sha256()
        files: set[Path] = set()
        for p in patterns:
            files.update(Path(f) for f in glob.glob(str(self.workspace / p), recursive=True) if Path(f).is_file())
        for f in sorted(files):
            h.update(f.read_bytes())
        return h.hexdigest() if files else ""

    def evaluate(self, expr: str, ctx: dict[str, Any], status_ok: bool = True) -> Any:
        out: list[str] = []
        pos = 0
        expr = expr.strip()
        while pos < len(expr):
            m = TOKEN.match(expr, pos)
            if not m or m.end() == pos:
                raise ValueError(f"cannot parse expression {expr!r} at {expr[pos:]!r}")
            pos = m.end()
            string, op, ident, num = m.groups()
            if string is not None:
                out.append(repr(string[1:-1].replace("''", "'")))
            elif op is not None:
                out.append({"&&": " and ", "||": " or ", "!": " not "}.get(op, op))
            elif num is not None:
                out.append(num)
            elif ident is not None:
                if expr[pos:].lstrip().startswith("("):
                    out.append(f"fn_{ident}")
                else:
                    value: Any = ctx
                    for part in ident.split("."):
                        value = value.get(part, "") if isinstance(value, dict) else ""
                    out.append(repr(value))
        fns = {"fn_always": lambda: True, "fn_success": lambda: status_ok, "fn_failure": lambda: not status_ok,
               "fn_cancelled": lambda: False, "fn_hashFiles": self.hash_files}
        return eval("".join(out), {"__builtins__": {}}, fns)  # noqa: S307 - a tokenised, closed expression

    def interpolate(self, text: str, ctx: dict[str, Any]) -> str:
        def sub(m: re.Match[str]) -> str:
            v = self.evaluate(m.group(1), ctx)
            return "true" if v is True else "false" if v is False else str(v)

        return EXPR.sub(sub, text)

    def job_runs(self, name: str) -> bool:
        """Whether a job starts, given ``job_results`` of the jobs it needs (GitHub's rule:
        without a status function in its condition, every needed job must have succeeded)."""
        job = self.wf["jobs"][name]
        needs = job.get("needs") or []
        needs = [needs] if isinstance(needs, str) else needs
        cond = job.get("if")
        if cond is None or not re.search(r"\b(always|cancelled|failure|success)\(", str(cond)):
            if any(self.job_results.get(n) != "success" for n in needs):
                return False
        return True if cond is None else bool(self.evaluate(EXPR.sub(r"\1", str(cond)), self.context(name, {}, {}, {})))

    # -- steps ----------------------------------------------------------------
    def run_job(self, name: str, matrix: dict[str, Any] | None = None) -> JobResult:
        job = self.wf["jobs"][name]
        matrix = matrix or {}
        result = JobResult(name=name)
        steps_out: dict[str, dict[str, str]] = {}
        env: dict[str, str] = {}
        ctx = self.context(name, matrix, steps_out, env)
        for k, v in {**self.wf.get("env", {}), **job.get("env", {})}.items():
            env[k] = self.interpolate(str(v), ctx)
        env.update(self.env_override)
        summary = self.workspace.parent / f"summary-{name}-{'-'.join(map(str, matrix.values()))}.md"
        summary.write_text("")
        workdir = (job.get("defaults", {}).get("run", {}) or {}).get("working-directory", ".")
        ok = True
        for i, step in enumerate(job["steps"]):
            sname = step.get("name") or step.get("uses") or f"step {i}"
            ctx = self.context(name, matrix, steps_out, env)
            cond = step.get("if")
            if cond is not None and not self.evaluate(EXPR.sub(r"\1", str(cond)), ctx, ok):
                result.steps.append(StepResult(sname, "not_run", f"if: {cond}"))
                continue
            if cond is None and not ok:
                result.steps.append(StepResult(sname, "not_run", "an earlier step failed"))
                continue
            if "uses" in step:
                res = self.use(step, sname, ctx)
            elif sname in SKIPPED_RUN_NAMES:
                res = StepResult(sname, "skipped", SKIPPED_RUN_NAMES[sname])
            else:
                step_env = {k: self.interpolate(str(v), ctx) for k, v in (step.get("env") or {}).items()}
                res = self.run(name, sname, self.interpolate(step["run"], ctx), self.workspace / step.get("working-directory", workdir),
                               {**env, **step_env}, summary, steps_out.setdefault(step.get("id", f"_{i}"), {}))
            result.steps.append(res)
            ok = ok and res.status != "failed"
        result.summary = summary.read_text()
        result.outputs = steps_out
        ctx = self.context(name, matrix, steps_out, env)
        self.job_outputs[name] = {k: str(self.interpolate(str(v), ctx)) for k, v in (job.get("outputs") or {}).items()}
        if self.job_results.get(name) != "failure":  # a matrix job fails when any of its legs fails
            self.job_results[name] = "failure" if result.failed else "success"
        return result

    def run(self, job: str, name: str, script: str, cwd: Path, env: dict[str, str], summary: Path,
            outputs: dict[str, str]) -> StepResult:
        self.executed.append((job, name, script))
        with tempfile.TemporaryDirectory() as tmp:
            out_file = Path(tmp) / "output"
            out_file.write_text("")
            script_file = Path(tmp) / "step.sh"
            script_file.write_text(script)
            full_env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "EXAMPLE_RAG_", "OPENAI_"))}
            full_env.update({k: v for k, v in env.items() if v != ""})
            full_env.update({
                "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
                "GITHUB_OUTPUT": str(out_file), "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_WORKSPACE": str(self.workspace),
                "GITHUB_ACTIONS": "true", "CI": "true",
            })
            proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script_file)], cwd=cwd,
                                  env=full_env, capture_output=True, text=True, timeout=300)
            for line in out_file.read_text().splitlines():
                if "=" in line:
                    k, v = line.split("=", 1)
                    outputs[k] = v
        status = "ran" if proc.returncode == 0 else "failed"
        return StepResult(name, status, rc=proc.returncode, output=proc.stdout + proc.stderr)

    def _upload(self, name: str, inputs: dict[str, str]) -> StepResult:
        """As upload-artifact v4 stores them: every file under the paths, relative to the
        paths' common parent (one directory: its contents); hidden files and directories
        (a name starting with a dot, below that parent) only with ``include-hidden-files``."""
        roots = self._paths(inputs["path"])
        hidden_ok = inputs.get("include-hidden-files", "false").lower() == "true"  # YAML true reads "True"
        base = roots[0] if len(roots) == 1 and roots[0].is_dir() else Path(os.path.commonpath([r.parent for r in roots])) if roots else None
        files: list[Path] = []
        for r in roots:
            files += [p for p in (r.rglob("*") if r.is_dir() else [r]) if p.is_file()]
        if base is not None and not hidden_ok:
            files = [f for f in files if not any(part.startswith(".") for part in f.relative_to(base).parts)]
        if not files or base is None:
            if inputs.get("if-no-files-found", "warn") == "error":
                return StepResult(name, "failed", f"no files at {inputs['path']}", rc=1)
            return StepResult(name, "ran", f"warning: no files at {inputs['path']}")
        dest = self.artifacts / inputs["name"]
        if dest.exists():
            return StepResult(name, "failed", f"artifact {inputs['name']} uploaded twice", rc=1)
        for f in files:
            out = dest / f.relative_to(base)
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, out)
        return StepResult(name, "ran")

    def _paths(self, spec: str) -> list[Path]:
        out: list[Path] = []
        for line in str(spec).splitlines():
            if line.strip():
                out += [Path(p) for p in glob.glob(str(self.workspace / line.strip()))]
        return out

    def use(self, step: dict[str, Any], name: str, ctx: dict[str, Any]) -> StepResult:
        action = step["uses"].split("@")[0]
        inputs = {k: self.interpolate(str(v), ctx) for k, v in (step.get("with") or {}).items()}
        if action in SKIPPED_ACTIONS:
            return StepResult(name, "skipped", SKIPPED_ACTIONS[action])
        if action in ("actions/cache/restore", "actions/cache/save", "actions/cache"):
            key = inputs["key"]
            assert "${{" not in key and key, f"{name}: unresolved cache key {key!r}"
            for rk in inputs.get("restore-keys", "").splitlines():
                assert key.startswith(rk.strip()), f"{name}: restore key {rk!r} is not a prefix of {key!r}"
            self.cache_paths.append((action, self.workspace / inputs["path"], key))
            return StepResult(name, "skipped", "the cache service is GitHub's; path and keys checked")
        if action == "actions/upload-artifact":
            return self._upload(name, inputs)
        if action == "actions/download-artifact":
            target = self.workspace / inputs.get("path", ".")
            found = [d for d in sorted(self.artifacts.iterdir()) if fnmatch.fnmatch(d.name, inputs.get("pattern", "*"))]
            if not found:
                return StepResult(name, "failed", f"no artifact matches {inputs.get('pattern')}", rc=1)
            for d in found:
                shutil.copytree(d, target / d.name, dirs_exist_ok=True)
            return StepResult(name, "ran")
        if action == "marocchino/sticky-pull-request-comment":
            assert self.event == "pull_request" and not self.fork, f"{name}: a comment needs a pull request's writable token"
            path = self.workspace / inputs["path"]
            if not path.is_file():
                return StepResult(name, "failed", f"no comment file at {inputs['path']}", rc=1)
            body = path.read_text()
            assert len(body) <= 65_536, f"{name}: {len(body)} characters, over GitHub's comment limit"
            self.comments[inputs.get("header", "")] = body  # one comment per header, updated in place
            self.comment_posts += 1
            return StepResult(name, "ran")
        if action == "mikepenz/action-junit-report":
            files = [p for p in self._paths(inputs["report_paths"].replace(",", "\n")) if p.is_file()]
            if not files:
                return StepResult(name, "failed", f"no JUnit files at {inputs['report_paths']}", rc=1)
            for f in files:
                root = ET.parse(f).getroot()
                assert root.tag in ("testsuites", "testsuite"), f"{f} is not JUnit XML"
            self.junit += files
            return StepResult(name, "ran")
        raise AssertionError(f"the emulator has no handler for action {action!r}: add one to tests/gha.py")
