"""The pytest session's ragdive state: config, plans, the pipeline, results.

Everything mutable lives on this object, stored in ``config.stash``; nothing
is global. The role this process plays (plain run, xdist controller, xdist
worker) is chosen once in :mod:`.controller`; the end of the run is
:func:`pytest_ragdive.conclude.conclude`.
"""

from __future__ import annotations

import concurrent.futures
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from ..core.config import RagdiveConfig, find_config_file, load_config
from ..core.errors import GoldenError, UsageError
from ..core.paths import check_writable
from ..core.records import Conversation, Document
from ..core.results import Baseline
from ..gate.baseline import load_baseline
from ..gate.outcome import GateStatus, RunOutcome
from ..metrics.applicable import without_contexts
from ..run import http_target
from ..run.held import HeldConversations
from ..run.pipeline import Pipeline
from ..run.planning import Plan, plan_all
from ..run.target import AsyncTarget, TargetError, as_async
from .options import cli_values, config_dirs, flag_names
from .progress import Progress

if TYPE_CHECKING:
    from ..gate.conclude import RunFacts

SESSION_KEY = pytest.StashKey["RagdiveSession"]()


class Scheduler(Protocol):
    """How this process starts conversations ahead of the item that asks (the role decides)."""

    def schedule(self, sess: RagdiveSession, item: pytest.Item, target: AsyncTarget) -> None: ...


