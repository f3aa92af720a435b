"""The role this process plays, chosen once (as pytest-cov's Central /
DistMaster / DistWorker): a plain run, the pytest-xdist controller, or an
xdist worker. Each role is a plugin object whose hooks do that role's part;
no hook asks which role it is in.

- :class:`Central` (no xdist): collects, runs every conversation (started
  together so they progress concurrently), gathers the scored
  conversations, concludes, prints the summary.
- :class:`DistController`: runs nothing; gathers the scored conversations
  the workers attach to their reports and the workers' LLM statistics and
  fatal errors, names a worker that reported no data, concludes, prints.
- :class:`DistWorker`: collects and runs its items (keeping its next item in
  flight) and hands its statistics to the controller.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..core.records import Conversation
from ..run.target import AsyncTarget
from .session import SESSION_KEY, RagdiveSession

if TYPE_CHECKING:
    from .interrupts import InterruptGuard

WORKER_KEY = "ragdive_worker"


class _Collecting:
    """Collection of the conversation items (plain runs and xdist workers)."""

    def __init__(self, sess: RagdiveSession) -> None:
        self.sess = sess
        self.dirs: dict[Path, pytest.Directory] = {}

    def pytest_collectstart(self, collector: pytest.Collector) -> None:
        if isinstance(collector, pytest.Directory):
            self.dirs[collector.path] = collector

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        """The config file itself collects the conversations when pytest walks it."""
        if file_path != self.sess.config_file:
            return None
        from .items import RagdiveModule

        module = RagdiveModule.from_parent(parent, path=file_path)
        module.setup_plans(self.sess, self.sess.plans())
        return module

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
        """When pytest did not walk the config file (other paths or testpaths were
        given), add the conversations after the collected tests."""
        from .items import RagdiveItem, build_items

        if not any(isinstance(i, RagdiveItem) for i in items):
            anchor = self.sess.config_file or (config.rootpath / "pyproject.toml")
            added = build_items(session, anchor, self.sess, self.sess.plans(), self.dirs)
            items.extend(added)
            if added:
                # reported as collected, so that the header counts them ("collected 18 items", not 1)
                from _pytest.reports import CollectReport

                node = added[0].parent
                assert node is not None
                config.hook.pytest_collectreport(report=CollectReport(node.nodeid, "passed", None, list(added)))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """No item runs without a target: one line, exit 4 (not one error per item)."""
        from ..core.errors import UsageError
        from .items import RagdiveItem
        from .preflight import check_items

        if session.config.option.collectonly:
            return
        from ..core.memory import freeze_start_up

        freeze_start_up()  # (in each process that runs conversations: plain, or an xdist worker)
        try:
            check_items(self.sess, next((i for i in session.items if isinstance(i, RagdiveItem)), None))
        except UsageError as e:
            if hasattr(session.config, "workerinput"):
                # an xdist worker: an error here (or pytest.exit later) would crash it; it runs
                # nothing (DistWorker.pytest_runtest_setup) and tells the controller, which ends
                # the session with the one line and exit 4
                self.sess.setup_error = str(e)
                return
            raise pytest.UsageError(str(e)) from None



def _attach_scores(rep: pytest.TestReport, conv: Conversation, config: pytest.Config) -> None:
    """Per-turn scores as a report section (under a failure, and for passes with -rP or
    -rA: pytest keeps every report to the end, so a section nobody shows is not added)
    and the key for -v."""
    rep.ragdive_key = conv.key  # type: ignore[attr-defined]
    chars = config.getoption("reportchars", "") or ""
    if rep.failed or "P" in chars or "A" in chars:
        from .item_report import score_lines

        rep.sections.append(("ragdive scores", "\n".join(score_lines(conv))))


class _Concluding:
    """Gathering the scored conversations, the end of the run and the summary (plain runs and the xdist controller)."""

    sess: RagdiveSession
    guard: InterruptGuard | None = None
    ends_on_setup_error = True  # (the xdist controller ends it its own way: its workers name the mistake)

    @pytest.hookimpl(trylast=True)  # after the terminal reporter wrote the item's status
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        data = getattr(report, "ragdive_conversation", None)
        if data:
            self.sess.collect(Conversation.model_validate_json(data), data)
            del report.ragdive_conversation  # the report stays in pytest's stats; its text need not
        key = getattr(report, "ragdive_key", None)
        if key is None:
            return
        config = self.sess.config
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        got = self.sess.collected.get(key)
        if reporter is not None and config.get_verbosity() >= 1 and got is not None:
            from .item_report import score_lines

            for line in score_lines(got):
                reporter.write_line("    " + line)

    def runs_conversations(self, session: pytest.Session) -> bool:
        """Whether this run will run conversations (some ragdive item is selected)."""
        from .items import RagdiveItem

        return any(isinstance(i, RagdiveItem) for i in session.items)

    def clear_previous_reports(self, session: pytest.Session) -> None:
        """A run of conversations starts with a report dir holding nothing of an earlier
        run: whatever this run writes (or, stopped early, does not) is all it holds. (A
        run that selects no conversation leaves the reports alone: it writes none.)"""
        cfg = self.sess.cfg
        if not cfg.report_dir or session.config.option.collectonly or not self.runs_conversations(session):
            return
        from ..reports.write import clear_reports

        try:
            clear_reports(cfg.path(cfg.report_dir))
        except OSError as e:
            self.sess.notes.append(f"could not remove the previous run's reports from {cfg.report_dir}: {e}")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Any:
        from .interrupts import InterruptGuard

        self.clear_previous_reports(session)

        self.guard = InterruptGuard()  # a second Ctrl-C while shutting down quits at once
        self.guard.install()
        completed = False
        try:
            result = yield
            completed = not session.shouldstop and not session.shouldfail
            return result
        except KeyboardInterrupt as e:
            from .interrupts import TERMINATED_NOTE, Terminated

            if isinstance(e, Terminated) and TERMINATED_NOTE not in self.sess.notes:
                self.sess.notes.append(TERMINATED_NOTE)
            if session.config.option.fulltrace:
                raise
            # pytest formats the whole traceback of an interrupt (it prints one line of it): from
            # deep inside the test loop that takes a second or more; from here, a few frames
            raise e.with_traceback(None) from e.__cause__
        finally:
            if not completed:
                self.sess.close()  # stop what is still in flight before deciding
            try:
                if not session.config.option.collectonly and not self.sess.setup_error:
                    # a completed run keeps the pipeline open: an inconclusive gate may rerun suites on it
                    outcome = self.sess.conclude(completed)
                    if outcome.failed:
                        session.testsfailed += 1
            finally:
                self.sess.close()
            if self.sess.setup_error and self.ends_on_setup_error:
                # a set-up mistake an item found (RagdiveSession.setup_mistake): the preflight's
                # path, one ERROR: line and exit 4
                raise pytest.UsageError(self.sess.setup_error)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.sess.close()

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.guard is not None:
            self.guard.uninstall()
        # concluded, reported and summarised: what is held goes before pytest's own
        # clean-up collects garbage (several full passes over the heap)
        self.sess.let_go()

    @pytest.hookimpl(trylast=True, specname="pytest_terminal_summary")  # the last words of the summary
    def pytest_terminal_summary_threads(self, terminalreporter: Any) -> None:
        """Reports written, session fixtures torn down: name what would keep the process alive now."""
        leaked = self.sess.threads.line()
        if leaked:
            terminalreporter.write_line(leaked, yellow=True, bold=True)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        outcome = self.sess.outcome
        if outcome is None or self.sess.config.option.collectonly:
            return
        from ..reports.terminal import terminal_lines

        lines = terminal_lines(outcome, self.sess.written)
        if lines:
            terminalreporter.write_sep("=", "ragdive")
            for line in lines:
                bad, good = line.style == "bad", line.style == "good"
                terminalreporter.write_line(line.text, red=bad, green=good, bold=bad or good)
        if outcome.failed:
            # pytest's last line ("N passed") must not read green when the gate failed: a stats
            # entry of our own adds "1 ragdive gate failed" to it and turns it from green
            key = "ragdive gate failed" if outcome.gate else f"ragdive {outcome.status.value.replace('_', ' ')}"
            terminalreporter.stats.setdefault(key, []).append(outcome.status)


class Central(_Collecting, _Concluding):
    """A plain run: every selected conversation starts when the first item runs.
    Its scored conversation is gathered as it is (the one copy this process
    holds), not through a JSON text on the report."""

    def __init__(self, sess: RagdiveSession) -> None:
        super().__init__(sess)
        self._started = False

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        rep = yield
        conv = self.sess.take_result(item) if call.when == "call" else None
        if conv is not None:
            self.sess.collect(conv)
            _attach_scores(rep, conv, item.config)
            self.sess.release(item, item.plan, rep.passed)  # type: ignore[attr-defined]
        return rep

    def schedule(self, sess: RagdiveSession, item: pytest.Item, target: AsyncTarget) -> None:
        if self._started:
            return
        from .items import RagdiveItem

        # start every selected conversation now so that they progress
        # concurrently while pytest reports them one by one
        self._started = True
        from .progress import terminal_progress

        sess.progress = terminal_progress(item.config, sess.pipeline.progress)
        for it in item.session.items:
            if isinstance(it, RagdiveItem):
                sess.pipeline.submit(it.plan, target)


class DistWorker(_Collecting):
    """An xdist worker: it knows only its next item, and keeps that one in flight too."""

    def __init__(self, sess: RagdiveSession) -> None:
        super().__init__(sess)
        self.next_item: pytest.Item | None = None
        self.ran = 0

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        self.next_item = nextitem

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if self.sess.setup_error:  # a set-up mistake found at collection: run nothing
            pytest.skip("not run: a set-up mistake (the controller names it)")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        """The scored conversation travels to the controller as JSON on the call report."""
        rep = yield
        conv = self.sess.take_result(item) if call.when == "call" else None
        if conv is not None:
            rep.ragdive_conversation = conv.model_dump_json()
            _attach_scores(rep, conv, item.config)
            self.sess.release(item, item.plan, rep.passed)  # type: ignore[attr-defined]
        return rep

    def schedule(self, sess: RagdiveSession, item: pytest.Item, target: AsyncTarget) -> None:
        from .items import RagdiveItem

        self.ran += 1
        if isinstance(self.next_item, RagdiveItem):
            sess.pipeline.submit(self.next_item.plan, target)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.sess.close()
        out = session.config.workeroutput  # type: ignore[attr-defined]
        from ..core.results import custom_metrics

        # the metrics this worker scored with: the controller aggregates with the same ones
        metrics = {n: m.model_dump(mode="json") for n, m in custom_metrics(self.sess.cfg.metrics).items()}
        out[WORKER_KEY] = json.dumps(
            {"ran": self.ran, "llm": self.sess.local_llm_stats(), "fatal": list(self.sess.fatal), "metrics": metrics,
             "setup_error": self.sess.setup_error}
        )


class DistController(_Concluding):
    """The xdist controller: runs nothing itself; merges what the workers send."""

    ends_on_setup_error = False

    def __init__(self, sess: RagdiveSession) -> None:
        self.sess = sess

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """A worker found a set-up mistake: the session ends as a plain run's would, one line and exit 4."""
        self.sess.close()
        if self.sess.setup_error:
            session.exitstatus = pytest.ExitCode.USAGE_ERROR

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.sess.setup_error:
            terminalreporter.write_line(f"ERROR: {self.sess.setup_error}", red=True, bold=True)
            return
        super().pytest_terminal_summary(terminalreporter)

    def runs_conversations(self, session: pytest.Session) -> bool:
        return bool(self.sess.plans())  # (the workers collect: the controller knows the plan only)

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        out = getattr(node, "workeroutput", None) or {}
        data = out.get(WORKER_KEY)
        if data is None:
            name = getattr(getattr(node, "gateway", None), "id", "?")
            self.sess.notes.append(
                f"xdist worker {name} reported no ragdive data (it crashed or was killed"
                + (f": {error}" if error else "")
                + "): its LLM statistics are missing and its unfinished conversations are not in the results"
            )
            return
        got = json.loads(data)
        if got.get("setup_error") and not self.sess.setup_error:
            self.sess.setup_error = str(got["setup_error"])
        if got.get("llm"):
            self.sess.worker_llm_stats.append(got["llm"])
        for msg in got.get("fatal") or []:
            if msg not in self.sess.fatal:
                self.sess.fatal.append(msg)
        if got.get("metrics"):
            self._adopt(got["metrics"], getattr(getattr(node, "gateway", None), "id", "?"))

    def _adopt(self, metrics: dict[str, Any], worker: str) -> None:
        """A worker's metrics, where this process does not declare them (a conftest.py pytest
        loaded in the workers only); one that aggregates differently here ends the run."""
        from ..core.results import CustomMetric
        from ..metrics.registry import MetricClash

        specs = [CustomMetric.model_validate(m).spec(n) for n, m in metrics.items()]
        try:
            self.sess.use_metrics(self.sess.cfg.metrics.adopted(specs))
        except MetricClash as e:
            msg = f"xdist worker {worker} and the controller disagree: {e}"
            if msg not in self.sess.fatal:
                self.sess.fatal.append(msg)


