"""The workflow users copy (.github/workflows/ragdive.yml): parsed, every command
checked against the plugin's options and the command line's subcommands, and
each job run offline on a copy of the bundled example, in order, by a small
emulator (tests/gha.py). GitHub expressions are evaluated with the event's
context and no secrets (a fork's pull request); steps that only prepare a hosted
runner (checkout, setup-python, pip install) and GitHub's services (the cache)
are skipped, each with its reason recorded, and their inputs are still checked."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from gha import EXPR, Emulator

from pytest_ragdive.cli import build_parser

pytestmark = pytest.mark.slow  # starts processes of its own

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "ragdive.yml"


def load_workflow() -> dict[str, Any]:
    wf = yaml.safe_load(WORKFLOW.read_text())
    if True in wf:  # YAML 1.1 reads the key `on` as a boolean
        wf["on"] = wf.pop(True)
    return wf


WF = load_workflow()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A checkout of what the workflow touches: the example, its golden data, the prompts."""
    ws = tmp_path / "ws"
    ignore = shutil.ignore_patterns(".ragdive", "__pycache__", "ragdive-report*", "ragdive-shard", "*.pyc")
    shutil.copytree(ROOT / "example_project", ws / "example_project", ignore=ignore)
    shutil.copytree(ROOT / "golden", ws / "golden")
    shutil.copytree(ROOT / "pytest_ragdive" / "prompts", ws / "pytest_ragdive" / "prompts")
    return ws


def jobs_for(event: str, failing: tuple[str, ...] = ()) -> set[str]:
    """The jobs that run on ``event`` (jobs in ``failing`` fail when they run)."""
    emu = Emulator(WF, Path("/nonexistent"), event)
    run: set[str] = set()
    pending = list(WF["jobs"])
    while pending:  # in dependency order
        for j in list(pending):
            needs = WF["jobs"][j].get("needs") or []
            if all(n in emu.job_results for n in ([needs] if isinstance(needs, str) else needs)):
                pending.remove(j)
                if emu.job_runs(j):
                    run.add(j)
                    emu.job_results[j] = "failure" if j in failing else "success"
                    emu.job_outputs[j] = {"extended": "true"}  # the example has an extended suite
                else:
                    emu.job_results[j] = "skipped"
    return run


def test_triggers_and_which_jobs_run() -> None:
    assert set(WF["on"]) == {"pull_request", "push", "schedule", "workflow_dispatch"}
    assert WF["on"]["push"]["branches"] == ["main"] and WF["on"]["schedule"][0]["cron"]
    assert jobs_for("pull_request") == {"gate"}
    assert jobs_for("push") == {"gate", "shard", "merged-gate"}
    assert jobs_for("schedule") == {"consistency"}
    assert jobs_for("workflow_dispatch") == {"shard", "merged-gate", "consistency"}
    # a shard whose items failed still reaches the merged gate, which then fails the same way
    assert "merged-gate" in jobs_for("push", failing=("shard",))
    assert WF["jobs"]["shard"]["strategy"]["matrix"]["shard"] == [1, 2, 3, 4]


def _index(steps: list[dict[str, Any]], pred: Any) -> int:
    return next(i for i, s in enumerate(steps) if pred(s))


def test_gate_job_order_and_always_steps() -> None:
    steps = WF["jobs"]["gate"]["steps"]
    uses = lambda name: lambda s: str(s.get("uses", "")).startswith(name)  # noqa: E731
    named = lambda name: lambda s: s.get("name") == name  # noqa: E731
    order = [_index(steps, uses("actions/checkout")), _index(steps, uses("actions/setup-python")),
             _index(steps, named("Install")), _index(steps, uses("actions/cache/restore")),
             _index(steps, named("Quality gate")), _index(steps, uses("actions/cache/save"))]
    assert order == sorted(order), "checkout, setup-python, install, restore the cache BEFORE the gate, save after"
    for pred in (uses("actions/cache/save"), uses("mikepenz/action-junit-report"), uses("actions/upload-artifact"),
                 uses("marocchino/sticky-pull-request-comment")):
        assert str(steps[_index(steps, pred)].get("if", "")).startswith("always()")  # also when the gate failed
    # the check run and the comment need a token that can write: not a fork's
    for pred in (uses("mikepenz/action-junit-report"), uses("marocchino/sticky-pull-request-comment")):
        assert "steps.mode.outputs.write == 'true'" in steps[_index(steps, pred)]["if"]
    restore = steps[_index(steps, uses("actions/cache/restore"))]["with"]
    for part in ("golden/**", "pyproject.toml", "prompts/**", "steps.version.outputs.plugin"):
        assert part in restore["key"]
    assert len(restore["restore-keys"].splitlines()) >= 2