class RagdiveSession:
    """State of one pytest session: config, plans, results, the outcome."""

    def __init__(self, config: pytest.Config, cfg: RagdiveConfig, config_file: Path | None, active: bool) -> None:
        self.config = config
        self.cfg = cfg
        self.config_file = config_file
        self.active = active
        self.notes: list[str] = []
        self.baseline: Baseline | None = None
        self._plans: list[Plan] | None = None
        self.pipeline = Pipeline(cfg)
        self._target: AsyncTarget | None = None
        self.scheduler: Scheduler | None = None
        self.progress: Progress | None = None  # set by the role when stdout is a terminal
        # the scored conversations, held compactly (contexts stored for the reports only)
        self.collected = HeldConversations(keep_reports=bool(cfg.report_dir))
        self._shared_results: bool | None = None  # some user test asks for ragdive_conversation
        self._handed: dict[str, Conversation] = {}  # item nodeid -> its conversation, until its call report
        self.worker_llm_stats: list[dict[str, Any]] = []
        self.outcome: RunOutcome | None = None
        self.written: list[Path] = []
        # --ragdive-deadline: measured from the start of the session
        self.deadline_at = time.monotonic() + cfg.deadline_s if cfg.deadline_s is not None else None
        self.deadline_hit = False

    # -- configuration ------------------------------------------------------
    @classmethod
    def from_pytest(cls, config: pytest.Config, active: bool) -> RagdiveSession:
        explicit = config.getoption("ragdive_config", default=None)
        file = find_config_file(config_dirs(config), explicit)
        cfg = load_config(file, cli_values(config), flag_names(), default_dir=config.invocation_params.dir)
        self = cls(config, cfg, file, active or cfg.autorun)
        if self.active:
            self._check_modes()
        return self

    def _check_modes(self) -> None:
        cfg = self.cfg
        if not cfg.suites:
            raise UsageError(
                f"ragdive config error in {cfg.source}: no suites configured "
                "(add [tool.ragdive.suites.core] with single_turn/conversations files)"
            )
        unknown = [s for s in cfg.requested_suites() if s not in cfg.suites]
        if unknown:
            where = "--ragdive-suite" if self.config.getoption("ragdive_suite", default=None) else "suite"
            raise UsageError(
                f"ragdive config error: {where}={cfg.suite} selects suite(s) {', '.join(unknown)} that "
                f"{cfg.source or 'the config'} does not configure (configured: {', '.join(cfg.suites)}; "
                f"add [tool.ragdive.suites.{unknown[0]}] for a suite of your own next to core and extended)"
            )
        if cfg.llm_enabled() and cfg.judge_backend == "ragas":
            import importlib.util

            if importlib.util.find_spec("ragas") is None:
                raise UsageError(
                    "judge_backend = 'ragas' needs ragas: pip install 'pytest-ragdive[ragas]' "
                    "(or set judge_backend = 'builtin')"
                )
        self.plans()  # golden data errors are usage errors, reported before collection
        if cfg.update_baseline and cfg.shard:
            raise UsageError(
                f"--ragdive-update-baseline with --ragdive-shard={cfg.shard}: one shard cannot record a baseline "
                "(record it from one unsharded run)"
            )
        if cfg.update_baseline and not cfg.baseline:
            raise UsageError("--ragdive-update-baseline needs a path: --ragdive-baseline=PATH (or baseline = ... in the config)")
        if hasattr(self.config, "workerinput"):
            # an xdist worker runs conversations and never concludes: the controller has checked
            # the baseline already (before any worker started), and only the controller holds it
            return
        check_writable(  # the controller writes; check before anything runs
            cfg.path(cfg.report_dir) if cfg.report_dir else None,
            cfg.path(cfg.baseline) if cfg.update_baseline and cfg.baseline else None,
        )
        if cfg.update_baseline and cfg.baseline:
            existing = self._existing_baseline()
            if existing is not None:
                from ..gate.preconditions import check_overwrite

                path = cfg.path(cfg.baseline)
                self.notes += check_overwrite(cfg, path, existing, self.backend_name(), self.judge_models())
        if cfg.baseline and not cfg.update_baseline:
            self.baseline = self._gate_baseline(cfg.path(cfg.baseline))

    def _gate_baseline(self, path: Path) -> Baseline:
        from ..gate.preconditions import gate_baseline

        baseline, notes = gate_baseline(self.cfg, path, self.backend_name())
        self.notes += notes
        return baseline

    def backend_name(self) -> str:
        if not self.cfg.llm_enabled():
            return "offline"
        return "ragas" if self.cfg.judge_backend == "ragas" else "llm"

    def judge_models(self) -> dict[str, str]:
        if not self.cfg.llm_enabled():
            return {}
        return {r: m for r in ("simulator", "validator", "judge", "classifier") if (m := self.cfg.role_model(r))}

    # -- plans and items ----------------------------------------------------
    def plans(self) -> list[Plan]:
        if self._plans is None:
            try:
                plans = plan_all(self.cfg, self.cfg.llm_enabled(), self.notes)
            except GoldenError as e:
                raise GoldenError(f"ragdive golden data error: {e}") from None
            shard = self.cfg.shard_index()
            if shard is not None:
                from ..run.planning import expected_turns, shard_plans

                mine = shard_plans(plans, *shard)
                self.notes.append(
                    f"shard {self.cfg.shard}: {len(mine)} of {len(plans)} planned conversations "
                    f"({sum(map(expected_turns, mine))} of {sum(map(expected_turns, plans))} expected turns)"
                )
                plans = mine
            self._plans = plans
        return self._plans

    @property
    def fatal(self) -> list[str]:
        return self.pipeline.fatal

    def default_target(self) -> Any:
        if not self.cfg.target:
            raise TargetError(
                "no ragdive target: override the `ragdive_target` fixture in conftest.py "
                "or set target = 'package.module:attribute' in [tool.ragdive]"
            )
        if self.cfg.base_dir not in sys.path:
            sys.path.insert(0, self.cfg.base_dir)
        return http_target.from_config(self.cfg.target, self.cfg.target_timeout_s)

    # -- running ------------------------------------------------------------
    def result_for(self, plan: Plan, target: Any, item: pytest.Item | None = None) -> Conversation:
        """Run (or fetch the prefetched run of) one planned conversation."""
        if self._target is None:
            self._target = as_async(target, self.cfg.target_timeout_s)
        atarget = self._target
        if item is not None and self.scheduler is not None:
            self.scheduler.schedule(self, item, atarget)
        fut = self.pipeline.submit(plan, atarget)
        if self.deadline_at is None:
            return self.progress.wait(fut) if self.progress is not None else fut.result()
        try:
            if self.progress is not None:
                return self.progress.wait(fut, deadline=self.deadline_at)
            return fut.result(timeout=max(0.0, self.deadline_at - time.monotonic()))
        except concurrent.futures.TimeoutError:
            fut.cancel()
            self._deadline_reached(item)
            pytest.fail(
                f"not finished: the ragdive deadline of {self.cfg.deadline_s:g} s was reached "
                "(--ragdive-deadline / deadline_s)",
                pytrace=False,
            )

    def _deadline_reached(self, item: pytest.Item | None) -> None:
        """Stop the session after this item; the run ends as an interrupted one."""
        if not self.deadline_hit:
            self.deadline_hit = True
            self.notes.append(
                f"the ragdive deadline of {self.cfg.deadline_s:g} s was reached: the run stopped, its "
                "reports are partial, no baseline was written and nothing was gated"
            )
        if item is not None:
            item.session.shouldstop = f"ragdive deadline of {self.cfg.deadline_s:g} s reached"

    def hand_over(self, item: pytest.Item, conv: Conversation) -> None:
        """An item ran its conversation: its call report (:meth:`take_result`) picks it up."""
        self._handed[item.nodeid] = conv

    def take_result(self, item: pytest.Item) -> Conversation | None:
        """The conversation an item ran, once (None for another item, or one that did not get that far)."""
        return self._handed.pop(item.nodeid, None)

    def collect(self, conv: Conversation, as_json: str | None = None) -> None:
        """Hold a scored conversation for the end of the run (:class:`~pytest_ragdive.held.HeldConversations`);
        ``as_json``: its JSON, when it arrived as JSON (from an xdist worker)."""
        self.collected.add(conv, as_json)

    def release(self, item: pytest.Item, plan: Plan, passed: bool) -> None:
        """The item of ``plan`` is reported: the pipeline's copy of its conversation can go,
        and, when it passed, the plan's script too (only a failed item is ever run again,
        by a rerun plugin; the session's reruns plan afresh), unless a test of the user's
        asks for the same conversation (the ``ragdive_conversation`` fixture)."""
        if self._shared_results is None:
            self._shared_results = any("ragdive_conversation" in getattr(i, "fixturenames", ()) for i in item.session.items)
        if self._shared_results:
            return
        self.pipeline.release(plan.key)
        if passed and plan.kind in ("golden", "golden_single"):
            plan.script = None

    def fail_if_broken(self, conv: Conversation) -> None:
        """Fail the item of a conversation that errored, produced no turn or broke a
        safety rule, naming the turn, its question, the answer and the rule. A target's
        traceback points at the user's code; the plugin's own (an LLM call that failed)
        only under -v (results.json keeps it either way)."""
        from .item_report import failure_text

        in_target = bool(conv.error) and str(conv.error).startswith(("turn ", "stand-alone probe"))
        text = failure_text(conv, with_traceback=in_target or self.config.option.verbose > 0)
        if text is not None:
            pytest.fail(text, pytrace=False)

    def close(self) -> None:
        self.pipeline.close()

    def let_go(self) -> None:
        """The run is concluded, reported and summarised: let go of its conversations (the
        held ones and the outcome's) before pytest's own clean-up and the interpreter's last
        collection, which walk everything still alive (five turns and some sixty objects a
        conversation)."""
        self.collected.clear()
        self._handed.clear()
        if self.outcome is not None:
            self.outcome.conversations = []

    # -- llm statistics -----------------------------------------------------
    def local_llm_stats(self) -> dict[str, Any] | None:
        return self.pipeline.llm_stats()

    def merged_llm_stats(self) -> Any:
        dumps = list(self.worker_llm_stats)
        local = self.local_llm_stats()
        if local is not None:
            dumps.append(local)
        if not dumps:
            return None
        from ..llm.stats import LLMStats

        total = LLMStats()
        for d in dumps:
            total = total.merge(LLMStats.model_validate(d))
        return total

    # -- the end of the run -------------------------------------------------
    def conclude(self, completed: bool = True) -> RunOutcome:
        """Decide the run (:func:`~pytest_ragdive.conclude.conclude`) and write the
        baseline and reports (:func:`~pytest_ragdive.conclude.publish`).

        ``completed`` is False when the test loop was interrupted (Ctrl-C,
        ``-x``): the reports still hold every finished conversation, but no
        baseline is written from a partial run.
        """
        from ..gate.conclude import RunFacts, conclude, publish

        baseline = self.baseline
        if self.cfg.update_baseline:
            baseline = self._existing_baseline()
        if not completed and self.deadline_at is not None and time.monotonic() >= self.deadline_at:
            self._deadline_reached(None)  # (the xdist controller: its workers stopped at it)
        facts = RunFacts(
            planned=len(self.plans()),
            completed=completed,
            fatal=list(self.fatal),
            notes=list(self.notes),
            llm=self.merged_llm_stats(),
            backend=self.backend_name(),
            judge_models=self.judge_models(),
            golden=self._golden() if self.cfg.update_baseline else {},
        )
        convs = self.collected.values()
        # (conversations held without their contexts had some: then no metric is switched off)
        warning = None if self.collected.had_contexts else without_contexts(convs)
        if warning:
            facts.notes.append(warning)
        outcome = conclude(convs, self.cfg, baseline, facts)
        if completed and not self.cfg.update_baseline:
            outcome = self._rerun_inconclusive(outcome, baseline, facts)
        try:
            self.written = publish(outcome, self.cfg, self._generated_documents, self.collected)
        except OSError as e:
            # the decision stands and is printed; then one clear error, and the run fails
            what = e.filename or (self.cfg.report_dir or self.cfg.baseline)
            outcome.fatal.append(f"ragdive could not write {what}: {e.strerror or e}")
            if outcome.status is GateStatus.BASELINE_WRITTEN:
                outcome.notes.append("baseline NOT written: the file could not be written")
            outcome.status = GateStatus.FAILED
        self.outcome = outcome
        return outcome

    def _rerun_inconclusive(self, outcome: RunOutcome, baseline: Baseline | None, facts: RunFacts) -> RunOutcome:
        """``gate.inconclusive = "rerun"``: run the suites whose gate is
        inconclusive again (only those; cached calls are free) and decide on
        every run pooled, until decided or ``max_reruns`` reruns were made."""
        from ..gate.conclude import conclude
        from ..gate.rerun import rerun_plans, run_plans, suites_to_rerun

        while outcome.gate and (suites := suites_to_rerun(outcome.gate)) and not self.fatal:
            target = self._rerun_target()
            if target is None:
                facts.notes.append(
                    f"the gate of suite(s) {', '.join(suites)} is inconclusive, but this process cannot rerun them "
                    "(under pytest-xdist the controller needs target = 'module:attribute' in the config: the "
                    "ragdive_target fixture lives in the workers); decided on the runs made"
                )
                facts.reruns = self.cfg.max_reruns
            else:
                look = facts.reruns + 1
                plans = rerun_plans(self.cfg, suites, look, self.collected.values(), self.cfg.llm_enabled())
                for conv in run_plans(self.pipeline, plans, target):
                    self.collect(conv)
                facts.planned += len(plans)
                facts.reruns = look
                facts.notes.append(
                    f"rerun {look} of at most {self.cfg.max_reruns}: the gate of suite(s) {', '.join(suites)} was "
                    f"inconclusive; ran their {len(plans)} conversation(s) again and pooled every run"
                )
            facts.fatal = list(self.fatal)
            facts.llm = self.merged_llm_stats()
            if not self.collected.had_contexts:
                without_contexts(self.collected.values())  # the reruns too (the note is already there)
            outcome = conclude(self.collected.values(), self.cfg, baseline, facts)
        return outcome

    def _rerun_target(self) -> AsyncTarget | None:
        """The target for reruns: the one the items used, else the config's."""
        if self._target is None and self.cfg.target:
            try:
                self._target = as_async(self.default_target(), self.cfg.target_timeout_s)
            except TargetError:
                return None
        return self._target

    def _golden(self) -> dict[str, Any]:
        from ..sources.fingerprint import fingerprint

        return fingerprint(self.cfg, self.cfg.selected_suites())

    def _existing_baseline(self) -> Baseline | None:
        """The baseline file an update replaces (its other suites are kept)."""
        assert self.cfg.baseline is not None
        path = self.cfg.path(self.cfg.baseline)
        if not path.is_file():
            return None
        try:
            return load_baseline(path)
        except UsageError:
            return None

    def _generated_documents(self, suite: str) -> dict[str, Document]:
        path = self.cfg.generated_corpus(suite)
        return self.pipeline.corpus(path) if path else {}


def get_session(config: pytest.Config) -> RagdiveSession:
    """The session's state; created on first use when the plugin is dormant
    (a user test asked for ``ragdive_conversation``)."""
    sess = config.stash.get(SESSION_KEY, None)
    if sess is None:
        sess = RagdiveSession.from_pytest(config, active=False)
        config.stash[SESSION_KEY] = sess
    return sess