class EstimateOnly(_Collecting):
    """``--ragdive-estimate``: plan, collect, print the calls, tokens and cost the
    run would make (cold and warm, per suite), and run nothing: no model, no target."""

    def __init__(self, sess: RagdiveSession) -> None:
        super().__init__(sess)
        self.lines: list[str] = []

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        sess = self.sess
        if not sess.cfg.llm_enabled():
            self.lines = [f"offline run ({len(sess.plans())} conversations): no LLM call, nothing to pay"]
            return True
        from ..run.estimate import estimate_run

        est = estimate_run(sess.cfg, sess.plans(), sess.pipeline.documents())
        self.lines = est.lines() + [
            "estimated without calling any model or the target: answers and contexts not in an earlier "
            "results.json are assumed (sizes in pytest_ragdive.estimate.Assumptions)"
        ]
        return True

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.lines:
            terminalreporter.write_sep("=", "ragdive estimate")
            for line in self.lines:
                terminalreporter.write_line(line)


def activate(config: pytest.Config, asked: bool) -> None:
    """Create the session state and register the one role this process plays."""
    sess = RagdiveSession.from_pytest(config, active=asked)
    config.stash[SESSION_KEY] = sess
    if not sess.active:
        return
    role: Central | DistWorker | DistController
    if sess.cfg.estimate:
        if hasattr(config, "workerinput") or _distributed(config):
            raise pytest.UsageError("--ragdive-estimate runs nothing: leave out -n (pytest-xdist)")
        config.pluginmanager.register(EstimateOnly(sess), "ragdive-estimate")
        return
    if hasattr(config, "workerinput"):
        role = DistWorker(sess)
    elif config.pluginmanager.hasplugin("xdist") and _distributed(config):
        role = DistController(sess)
        _share_cores(config)
    else:
        role = Central(sess)
    if not isinstance(role, DistController):
        sess.scheduler = role
    for name in sess.cfg.suites:
        config.addinivalue_line("markers", f"ragdive_{name}: a conversation of the ragdive {name} suite")
    config.pluginmanager.register(role, "ragdive-role")


def _share_cores(config: pytest.Config) -> None:
    """With ``-n N``, the workers' numeric libraries get N-th of the cores each
    (:mod:`.worker_threads`): set before pytest-xdist starts them, taken back at the end."""
    workers = getattr(config.option, "numprocesses", None)
    if isinstance(workers, int) and workers > 0:
        from .worker_threads import WorkerThreads

        threads = WorkerThreads(workers)
        threads.apply()
        config.add_cleanup(threads.restore)


def _distributed(config: pytest.Config) -> bool:
    """pytest-xdist will run the tests in workers (-n N with N > 0, or --dist/--tx)."""
    numprocesses = getattr(config.option, "numprocesses", None)
    dist = getattr(config.option, "dist", "no")
    tx = getattr(config.option, "tx", None)
    return bool(numprocesses) or (dist not in (None, "no") and bool(tx))
