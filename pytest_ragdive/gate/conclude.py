"""The end of a run, outside pytest: scored conversations + config + baseline -> RunOutcome.

:func:`conclude` is pure (no files, no pytest): it aggregates each suite,
gates against the baseline or builds the baseline to write, and gathers what
the reports show. :func:`publish` does the writing (the baseline, the report
files). The pytest session calls both once, on the controller; the
command-line gate calls them on merged result files.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from .. import __version__
from ..core.config import RagdiveConfig
from ..core.memory import paused_gc
from ..core.records import Conversation, Document, JudgeCalls, ValidationStats
from ..core.results import Baseline, GoldenFile, SuiteResult, custom_metrics
from ..llm.stats import LLMStats
from ..metrics.registry import active_registry
from .outcome import GateStatus, RunInfo, RunOutcome
from .rows import GateRow

if TYPE_CHECKING:
    from ..reports.results_json import Stored


class RunFacts(BaseModel):
    """What the caller knows about the run besides its conversations."""

    model_config = ConfigDict(extra="forbid")

    planned: int = 0  # conversations planned (all runs)
    completed: bool = True  # False: the test loop was interrupted (Ctrl-C, -x)
    fatal: list[str] = Field(default_factory=list)  # run-ending errors
    notes: list[str] = Field(default_factory=list)  # notes gathered before the end
    llm: LLMStats | None = None
    backend: str = "offline"
    judge_models: dict[str, str] = Field(default_factory=dict)
    reruns: int = 0  # reruns of inconclusive suites so far (the gate's look)
    # the golden files of the selected suites (golden_fingerprint.fingerprint), recorded in a new baseline
    golden: dict[str, dict[str, GoldenFile]] = Field(default_factory=dict)
    not_run: list[str] = Field(default_factory=list)  # keys of planned conversations an interrupted run did not finish


def conclude(
    conversations: Sequence[Conversation],
    cfg: RagdiveConfig,
    baseline: Baseline | None,
    facts: RunFacts,
) -> RunOutcome:
    """Decide the run. ``baseline`` is the baseline to gate against or, when
    ``cfg.update_baseline``, the existing file's content (suites this run does
    not cover keep their stored values), or None. The config's metrics (its own and
    its rubric judges besides the built-ins: ``cfg.metrics``) are the ones it decides on.
    The cyclic collector is paused meanwhile (:func:`~pytest_ragdive.core.memory.paused_gc`):
    the tables built here are let go of by reference counting, and each of its full passes
    over a large run's heap (every held conversation) cost a third of the paired test's time."""
    with cfg.metrics.active(), paused_gc():
        return _conclude(conversations, cfg, baseline, facts)


def _conclude(
    conversations: Sequence[Conversation],
    cfg: RagdiveConfig,
    baseline: Baseline | None,
    facts: RunFacts,
) -> RunOutcome:
    from ..metrics.aggregate import aggregate
    from .baseline import baseline_note, build_baseline
    from .rows import check, where_recorded

    convs = sorted(conversations, key=lambda c: (c.suite, c.run, c.id))
    notes = list(facts.notes)
    selected = cfg.selected_suites()
    ran = {c.suite for c in convs}
    suites = {s: aggregate(s, [c for c in convs if c.suite == s]) for s in selected if s in ran}
    not_run = [s for s in selected if s not in ran]
    if not_run:
        notes.append(
            f"no conversation of suite(s) {', '.join(not_run)} finished (deselected, or every item errored "
            "before running): not gated" + ("" if convs or facts.not_run else ", no report written")
        )
    partial = len(convs) < facts.planned
    # a subset (-k, --lf, a deselection, an interrupted loop) with a baseline: reported, not decided;
    # the status line says so (one line), so no note here
    subset_gate = partial and bool(convs) and baseline is not None and not cfg.update_baseline and cfg.shard is None
    if partial and convs and not subset_gate:
        notes.append(
            f"only {len(convs)} of {facts.planned} planned conversations ran (deselected or interrupted): "
            "the metrics describe that subset"
        )
    info = RunInfo(
        plugin_version=__version__,
        config_hash=cfg.config_hash(),
        backend=facts.backend,
        judge_models=dict(facts.judge_models),
        suites=selected,
        planned=facts.planned,
        completed=facts.completed,
        subset=partial,
    )
    out = RunOutcome(
        info=info,
        status=GateStatus.NOT_GATED,
        suites=suites,
        conversations=convs,
        fatal=list(facts.fatal),
        not_run=list(facts.not_run),
        llm=facts.llm,
        judge_calls=JudgeCalls.total(convs) if any(c.judge_calls is not None for c in convs) else None,
    )
    _generated_stats(out)
    out.custom_metrics = custom_metrics(active_registry())
    if cfg.shard is not None:
        # one shard of a split run: reported, never gated or recorded alone (the gate command merges the shards)
        out.info.shard = cfg.shard
        out.status = GateStatus.SHARD
    elif cfg.update_baseline:
        errored = sum(1 for c in convs if c.error)
        unsafe = sum(1 for c in convs if c.failures)
        unjudged = sum(c.judge_calls.not_judged for c in convs if c.judge_calls is not None)
        skipped = sum(1 for c in convs if c.not_run)
        why = (
            "the run was interrupted" if not facts.completed
            else "the run hit a fatal LLM error" if facts.fatal
            else "no conversation ran" if not convs
            else f"{unjudged} judge call(s) not judged and {skipped} conversation(s) not run (record mode none: no key)"
            if unjudged or skipped
            else f"only {len(convs)} of {facts.planned} planned conversations ran" if partial
            else f"{errored} conversation(s) errored" if errored
            else f"{unsafe} conversation(s) with a safety violation or a failed check (a baseline never records one)" if unsafe
            else _all_empty(suites, cfg)
        )
        if why:
            notes.append(f"baseline NOT written: {why}")
            out.status = GateStatus.BASELINE_REFUSED
        else:
            existing = baseline if baseline is not None and baseline.backend == facts.backend else None
            built = build_baseline(
                suites, cfg.gate, config_hash=info.config_hash, backend=facts.backend,
                judge_models=info.judge_models, plugin_version=__version__, existing=existing, convs=convs,
            )
            golden = {**(existing.golden if existing is not None else {}), **facts.golden}
            out.baseline = built.model_copy(update={"golden": {s: golden[s] for s in sorted(golden) if s in built.suites}})
            _record_answers(out, cfg, existing, convs)
            if baseline is not None:
                from .diff import diff_baselines

                out.baseline_diff = diff_baselines(baseline, out.baseline)
            out.status = GateStatus.BASELINE_WRITTEN
            for row in _floored([], suites, cfg):
                if row.verdict == "below floor":
                    notes.append(f"suite {row.suite}: {row.metric} {row.reason} (recorded in the baseline all the same)")
            for suite, res in suites.items():
                empty = [m for m in where_recorded(cfg.gated_metrics(suite), out.baseline.suites.get(suite, {}),
                                                   cfg.gate_policy.where_data) if res.value(m) is None]
                if empty:
                    notes.append(
                        f"suite {suite}: gated metric(s) {', '.join(empty)} had no value (no case they apply to); "
                        "gating against this baseline will fail until they do or you remove them from the gate"
                    )
    elif subset_gate:
        out.status = GateStatus.SUBSET
    elif baseline is not None:
        from .fallback import keyless_gate

        policy = cfg.gate_policy
        # a keyless run that could not judge (or run) everything: the offline twins, the conversations that ran
        keyless = keyless_gate(convs, {s: cfg.gated_metrics(s) for s in suites})
        notes += keyless.notes
        per_suite = {s: where_recorded(keyless.gates[s], baseline.suites.get(s, {}), policy.where_data) for s in suites}
        for s, res in suites.items():
            unrecorded = [m for m in keyless.gates[s] if m not in per_suite[s] and res.value(m) is not None]
            if unrecorded:
                notes.append(f"suite {s}: {', '.join(unrecorded)} not in the baseline: not gated (re-record the baseline "
                             "with --ragdive-update-baseline to gate it)")
        rows = check(
            suites, baseline, cfg.gate, per_suite, convs=convs, method=policy.method,
            on_inconclusive=policy.inconclusive, max_reruns=cfg.max_reruns, look=facts.reruns,
            unstable_spread=policy.unstable_spread, where_data=policy.where_data, improvement=policy.improvement,
            improvement_delta=policy.improvement_delta, ran=keyless.ran,
        )
        rows = _floored(rows, suites, cfg)
        for row in rows:
            if row.verdict == "not in baseline" and row.metric in keyless.twins.get(row.suite, {}):
                notes.append(
                    f"suite {row.suite}: the baseline has no offline value of {keyless.twins[row.suite][row.metric]} "
                    f"({row.metric}): re-record it with this plugin version (it stores the offline twins of "
                    "the judged metrics) to gate a keyless run"
                )
        note = baseline_note(baseline, cfg.baseline or "", policy.method)
        if note and rows:
            notes.append(note)
        if not rows:
            out.status = GateStatus.NOTHING_RAN  # never "passed" on nothing
        else:
            out.gate = rows
            out.status = (
                GateStatus.NO_DATA if all(r.current is None for r in rows)
                else GateStatus.FAILED if any(r.failed for r in rows)
                else GateStatus.INCONCLUSIVE if any(r.verdict == "inconclusive" for r in rows)  # gate.inconclusive = "pass"
                else GateStatus.PASSED
            )
            if baseline.answers is not None and cfg.baseline:
                _compare_answers(out, baseline, cfg.path(cfg.baseline), notes)
            if out.status is GateStatus.PASSED and not facts.completed:
                # Ctrl-C, -x, the deadline: what finished is shown, but it passes nothing
                out.status = GateStatus.SUBSET
                notes.append(f"the run was interrupted after {len(convs)} of {facts.planned} conversations: nothing is decided")
    elif cfg.floors and suites and facts.completed and not partial:
        # no baseline: a first PR is gated on the floors alone
        rows = _floored([], suites, cfg)
        if rows:
            out.gate = rows
            out.status = (
                GateStatus.NO_DATA if all(r.current is None for r in rows)
                else GateStatus.FAILED if any(r.failed for r in rows)
                else GateStatus.PASSED
            )
    if facts.fatal and out.status is not GateStatus.BASELINE_REFUSED:
        out.status = GateStatus.FAILED
    out.notes = notes
    return out


def _all_empty(suites: Mapping[str, SuiteResult], cfg: RagdiveConfig) -> str:
    """Why a baseline must not be written because a suite's gated metrics all have no value
    (gating against it would fail every time), or ""."""
    from .rows import where_recorded

    for suite, res in suites.items():
        strict = where_recorded(cfg.gated_metrics(suite), {}, cfg.gate_policy.where_data)
        if strict and all(res.value(m) is None for m in strict):
            return (
                f"suite {suite}: none of its gated metrics ({', '.join(strict)}) had a value in this run (no case they "
                "apply to, or every judge reply unusable: see the notes above); gating against it would fail every time"
            )
    return ""


def _floored(rows: list[GateRow], suites: Mapping[str, SuiteResult], cfg: RagdiveConfig) -> list[GateRow]:
    """The gate rows with ``[tool.ragdive.floors]`` applied (:mod:`.floors`)."""
    if not cfg.floors:
        return rows
    from .floors import apply_floors

    return apply_floors(rows, suites, cfg.floors, lambda suite, metric: metric in cfg.gated_metrics(suite, cfg.floors))


def _record_answers(out: RunOutcome, cfg: RagdiveConfig, existing: Baseline | None, convs: Sequence[Conversation]) -> None:
    """Keep the answers of one run beside the baseline to write (suites this run did not
    cover keep the answers the existing file kept)."""
    from .answers import answers_ref, build_answers, load_answers

    assert out.baseline is not None and cfg.baseline is not None
    answers = build_answers(convs, {s: sorted(cfg.gated_metrics(s)) for s in out.suites})
    if existing is not None:
        old, _ = load_answers(existing, cfg.path(cfg.baseline))
        for suite, kept in (old.suites.items() if old is not None else ()):
            if suite in out.baseline.suites and suite not in answers.suites:
                answers.suites[suite] = kept
    answers.suites = dict(sorted(answers.suites.items()))
    out.recorded_answers = answers
    out.baseline.answers = answers_ref(cfg.path(cfg.baseline), answers)


def _compare_answers(out: RunOutcome, baseline: Baseline, path: Path, notes: list[str]) -> None:
    """A gated run: which conversations answered otherwise than the baseline's recorded run
    (the file beside ``path``); a failed gate: the baseline answers of the conversations that
    pull a failed metric down."""
    from .answers import changed_turns, compared, load_answers

    answers, note = load_answers(baseline, path)
    if note and out.status.fails:
        notes.append(note)
    if answers is not None:
        out.answers_changed = changed_turns(out.conversations, answers)
        if out.status.fails:
            out.baseline_answers = compared(out.gate or [], out.conversations, answers)


def _generated_stats(out: RunOutcome) -> None:
    """Validator counts and question diversity per suite of generated conversations."""
    gen = [c for c in out.conversations if c.source == "generated"]
    if not gen:
        return
    from ..metrics.diversity import diversity_by_turn

    for suite in sorted({c.suite for c in gen}):
        mine = [c for c in gen if c.suite == suite]
        out.validation[suite] = ValidationStats.from_conversations(mine)
        div = diversity_by_turn([c for c in mine if c.error is None])
        out.diversity[suite] = {str(k): v for k, v in div.items()}


def publish(
    outcome: RunOutcome,
    cfg: RagdiveConfig,
    documents: Callable[[str], Mapping[str, Document]] | None = None,
    stored: Stored | None = None,
) -> list[Path]:
    """Write what the outcome asks for: the baseline (update runs) and the
    report files (when a report dir is configured and a conversation ran).
    ``documents(suite)`` gives a generated suite's corpus for the RAG-DIVE
    export; ``stored``: the full JSON and report.html body of conversations the
    outcome holds without contexts (:class:`~pytest_ragdive.held.HeldConversations`).
    Returns the report files written (the cyclic collector paused meanwhile, as in :func:`conclude`)."""
    with paused_gc():
        return _publish(outcome, cfg, documents, stored)


def _publish(
    outcome: RunOutcome,
    cfg: RagdiveConfig,
    documents: Callable[[str], Mapping[str, Document]] | None,
    stored: Stored | None,
) -> list[Path]:
    if outcome.baseline is not None and outcome.status is GateStatus.BASELINE_WRITTEN:
        from .baseline import write_baseline

        assert cfg.baseline is not None
        path = cfg.path(cfg.baseline)
        if path.is_symlink():  # replaced, never written through (atomic_open's rename)
            outcome.notes.append(f"the baseline {path} was a symbolic link (to {os.readlink(path)}): the link is "
                                 "replaced by the new baseline file, the file it pointed to is left as it was")
        if outcome.recorded_answers is not None:  # first: the baseline never names a file not there
            from .answers import write_answers

            write_answers(path, outcome.recorded_answers)
        write_baseline(path, outcome.baseline)
        outcome.baseline_path = str(path)
    if not cfg.report_dir or not (outcome.conversations or outcome.not_run):
        return []
    from ..reports.write import write_reports

    report_dir = cfg.path(cfg.report_dir)
    from ..reports.manifest import owned, remember

    mine = owned(report_dir) or set()
    exports = {}
    for suite in outcome.validation if documents is not None else ():
        path = report_dir / f"ragdive_{suite}.json"
        if (path.exists() or path.is_symlink()) and path.name not in mine:  # a file of the user's: never overwritten
            outcome.notes.append(f"the RAG-DIVE export of suite {suite!r} is not written: {path} is a file this "
                                 "plugin did not write")
        else:
            exports[suite] = path
    written = write_reports(report_dir, outcome, stored)
    if exports and documents is not None:
        from ..sources.ragdive_format import write_ragdive

        done = []
        try:
            for suite, path in exports.items():
                ok = [c for c in outcome.conversations
                      if c.suite == suite and c.source == "generated" and c.error is None and c.turns]
                done.append(write_ragdive(path, ok, documents(suite)))
        finally:
            remember(report_dir, done)
    return written
