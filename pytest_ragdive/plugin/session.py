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
from contextvars import Token
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from ..core.config import RagdiveConfig, find_config_file, load_config
from ..core.errors import GoldenError, UsageError
from ..core.records import Conversation, Document
from ..core.results import Baseline
from ..gate.baseline import load_baseline
from ..gate.outcome import GateStatus, RunOutcome
from ..metrics.applicable import without_contexts
from ..metrics.registry import MetricRegistry, activate, deactivate
from ..run import http_target
from ..run.frameworks import framework_of
from ..run.held import HeldConversations
from ..run.pipeline import Pipeline
from ..run.planning import Plan, plan_all
from ..run.target import AsyncTarget, TargetError
from .options import cli_values, config_dirs, flag_names
from .progress import Progress
from .threads import ThreadCensus

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
        self._config_target: Any = None  # what `target` in the config names, once built
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
        self._metrics_token: Token[MetricRegistry | None] | None = None
        self.setup_error: str | None = None  # a set-up mistake found once the run started (the session stops)
        self.threads = ThreadCensus()  # threads alive before the run: not the run's leak

    # -- configuration ------------------------------------------------------
    @classmethod
    def from_pytest(cls, config: pytest.Config, active: bool) -> RagdiveSession:
        explicit = config.getoption("ragdive_config", default=None)
        file = find_config_file(config_dirs(config), explicit)
        cfg = load_config(file, cli_values(config), flag_names(), default_dir=config.invocation_params.dir,
                          metric_sources=conftest_modules(config))
        self = cls(config, cfg, file, active or cfg.autorun)
        self.use_metrics(cfg.metrics)
        if self.active:
            from .preflight import check_modes

            found = check_modes(self)
            self.notes += found.notes
            self.baseline = found.baseline
        return self

    def use_metrics(self, registry: MetricRegistry) -> None:
        """Make ``registry`` this session's metrics: the config's (which the pipeline scores) and
        the one every reader of :data:`~pytest_ragdive.metrics.registry.METRICS` sees until the
        session ends (pytest's clean-up resets it)."""
        self.cfg.use_metrics(registry)
        token = activate(registry)
        if self._metrics_token is None:  # the first: what the clean-up restores
            self._metrics_token = token
            self.config.add_cleanup(lambda: deactivate(token))

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
        """The target ``target`` in the config names (built once)."""
        if self._config_target is not None:
            return self._config_target
        if not self.cfg.target:
            raise TargetError(
                "no ragdive target: override the `ragdive_target` fixture in conftest.py "
                "or set target = 'package.module:attribute' in [tool.ragdive]"
            )
        if self.cfg.base_dir not in sys.path:
            sys.path.insert(0, self.cfg.base_dir)
        self._config_target = http_target.from_config(self.cfg.target, self.cfg.target_timeout_s)
        return self._config_target

    # -- running ------------------------------------------------------------
    def result_for(self, plan: Plan, target: Any, item: pytest.Item | None = None) -> Conversation:
        """Run (or fetch the prefetched run of) one planned conversation."""
        if self._target is None:
            self._check_target(target, item)
            self._target = self._wrap(target)
        atarget = self._target
        try:
            if item is not None and self.scheduler is not None:
                self.scheduler.schedule(self, item, atarget)
            fut = self.pipeline.submit(plan, atarget)
            while True:
                try:
                    conv = self._wait(fut)
                    break
                except concurrent.futures.CancelledError:
                    # a conversation blocked the loop: this one goes on on a fresh loop (or is the stuck one)
                    moved = self.pipeline.current(plan.key)
                    if self.pipeline.stalled is not None or moved is None or moved is fut:
                        raise
                    fut = moved
            self._check_first_reply(target, item)
            return conv
        except concurrent.futures.TimeoutError:
            fut.cancel()
            self._deadline_reached(item)
            pytest.fail(
                f"not finished: the ragdive deadline of {self.cfg.deadline_s:g} s was reached "
                "(--ragdive-deadline / deadline_s)",
                pytrace=False,
            )
        except (concurrent.futures.CancelledError, TargetError):
            stalled = self.pipeline.stalled
            if stalled is None:
                raise
        # the watchdog cancelled what waited (a stalled loop): the run stops after this item
        done = self.pipeline.finished(plan.key)
        if done:
            return done[0]  # it finished before the loop stalled
        if item is not None:  # (shouldfail, not shouldstop: the exit code is 1, "tests failed")
            item.session.shouldfail = "ragdive: the event loop stalled (see the ragdive error below)"
        pytest.fail(f"not finished: {stalled}", pytrace=False)

    def _wait(self, fut: concurrent.futures.Future[Conversation]) -> Conversation:
        """The conversation ``fut`` gives, under the deadline and the progress line if any."""
        if self.deadline_at is None:
            return self.progress.wait(fut) if self.progress is not None else fut.result()
        if self.progress is not None:
            return self.progress.wait(fut, deadline=self.deadline_at)
        return fut.result(timeout=max(0.0, self.deadline_at - time.monotonic()))

    def _wrap(self, target: Any) -> AsyncTarget:
        """The target as the pipeline calls it: timed out, scrubbed of the run's secrets, watched."""
        return self.pipeline.wrap(target)

    def _check_target(self, target: Any, item: pytest.Item | None) -> None:
        """What the ``ragdive_target`` fixture gave, at its first use: None (a fixture that
        forgot its ``return``) or something not callable is a set-up mistake."""
        if target is None:
            self.setup_mistake(
                "ragdive setup error: the ragdive_target fixture returned None (a missing `return`?): "
                "return your chatbot from it (a callable taking the messages, or pytest_ragdive.http_target(...))",
                item,
            )
        elif not callable(target) and framework_of(target) is None:
            self.setup_mistake(
                f"ragdive setup error: the ragdive_target fixture returned a {type(target).__name__}, not callable: "
                "return your chatbot from it (a callable taking the messages, or pytest_ragdive.http_target(...))",
                item,
            )

    def _check_first_reply(self, target: Any, item: pytest.Item | None) -> None:
        """An HTTP target whose first call could not get through (refused, 401/403) or whose
        first reply does not fit the configured paths: a set-up mistake; stop the session with
        that one line (exit 4) rather than fail every item."""
        err = getattr(target, "first_reply_error", None)
        if isinstance(err, str) and err:
            self.setup_mistake(f"ragdive setup error: {err}", item)

    def setup_mistake(self, message: str, item: pytest.Item | None) -> None:
        """Stop the session on a set-up mistake found once the run started: this item is not
        run, no other item runs, and the run ends as the preflight's do (one ``ERROR:`` line,
        exit 4: the role raises the usage error once the test loop stops). Raises."""
        self.setup_error = message
        if hasattr(self.config, "workerinput"):  # an xdist worker: the controller ends the session
            pytest.skip("not run: a set-up mistake (the controller names it)")
        self.close()
        if item is None:
            raise UsageError(message)
        item.session.shouldstop = "ragdive: a set-up mistake (named below)"
        pytest.skip("not run: a set-up mistake (named below)")

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

        if conv.not_run:  # record mode none: its simulated user cannot go on without a key
            pytest.skip(conv.not_run)
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
            baseline = self.existing_baseline()
        if not completed and self.deadline_at is not None and time.monotonic() >= self.deadline_at:
            self._deadline_reached(None)  # (the xdist controller: its workers stopped at it)
        not_run = [] if completed else self._unfinished()
        facts = RunFacts(
            planned=len(self.plans()),
            completed=completed,
            fatal=list(self.fatal),
            notes=self.notes + [n for n in self.pipeline.notes if n not in self.notes],
            llm=self.merged_llm_stats(),
            backend=self.backend_name(),
            judge_models=self.judge_models(),
            golden=self._golden() if self.cfg.update_baseline else {},
            not_run=not_run,
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
            if outcome.status is GateStatus.BASELINE_WRITTEN and outcome.baseline_path is None:
                outcome.notes.append("baseline NOT written: the file could not be written")
            elif outcome.baseline_path is not None:  # the baseline was written; a report after it was not
                outcome.notes.append(f"baseline written to {outcome.baseline_path}; the reports could not be written")
            outcome.status = GateStatus.FAILED
        self.outcome = outcome
        return outcome

    def _unfinished(self) -> list[str]:
        """An interrupted run (Ctrl-C, the deadline, a stalled loop, -x): every conversation
        that finished is kept, also those whose item never ran; the keys of the planned
        ones that did not finish (listed as not run)."""
        for conv in self.pipeline.finished():
            if self.collected.get(conv.key) is None:
                self.collect(conv)
        not_run = [p.key for p in self.plans() if self.collected.get(p.key) is None]
        if not_run:
            shown = ", ".join(not_run[:5]) + (f" and {len(not_run) - 5} more" if len(not_run) > 5 else "")
            self.notes.append(
                f"{len(not_run)} of {len(self.plans())} planned conversation(s) did not finish (listed as "
                f"not_run in results.json): {shown}"
            )
        return not_run

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
                self._target = self._wrap(self.default_target())
            except TargetError:
                return None
        return self._target

    def _golden(self) -> dict[str, Any]:
        from ..sources.fingerprint import fingerprint

        return fingerprint(self.cfg, self.cfg.selected_suites())

    def existing_baseline(self) -> Baseline | None:
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


def conftest_modules(config: pytest.Config) -> list[ModuleType]:
    """The conftest.py modules pytest has loaded (at configure time: those of the rootdir,
    the paths given and their parents, as for ``pytest_addoption``): a team's metrics."""
    mods = [p for p in config.pluginmanager.get_plugins()
            if isinstance(p, ModuleType) and Path(getattr(p, "__file__", "") or "").name == "conftest.py"]
    return sorted(mods, key=lambda m: str(m.__file__))


def get_session(config: pytest.Config) -> RagdiveSession:
    """The session's state; created on first use when the plugin is dormant
    (a user test asked for ``ragdive_conversation``)."""
    sess = config.stash.get(SESSION_KEY, None)
    if sess is None:
        sess = RagdiveSession.from_pytest(config, active=False)
        config.stash[SESSION_KEY] = sess
    return sess