PINNED = re.compile(r"^\s*-?\s*uses:\s*([\w./-]+)@([0-9a-f]{40}) # (v\d+(?:\.\d+)*)\s*$")


def test_every_action_is_pinned_by_commit_sha_with_its_tag() -> None:
    lines = [ln for ln in WORKFLOW.read_text().splitlines() if re.match(r"^\s*-?\s*uses:", ln)]
    assert lines
    bad = [ln.strip() for ln in lines if not PINNED.match(ln)]
    assert not bad, f"not pinned by a commit SHA with the tag in a comment: {bad}"
    # one SHA per action and tag: the same action is never pinned to two commits
    seen: dict[str, str] = {}
    for ln in lines:
        m = PINNED.match(ln)
        assert m is not None
        repo = "/".join(m.group(1).split("/")[:2])  # actions/cache/restore and /save: one repository
        assert seen.setdefault(repo, m.group(2)) == m.group(2), f"{repo} pinned to two commits"


def _cache_steps(job: str) -> list[dict[str, Any]]:
    return [s for s in WF["jobs"][job]["steps"] if str(s.get("uses", "")).startswith("actions/cache/")]


def test_cache_keys_name_the_suite_and_the_plugin_version() -> None:
    for job, scope in (("gate", "-core-"), ("shard", "-extended-shard${{ matrix.shard }}-"), ("consistency", "-consistency-")):
        steps = _cache_steps(job)
        assert {s["uses"].split("@")[0] for s in steps} == {"actions/cache/restore", "actions/cache/save"}, job
        for s in steps:
            assert scope in s["with"]["key"] and "steps.version.outputs.plugin" in s["with"]["key"], (job, s["with"]["key"])
            for rk in s["with"].get("restore-keys", "").splitlines():
                assert scope in rk, (job, rk)
        restore, save = (next(s for s in steps if s["uses"].startswith(f"actions/cache/{a}")) for a in ("restore", "save"))
        assert restore["with"]["key"] == save["with"]["key"], job
        assert any(s.get("id") == "version" for s in WF["jobs"][job]["steps"]), job
    # main saves both caches a pull request restores: core from the push's gate job, extended from the shards
    assert "push" in str(WF["jobs"]["gate"]["if"]) and "push" in str(WF["jobs"]["shard"]["if"])


def _suites(job: str) -> list[str]:
    """The suites a job's pytest commands select, read from the file: written out, never
    computed by a step (so that what runs on an event can be read, and checked, here)."""
    found = [m for s in WF["jobs"][job]["steps"] for m in re.findall(r"--ragdive-suite=(\S+)", str(s.get("run", "")))]
    assert all("${{" not in m for m in found), f"{job}: the suite is computed ({found}): write it out"
    return found


def test_no_suite_runs_twice_on_one_push() -> None:
    run = jobs_for("push")
    suites = [s for job in sorted(run) for s in _suites(job)]
    assert sorted(suites) == ["core", "extended"], suites  # gate: core; the four shards: extended, once split


def test_the_consistency_artifact_is_uploaded_whatever_happened() -> None:
    upload = next(s for s in WF["jobs"]["consistency"]["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact"))
    assert upload.get("if") == "always()"


def commands() -> list[tuple[str, str, list[str]]]:
    """(job, step, argv) of every pytest / python -m pytest_ragdive command, with
    the expressions replaced by what they evaluate to on a pull request from a fork."""
    emu = Emulator(WF, Path("/nonexistent"), "pull_request")
    out = []
    for job, spec in WF["jobs"].items():
        ctx = emu.context(job, {"shard": 1}, {"mode": {"suite": "core", "record": "none"}, "version": {"plugin": "0"}},
                          {k: str(v) for k, v in WF["env"].items()})
        for step in spec["steps"]:
            if "run" not in step:
                continue
            script = emu.interpolate(step["run"], ctx)
            for line in script.replace("\\\n", " ").splitlines():
                lex = shlex.shlex(line, posix=True, punctuation_chars=True)
                lex.whitespace_split = True
                lex.commenters = "#"
                words: list[str] = []
                for tok in [*lex, ";"]:
                    if tok in ("{", "}") or set(tok) <= set(";&|<>()"):  # a shell operator ends a command
                        while words and "=" in words[0] and not words[0].startswith("-"):
                            words.pop(0)  # VAR=value prefixes
                        if words[:1] == ["pytest"] or words[:3] == ["python", "-m", "pytest_ragdive"]:
                            out.append((job, step.get("name", ""), words))
                        words = []
                    else:
                        words.append(tok)
    return out


