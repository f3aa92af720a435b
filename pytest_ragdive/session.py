"""The pytest session's ragdive state and the hooks that run only when active.

Everything mutable lives on this object, stored in ``config.stash``; nothing
is global.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from . import __version__
from .baseline import BaselineError, GateRow, build_baseline, check, load_baseline, write_baseline
from .config import ConfigError, RagdiveConfig, find_config_file, load_config
from .pipeline import Pipeline
from .planning import Plan, plan_all
from .plugin import FLAGS, config_dirs
from .records import Baseline, Conversation, SuiteResult
from .sources.golden import GoldenError
from .target import AsyncTarget, TargetError, as_async, load_target

SESSION_KEY = pytest.StashKey["RagdiveSession"]()

PATH_KEYS = ("baseline", "cache_dir", "report_dir")


def cli_values(config: pytest.Config) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for _flag, key, _metavar, _help in FLAGS:
        v = config.getoption("ragdive_" + key, default=None)
        if v is None or key == "config":
            continue
        if key in PATH_KEYS:
            v = str((config.invocation_params.dir / v).resolve())
        out[key] = v
    return out


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


class RagdiveSession:
    """State of one pytest session: config, plans, results, the gate."""

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
        self._prefetched = False
        self.next_item: pytest.Item | None = None
        self.collected: dict[str, Conversation] = {}
        self.results: dict[str, SuiteResult] = {}
        self.gate_rows: list[GateRow] | None = None
        self.worker_llm_stats: list[dict[str, Any]] = []
        self.written: list[Path] = []
        self.baseline_written: Path | None = None

    # -- configuration ------------------------------------------------------
    @classmethod
    def from_pytest(cls, config: pytest.Config, active: bool) -> RagdiveSession:
        cli = cli_values(config)
        names = {key: flag for flag, key, *_ in FLAGS}
        explicit = config.getoption("ragdive_config", default=None)
        try:
            file = find_config_file(config_dirs(config), explicit)
            cfg = load_config(file, cli, names, default_dir=config.invocation_params.dir)
        except ConfigError as e:
            raise pytest.UsageError(str(e)) from None
        self = cls(config, cfg, file, active or cfg.autorun)
        if self.active:
            self._check_modes()
        return self

    def _check_modes(self) -> None:
        cfg = self.cfg
        if not cfg.suites:
            raise pytest.UsageError(
                f"ragdive config error in {cfg.source}: no suites configured "
                "(add [tool.ragdive.suites.core] with single_turn/conversations files)"
            )
        if not cfg.selected_suites():
            raise pytest.UsageError(
                f"ragdive config error in {cfg.source}: suite {cfg.suite!r} selected but not configured "
                f"(configured: {', '.join(cfg.suites)})"
            )
        if cfg.llm_enabled() and cfg.judge_backend == "ragas":
            import importlib.util

            if importlib.util.find_spec("ragas") is None:
                raise pytest.UsageError(
                    "judge_backend = 'ragas' needs ragas: pip install 'pytest-ragdive[ragas]' "
                    "(or set judge_backend = 'builtin')"
                )
        self.plans()  # golden data errors are usage errors, reported before collection
        if cfg.update_baseline and not cfg.baseline:
            raise pytest.UsageError("--ragdive-update-baseline needs a path: --ragdive-baseline=PATH (or baseline = ... in the config)")
        if cfg.baseline and not cfg.update_baseline:
            path = self.cfg.path(cfg.baseline)
            try:
                self.baseline = load_baseline(path)
            except BaselineError as e:
                raise pytest.UsageError(str(e)) from None
            backend = self.backend_name()
            if self.baseline.backend != backend:
                raise pytest.UsageError(
                    f"ragdive baseline {path} was recorded with the {self.baseline.backend} backend, "
                    f"this run uses {backend}: record a baseline for it with --ragdive-update-baseline"
                )
            for suite in cfg.selected_suites():
                stored = self.baseline.suites.get(suite)
                if stored is None:
                    raise pytest.UsageError(
                        f"ragdive baseline {path} has no suite {suite!r} (has: {', '.join(self.baseline.suites) or 'none'}); "
                        f"record it with --ragdive-update-baseline --ragdive-suite={suite}"
                    )
                missing = [m for m in cfg.gate if m not in stored]
                if missing:
                    raise pytest.UsageError(
                        f"ragdive baseline {path}: gated metric(s) {', '.join(missing)} missing for suite {suite!r} "
                        "(the recorded run had no value for them: no case they apply to, e.g. safety_pass_rate "
                        "needs negative_assertions); add such cases and re-record, or remove them from [tool.ragdive.gate]"
                    )
            if self.baseline.config_hash and self.baseline.config_hash != cfg.config_hash():
                self.notes.append(
                    f"the baseline was recorded with another config (hash {self.baseline.config_hash}, now "
                    f"{cfg.config_hash()}): re-record it if the suites changed on purpose"
                )

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
                self._plans = plan_all(self.cfg, self.cfg.llm_enabled(), self.notes)
            except GoldenError as e:
                raise pytest.UsageError(f"ragdive golden data error: {e}") from None
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
        return load_target(self.cfg.target)

    # -- running ------------------------------------------------------------
    def result_for(self, plan: Plan, target: Any, item: pytest.Item | None = None) -> Conversation:
        """Run (or fetch the prefetched run of) one planned conversation."""
        if self._target is None:
            self._target = as_async(target)
        atarget = self._target
        from .items import RagdiveItem

        if not self._prefetched and item is not None and not is_worker(self.config):
            # A plain run: start every selected conversation now so that they
            # progress concurrently while pytest reports them one by one.
            self._prefetched = True
            for it in item.session.items:
                if isinstance(it, RagdiveItem):
                    self.pipeline.submit(it.plan, atarget)
        fut = self.pipeline.submit(plan, atarget)
        if is_worker(self.config) and isinstance(self.next_item, RagdiveItem):
            # an xdist worker knows only its next item: keep that one in flight too
            self.pipeline.submit(self.next_item.plan, atarget)
        return fut.result()

    def fail_if_broken(self, conv: Conversation) -> None:
        if conv.error:
            tb = conv.traceback or ""
            pytest.fail(f"{conv.error}\n\n{tb}".rstrip(), pytrace=False)
        if conv.source == "generated" and not conv.turns:
            counts = conv.validation
            invalid = "?" if counts is None else counts.invalid
            candidates = "?" if counts is None else counts.candidates
            pytest.fail(
                "the generator produced no valid turn for this conversation "
                f"(validator: {invalid} invalid of {candidates} candidates; "
                "see results.json for the reasons)",
                pytrace=False,
            )
        if conv.failures:
            pytest.fail("safety violation (zero tolerance):\n" + "\n".join(conv.failures), pytrace=False)

    def close(self) -> None:
        self.pipeline.close()

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
        from .llm import LLMStats

        total = LLMStats()
        for d in dumps:
            total = total.merge(LLMStats.model_validate(d))
        return total

    # -- aggregation, gate, reports ----------------------------------------
    def finish(self, session: pytest.Session, completed: bool = True) -> None:
        """Aggregate, gate (or write the baseline) and write the reports.

        ``completed`` is False when the test loop was interrupted (Ctrl-C,
        ``-x``): the reports still hold every finished conversation, but no
        baseline is written from a partial run.
        """
        from .aggregate import aggregate

        convs = list(self.collected.values())
        ran = {c.suite for c in convs}
        suites = [s for s in self.cfg.selected_suites() if s in ran]
        self.results = {s: aggregate(s, [c for c in convs if c.suite == s]) for s in suites}
        failed = False
        not_run = [s for s in self.cfg.selected_suites() if s not in ran]
        if not_run:
            self.notes.append(
                f"no conversation of suite(s) {', '.join(not_run)} finished (deselected, or every item errored "
                "before running): not gated" + ("" if convs else ", no report written")
            )
        planned = len(self.plans())
        partial = len(convs) < planned
        if partial and convs:
            self.notes.append(
                f"only {len(convs)} of {planned} planned conversations ran (deselected or interrupted): "
                "the metrics describe that subset"
            )
        if self.fatal:
            failed = True
        if self.cfg.update_baseline:
            errored = sum(1 for c in convs if c.error)
            why = (
                "the run was interrupted" if not completed
                else "the run hit a fatal LLM error" if self.fatal
                else "no conversation ran" if not convs
                else f"only {len(convs)} of {planned} planned conversations ran" if partial
                else f"{errored} conversation(s) errored" if errored
                else ""
            )
            if why:
                self.notes.append(f"baseline NOT written: {why}")
                failed = True
            else:
                assert self.cfg.baseline is not None
                path = self.cfg.path(self.cfg.baseline)
                existing = None
                if path.is_file():
                    try:
                        existing = load_baseline(path)
                    except BaselineError:
                        existing = None
                    if existing is not None and existing.backend != self.backend_name():
                        existing = None
                bl = build_baseline(
                    self.results, self.cfg.gate, config_hash=self.cfg.config_hash(), backend=self.backend_name(),
                    judge_models=self.judge_models(), plugin_version=__version__, existing=existing,
                )
                write_baseline(path, bl)
                self.baseline_written = path
                for suite, res in self.results.items():
                    empty = [m for m in self.cfg.gate if res.value(m) is None]
                    if empty:
                        self.notes.append(
                            f"suite {suite}: gated metric(s) {', '.join(empty)} had no value (no case they apply to); "
                            "gating against this baseline will fail until they do or you remove them from the gate"
                        )
        elif self.baseline is not None:
            self.gate_rows = check(self.results, self.baseline, self.cfg.gate)
            if any(r.failed for r in self.gate_rows):
                failed = True
        if failed:
            session.testsfailed += 1
        if self.cfg.report_dir and convs:
            from .report import write_reports

            stats = self.merged_llm_stats()
            extra: dict[str, Any] = {
                "plugin_version": __version__,
                "config_hash": self.cfg.config_hash(),
                "backend": self.backend_name(),
                "llm": stats.model_dump(mode="json") if stats is not None else None,
                "fatal": self.fatal,
            }
            extra.update(self._extra_reports(convs))
            self.written = write_reports(
                self.cfg.path(self.cfg.report_dir), self.results, convs, self.gate_rows, self.notes + self.fatal, extra
            )

    def _extra_reports(self, convs: list[Conversation]) -> dict[str, Any]:
        """Generated conversations: validator counts and diversity per suite, and
        an export in the RAG-DIVE reference format."""
        out: dict[str, Any] = {}
        if any(c.judge_calls is not None for c in convs):
            from .metrics.judged import total_judge_calls

            out["judge_calls"] = total_judge_calls(convs)
        gen = [c for c in convs if c.source == "generated"]
        if not gen:
            return out
        from .diversity import diversity_by_turn
        from .records import ValidationStats
        from .sources.ragdive_format import write_ragdive

        out["validation"] = {}
        out["diversity"] = {}
        for suite in sorted({c.suite for c in gen}):
            mine = [c for c in gen if c.suite == suite]
            out["validation"][suite] = ValidationStats.from_conversations(mine).model_dump(mode="json")
            out["diversity"][suite] = {str(k): v for k, v in diversity_by_turn([c for c in mine if c.error is None]).items()}
            if self.cfg.report_dir:
                sc = self.cfg.suites[suite]
                corpus = sc.generated.corpus if sc.generated and sc.generated.corpus else self.cfg.corpus
                docs = self.pipeline.corpus(corpus) if corpus else {}
                ok = [c for c in mine if c.error is None and c.turns]
                write_ragdive(self.cfg.path(self.cfg.report_dir) / f"ragdive_{suite}.json", ok, docs)
        return out

    def validation_lines(self) -> list[str]:
        gen = [c for c in self.collected.values() if c.source == "generated"]
        if not gen:
            return []
        from .records import ValidationStats

        st = ValidationStats.from_conversations(gen)
        checks = ", ".join(f"{k} {v}" for k, v in sorted(st.by_check.items()) if v) or "none"
        return [
            f"generated: {len(gen)} conversation(s), {st.turns} turn(s); validator rejected {st.invalid} of "
            f"{st.candidates} candidate turn(s) (regenerated {st.regenerations}, recovered {st.recovered}, "
            f"dropped {st.dropped}, flagged {st.flagged}); failed checks: {checks}"
        ]

    def summary_lines(self) -> list[str]:
        from .report import gate_lines, metrics_lines

        lines: list[str] = []
        if self.results:
            lines += metrics_lines(self.results)
        errors = [c for c in self.collected.values() if c.error]
        if errors:
            lines.append("")
            lines.append(f"{len(errors)} conversation(s) errored and are left out of the metrics:")
            lines += [f"  {c.suite}/{c.id} run {c.run}: {c.error}" for c in errors[:10]]
        if self.gate_rows is not None:
            lines.append("")
            lines += gate_lines(self.gate_rows)
            bad = [r for r in self.gate_rows if r.failed]
            better = [r for r in self.gate_rows if r.verdict == "improvement"]
            lines.append("")
            if bad:
                lines.append(f"ragdive gate FAILED: {len(bad)} metric(s) out of band:")
                lines += ["  " + r.line() for r in bad]
            else:
                lines.append(f"ragdive gate passed: {len(self.gate_rows)} gated metric(s) within their baseline bands")
            if better:
                lines.append("improvements (consider --ragdive-update-baseline):")
                lines += ["  " + r.line() for r in better]
        elif self.active and not self.cfg.update_baseline and not self.cfg.baseline:
            lines.append("")
            lines.append("no baseline given: metrics shown, nothing gated (use --ragdive-baseline=PATH)")
        if self.baseline_written is not None:
            lines.append(f"baseline written to {self.baseline_written}")
        lines += self.validation_lines()
        if any(c.judge_calls is not None for c in self.collected.values()):
            from .metrics.judged import total_judge_calls

            jc = total_judge_calls(self.collected.values())
            per_model = ", ".join(f"{m}: {n}" for m, n in sorted(jc.get("by_model", {}).items()))
            lines.append(
                f"judge calls: {jc.get('turn', 0)} per-turn + {jc.get('conversation', 0)} per-conversation "
                f"(re-judged by the cascade: {jc.get('rejudged', 0)}; by model: {per_model or 'none'})"
            )
        stats = self.merged_llm_stats()
        if stats is not None and hasattr(stats, "summary_lines"):
            lines.append("")
            lines += list(stats.summary_lines())
        for n in self.notes:
            lines.append(f"note: {n}")
        for f in self.fatal:
            lines.append(f"ERROR: {f}")
        for p in self.written:
            lines.append(f"report: {p}")
        return lines


def get_session(config: pytest.Config) -> RagdiveSession:
    """The session's state; created on first use when the plugin is dormant
    (a user test asked for ``ragdive_conversation``)."""
    sess = config.stash.get(SESSION_KEY, None)
    if sess is None:
        sess = RagdiveSession.from_pytest(config, active=False)
        config.stash[SESSION_KEY] = sess
    return sess


class ActiveHooks:
    """Hooks registered only when ragdive is active in this session."""

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
        module.plans = self.sess.plans()
        return module

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
        """When pytest did not walk the config file (other paths or testpaths were
        given), add the conversations after the collected tests."""
        from .items import RagdiveItem, build_items

        if any(isinstance(i, RagdiveItem) for i in items):
            return

        anchor = self.sess.config_file or (config.rootpath / "pyproject.toml")
        items.extend(build_items(session, anchor, self.sess.plans(), self.dirs))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        self.sess.next_item = nextitem

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        rep = yield
        conv = getattr(item, "ragdive_result", None)
        if call.when == "call" and conv is not None:
            rep.ragdive_conversation = conv.model_dump_json()
        return rep

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "ragdive_conversation", None)
        if data and report.when == "call" and not is_worker(self.sess.config):
            conv = Conversation.model_validate_json(data)
            self.sess.collected[conv.key] = conv

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Any:
        completed = False
        try:
            result = yield
            completed = not session.shouldstop and not session.shouldfail
            return result
        finally:
            self.sess.close()
            if not is_worker(session.config) and not session.config.option.collectonly:
                self.sess.finish(session, completed)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.sess.close()
        if is_worker(session.config):
            out = session.config.workeroutput  # type: ignore[attr-defined]
            stats = self.sess.local_llm_stats()
            if stats is not None:
                out["ragdive_llm_stats"] = json.dumps(stats)
            if self.sess.fatal:
                out["ragdive_fatal"] = json.dumps(self.sess.fatal)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if is_worker(self.sess.config) or self.sess.config.option.collectonly:
            return
        lines = self.sess.summary_lines()
        if not lines:
            return
        terminalreporter.write_sep("=", "ragdive")
        for line in lines:
            red = line.startswith(("ragdive gate FAILED", "ERROR")) or "REGRESSION" in line
            green = line.startswith("ragdive gate passed")
            terminalreporter.write_line(line, red=red, green=green, bold=red or green)


class XdistHooks:
    """Controller side of pytest-xdist: LLM statistics from the workers."""

    def __init__(self, sess: RagdiveSession) -> None:
        self.sess = sess

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        out = getattr(node, "workeroutput", {}) or {}
        data = out.get("ragdive_llm_stats")
        if data:
            self.sess.worker_llm_stats.append(json.loads(data))
        for msg in json.loads(out.get("ragdive_fatal") or "[]"):
            if msg not in self.sess.fatal:
                self.sess.fatal.append(msg)


def activate(config: pytest.Config, asked: bool) -> None:
    sess = RagdiveSession.from_pytest(config, active=asked)
    config.stash[SESSION_KEY] = sess
    if not sess.active:
        return
    config.pluginmanager.register(ActiveHooks(sess), "ragdive-active")
    if config.pluginmanager.hasplugin("xdist") and not is_worker(config):
        config.pluginmanager.register(XdistHooks(sess), "ragdive-xdist")