COMMANDS = commands()


@pytest.fixture(scope="module")
def pytest_help() -> str:
    res = subprocess.run([sys.executable, "-m", "pytest", "--help"], cwd=ROOT / "example_project",
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_the_workflow_has_the_commands_it_should() -> None:
    text = [" ".join(argv) for _, _, argv in COMMANDS]
    assert any("--ragdive-suite=core" in t and "--ragdive-record-mode=none" in t for t in text)
    assert any("--ragdive-update-baseline" in t and "--ragdive-runs=5" in t for t in text)
    assert any("baseline diff" in t for t in text)
    assert any("--ragdive-shard=1/4" in t for t in text) and any(" gate " in t for t in text)


@pytest.mark.parametrize("job,step,argv", [pytest.param(*c, id=f"{c[0]}:{c[1]}") for c in COMMANDS])
def test_command_exists(job: str, step: str, argv: list[str], pytest_help: str) -> None:
    if argv[0] == "pytest":
        for arg in argv[1:]:
            if arg.startswith("--"):
                assert arg.split("=")[0] in pytest_help, f"{job}/{step}: {arg.split('=')[0]} is not a pytest option"
    else:
        try:
            args = build_parser().parse_args(argv[3:])
        except SystemExit as e:
            raise AssertionError(f"{job}/{step}: `{' '.join(argv)}` is not a valid ragdive command") from e
        assert args.command == argv[3]


def test_pull_request_from_a_fork_gates_core_offline(workspace: Path) -> None:
    emu = Emulator(WF, workspace, "pull_request")  # no secrets: a fork
    job = emu.run_job("gate")
    gate = job.step("Quality gate")
    assert gate.status == "ran", gate.output[-3000:]
    assert job.outputs["mode"] == {"record": "none", "write": "false"}
    assert "--ragdive-suite=core --ragdive-record-mode=none" in " ".join(
        next(c for _, n, c in emu.executed if n == "Quality gate").split())
    assert job.step("Install").status == "skipped" and job.step("Install").reason
    assert not job.failed
    # the job summary got summary.md (the plugin appends it to $GITHUB_STEP_SUMMARY) and says why
    # the check run and the comment are missing
    assert job.summary.startswith("# ragdive quality gate") and "**PASSED**" in job.summary
    assert "a pull request from a fork gets a read-only token" in job.summary
    # a fork's token is read-only: no check run, no comment (skipped, not failed)
    assert job.step("Publish JUnit results").status == "not_run" and not emu.junit
    assert job.step("Comment on the pull request").status == "not_run" and not emu.comments
    # the report dir as an artifact, JUnit files included
    art = emu.artifacts / "ragdive-report-core"
    assert {"results.json", "summary.md", "ragdive-junit.xml", "pytest-junit.xml"} <= {p.name for p in art.iterdir()}
    items = ET.parse(art / "pytest-junit.xml").getroot().iter("testcase")
    assert len(list(items)) == 30
    # the judge cache is restored before the gate, from the directory the plugin uses; a
    # replay-only run stored nothing new, so nothing is saved
    actions = [a for a, _, _ in emu.cache_paths]
    assert actions == ["actions/cache/restore"]
    assert all(p == workspace / "example_project" / ".ragdive" / "cache" for _, p, _ in emu.cache_paths)
    key = emu.cache_paths[0][2]
    (workspace / "golden" / "core" / "single_turn.jsonl").open("a").write("\n")
    other = Emulator(WF, workspace, "pull_request")
    ctx = other.context("gate", {}, {"version": job.outputs["version"]}, {})
    restore = next(s for s in WF["jobs"]["gate"]["steps"] if s.get("uses", "").startswith("actions/cache/restore"))
    assert other.interpolate(restore["with"]["key"], ctx) != key  # keyed on the golden data


def test_pull_request_from_the_same_repository_publishes_and_comments_once(workspace: Path) -> None:
    emu = Emulator(WF, workspace, "pull_request", secrets={"OPENAI_API_KEY": "sk-test"})  # not a fork
    job = emu.run_job("gate")
    assert not job.failed, [s.output[-2000:] for s in job.steps if s.status == "failed"]
    assert job.outputs["mode"] == {"record": "new_episodes", "write": "true"}
    assert job.step("Publish JUnit results").status == "ran"
    assert {p.name for p in emu.junit} == {"ragdive-junit.xml", "pytest-junit.xml"}
    assert job.step("A fork's read-only token").status == "not_run"
    assert [a for a, _, _ in emu.cache_paths] == ["actions/cache/restore", "actions/cache/save"]
    comment = workspace / "example_project" / ".ragdive" / "report" / "pr-comment.md"
    step = job.step("Comment on the pull request")
    if comment.is_file():  # the reports write it (issue 23)
        assert step.status == "ran" and emu.comments == {"ragdive": comment.read_text()}
    else:
        assert step.status == "not_run"  # nothing to post
    # the comment step itself: one comment per pull request, updated on the next push
    spec = next(s for s in WF["jobs"]["gate"]["steps"] if s.get("name") == "Comment on the pull request")
    ctx = emu.context("gate", {}, {"mode": {"write": "true"}}, {})
    comment.parent.mkdir(parents=True, exist_ok=True)
    for text in ("<!-- ragdive-pr-comment -->\nfirst push", "<!-- ragdive-pr-comment -->\nsecond push"):
        comment.write_text(text)
        assert emu.evaluate(EXPR.sub(r"\1", spec["if"]), ctx) is True
        assert emu.use(spec, spec["name"], ctx).status == "ran"
    assert emu.comments == {"ragdive": "<!-- ragdive-pr-comment -->\nsecond push"}
    fork = Emulator(WF, workspace, "pull_request")
    assert fork.evaluate(EXPR.sub(r"\1", spec["if"]), fork.context("gate", {}, {"mode": {"write": "false"}}, {})) is False


def test_with_the_secret_llm_calls_are_recorded(workspace: Path) -> None:
    step = next(s for s in WF["jobs"]["gate"]["steps"] if s.get("id") == "mode")
    for secrets, event, want in (({"OPENAI_API_KEY": "sk-test"}, "push", {"record": "new_episodes", "write": "true"}),
                                 ({}, "push", {"record": "none", "write": "true"}),
                                 ({}, "pull_request", {"record": "none", "write": "false"})):
        emu = Emulator(WF, workspace, event, secrets=secrets)
        ctx = emu.context("gate", {}, {}, {})
        env = {k: emu.interpolate(str(v), ctx) for k, v in step["env"].items()}
        out: dict[str, str] = {}
        summary = workspace / "s.md"
        res = emu.run("gate", "mode", emu.interpolate(step["run"], ctx), workspace / "example_project", env, summary, out)
        assert res.status == "ran" and out == want


def _pytest(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "EXAMPLE_RAG_", "OPENAI_"))}
    return subprocess.run([sys.executable, "-m", "pytest", *args], cwd=workspace / "example_project", env=env,
                          capture_output=True, text=True, timeout=300)


def test_push_gates_core_once_and_extended_once_on_four_shards(workspace: Path) -> None:
    emu = Emulator(WF, workspace, "push", secrets={"OPENAI_API_KEY": "sk-test"})
    job = emu.run_job("gate")
    assert job.step("Quality gate").status == "ran", job.step("Quality gate").output[-3000:]
    report = workspace / "example_project" / ".ragdive" / "report"
    core = json.loads((report / "results.json").read_text())
    assert set(core["suites"]) == {"core"} and core["gate"]  # core on main: its judge cache saved for PRs
    assert [a for a, _, _ in emu.cache_paths] == ["actions/cache/restore", "actions/cache/save"]
    shutil.rmtree(report)

    for shard in WF["jobs"]["shard"]["strategy"]["matrix"]["shard"]:
        part = emu.run_job("shard", {"shard": shard})
        assert not part.failed, [s.output[-2000:] for s in part.steps if s.status == "failed"]
        assert "ragdive shard" in part.step("One shard of the extended suite").output
    assert sorted(p.name for p in emu.artifacts.iterdir() if p.name.startswith("ragdive-shard-")) == [
        f"ragdive-shard-{i}" for i in range(1, 5)
    ]
    keys = [k for a, _, k in emu.cache_paths if a == "actions/cache/save"]
    assert len(set(keys)) == 5 and all(f"-{emu.context('shard', {}, {}, {})['runner']['os']}-" in k for k in keys)
    assert emu.job_runs("merged-gate")
    merged = emu.run_job("merged-gate")
    step = merged.step("Gate on the merged shards")
    assert step.status == "ran", step.output[-3000:]
    data = json.loads((report / "results.json").read_text())
    # the same verdicts as one unsharded run of extended (run here once, outside the workflow)
    whole = _pytest(workspace, "--ragdive-baseline=baseline.json", "--ragdive-suite=extended",
                    "--ragdive-report-dir=unsharded", "-p", "no:cacheprovider")
    assert whole.returncode == 0, whole.stdout[-3000:]
    ref = json.loads((workspace / "example_project" / "unsharded" / "results.json").read_text())
    assert len(data["conversations"]) == len(ref["conversations"]) == 126
    assert data["gate"] == ref["gate"] and data["suites"] == ref["suites"]
    assert all(r["verdict"] in ("pass", "improvement") for r in data["gate"])
    assert {p.name for p in (emu.artifacts / "ragdive-report-extended").iterdir()} >= {"report.html", "summary.md"}


def test_a_core_only_project_copying_the_workflow_passes_on_push(workspace: Path) -> None:
    """The workflow copied into a project without an extended suite: the shards read the
    config and stop (no --ragdive-suite=extended, which would exit 4), the merged gate
    does not run, and nothing fails."""
    config = workspace / "example_project" / "pyproject.toml"
    text = config.read_text()
    start = text.index("[tool.ragdive.suites.extended]")
    config.write_text(text[:start] + text[text.index("\n[", start + 1) + 1:])
    assert "extended" not in yaml.safe_dump(__import__("tomllib").loads(config.read_text())["tool"]["ragdive"]["suites"])
    emu = Emulator(WF, workspace, "push", secrets={"OPENAI_API_KEY": "sk-test"})
    emu.job_results["gate"] = "success"
    assert emu.job_runs("shard")
    leg = emu.run_job("shard", {"shard": 1})
    assert not leg.failed, [s.output[-2000:] for s in leg.steps if s.status == "failed"]
    assert leg.outputs["suites"] == {"extended": "false"}
    for name in ("One shard of the extended suite", "Upload the shard's results", "Save the judge cache"):
        assert leg.step(name).status == "not_run", name
    assert not any("--ragdive-suite=extended" in c for _, _, c in emu.executed)
    assert emu.job_outputs["shard"] == {"extended": "false"} and not emu.job_runs("merged-gate")


def test_schedule_records_a_proposed_baseline(workspace: Path) -> None:
    emu = Emulator(WF, workspace, "schedule", env={"CONSISTENCY_RUNS": "2"})  # 2 keeps the test fast
    job = emu.run_job("consistency")
    for s in job.steps:
        assert s.status in ("ran", "skipped"), (s.name, s.output[-3000:])
    proposed = json.loads((workspace / "example_project" / "proposed-baseline.json").read_text())
    committed = json.loads((workspace / "example_project" / "baseline.json").read_text())
    assert set(proposed["suites"]) == set(committed["suites"]) >= {"core", "extended"}
    assert {m["runs"] for s in ("core", "extended") for m in proposed["suites"][s].values()} == {2}
    assert "## Proposed baseline vs baseline.json" in job.summary and "| suite | metric |" in job.summary
    art = emu.artifacts / "proposed-baseline"
    assert (art / "proposed-baseline.json").is_file() and (art / ".ragdive" / "report" / "results.json").is_file()
    assert [a for a, _, _ in emu.cache_paths] == ["actions/cache/restore", "actions/cache/save"]
    assert EXPR.search(json.dumps(job.outputs)) is None


def test_a_failing_consistency_run_still_uploads_its_artifact(workspace: Path) -> None:
    """A week with a safety violation: the baseline is refused, and the report is what to look at."""
    emu = Emulator(WF, workspace, "schedule", env={"CONSISTENCY_RUNS": "1", "EXAMPLE_RAG_READER": "memory"})
    job = emu.run_job("consistency")
    assert job.step("Consistency runs").status == "failed"
    assert job.step("Upload the proposed baseline").status == "ran"
    assert (emu.artifacts / "proposed-baseline" / ".ragdive" / "report" / "results.json").is_file() or \
        (emu.artifacts / "proposed-baseline" / "results.json").is_file()
