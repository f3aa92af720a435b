"""One planned conversation from start to scores: run it against the target
(scripted or generated), probe stand-alone answers, score offline, then judge
with the LLM when a model is configured. Shared by the pytest session and
:func:`pytest_ragdive.run_suite`."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.config import RagdiveConfig
from ..core.errors import FatalRunError, TargetError
from ..core.records import Conversation, Document, JudgeCalls, Turn, Verdict
from ..llm.redact import run_secrets
from ..plugin.progress import Snapshot
from ..sources.golden import load_corpus
from .planning import Plan
from .target import AsyncTarget, as_async
from .turn_loop import BackgroundLoop, OnTurn, record_error, run_conversation, run_scripted
from .watchdog import STOPPED, InFlight

if TYPE_CHECKING:
    from ..metrics.backends import JudgeAsItRuns
    from ..metrics.judged import ConversationJudge
    from ..metrics.offline import Grounding
    from ..sources.roles import Role


def _resolved(conv: Conversation) -> concurrent.futures.Future[Conversation]:
    fut: concurrent.futures.Future[Conversation] = concurrent.futures.Future()
    fut.set_result(conv)
    return fut


#: a conversation whose answers hold this many characters in all is scored in a worker thread
OFF_LOOP_CHARS = 20_000


@contextlib.contextmanager
def capped_answers(conv: Conversation, cap: int) -> Iterator[list[int]]:
    """Inside: every answer of ``conv`` longer than ``cap`` characters cut to its first ``cap``
    (the indexes of the turns cut are yielded); after: the answers whole again. Scoring cost
    grows with the answer's length (and a long answer is support for the later turns): the cap
    bounds it; answers within the cap are scored exactly as they are."""
    cut = [i for i, t in enumerate(conv.turns) if t.answer is not None and len(t.answer) > cap]
    whole = {i: conv.turns[i].answer for i in cut}
    for i in cut:
        conv.turns[i].answer = conv.turns[i].answer[:cap]  # type: ignore[index]
    try:
        yield cut
    finally:
        for i, answer in whole.items():
            conv.turns[i].answer = answer


class Pipeline:
    """Runs plans on a background event loop; holds the LLM client and corpus."""

    def __init__(self, cfg: RagdiveConfig) -> None:
        self.cfg = cfg
        self.fatal: list[str] = []
        self._loop: BackgroundLoop | None = None
        self._futures: dict[str, concurrent.futures.Future[Conversation]] = {}
        self._done: dict[str, Conversation] = {}  # plan key -> its finished conversation (until released)
        self._llm: Any = None
        self._corpora: dict[str, dict[str, Document]] = {}
        self._roles: dict[str, Role] = {}  # role name -> Role, read once (a YAML parse per conversation before)
        self._released = Snapshot()  # finished conversations let go of (release): still counted by progress
        self._grounding: Grounding | None = None
        self.secrets = run_secrets(cfg)  # scrubbed from every reply of the LLM and the target
        self.calls = InFlight()  # the target calls under way (the watchdog reads them)
        self.stalled: str | None = None  # the watchdog's message once the loop stalled: the run stops
        self._submitted: dict[str, tuple[Plan, AsyncTarget]] = {}  # plan key -> what it was started with
        self._abandoned: list[BackgroundLoop] = []  # loops a blocking target stopped (left to their thread)
        self._old_llm: list[Any] = []  # LLM clients of abandoned loops (their statistics still count)
        self.notes: list[str] = []  # notes for the report (answers scored on their first characters)

    # -- shared resources ---------------------------------------------------
    def documents(self) -> dict[str, Document]:
        """The configured corpus by id (raises GoldenError on a bad file)."""
        return self.corpus(self.cfg.corpus) if self.cfg.corpus else {}

    def corpus(self, path: str) -> dict[str, Document]:
        """A corpus file's documents by id, read once per path."""
        key = str(self.cfg.path(path))
        if key not in self._corpora:
            self._corpora[key] = {d.id: d for d in load_corpus(Path(key))}
        return self._corpora[key]

    def llm_client(self) -> Any:
        if self._llm is None:
            from ..llm import LLMClient

            self._llm = LLMClient.from_config(self.cfg, secrets=self.secrets)
        return self._llm

    def grounding(self) -> Grounding:
        """The offline grounding of ``faithfulness_backend``, built once (the NLI checker loads here)."""
        if self._grounding is None:
            from ..metrics.backends import offline_grounding

            self._grounding = offline_grounding(self.cfg)
        return self._grounding

    @property
    def llm_used(self) -> bool:
        return self._llm is not None

    def llm_stats(self) -> dict[str, Any] | None:
        clients = [c for c in (*self._old_llm, self._llm) if c is not None]
        if not clients:
            return None
        stats = clients[0].stats
        for other in clients[1:]:
            stats = stats.merge(other.stats)
        return stats.model_dump(mode="json") if hasattr(stats, "model_dump") else None

    def progress(self) -> Snapshot:
        """Conversations started and finished, turns finished, LLM calls and cost so far."""
        from ..plugin.progress import Snapshot

        futs = list(self._futures.values())
        finished = [f for f in futs if f.done()]
        ok = [f.result() for f in finished if not f.cancelled() and f.exception() is None]
        gone = self._released
        snap = Snapshot(done=len(finished) + gone.done, started=len(futs) + gone.started,
                        turns=sum(len(c.turns) for c in ok) + gone.turns)
        stats = self.llm_stats()
        if stats:
            from ..llm.stats import LLMStats

            total = LLMStats.model_validate(stats).total()
            snap.calls, snap.cost_usd = total.calls, total.cost_usd
        return snap

    # -- scheduling ---------------------------------------------------------
    def wrap(self, target: Any) -> AsyncTarget:
        """``target`` as the turn loop calls it: timed out, scrubbed of the run's secrets, watched;
        with an LLM in the run, calls that hold the GIL go one at a time (the judge's replies are
        read sooner; offline, several at once keep their sections outside the GIL in parallel)."""
        cfg = self.cfg
        return as_async(target, cfg.target_timeout_s, secrets=self.secrets, calls=self.calls,
                        gil_guard=cfg.llm_enabled())

    def submit(self, plan: Plan, target: AsyncTarget) -> concurrent.futures.Future[Conversation]:
        """Start a plan (once; later calls return the same future)."""
        fut = self._futures.get(plan.key)
        if fut is None:
            if self.stalled is not None:
                raise TargetError(self.stalled)
            self._submitted[plan.key] = (plan, target)
            if self._loop is None:
                self._loop = BackgroundLoop(
                    self.cfg.concurrency, self.cfg.target_timeout_s, on_stall=self._stall, calls=self.calls
                )
            loop = self._loop
            fut = loop.submit(lambda: self._run_kept(plan, target, loop.slot()), bounded=False)
            self._futures[plan.key] = fut
        return fut

    async def _run_kept(self, plan: Plan, target: AsyncTarget, slot: asyncio.Semaphore) -> Conversation:
        conv = await self.run_plan(plan, target, slot=slot)
        # kept at once, on the loop: a loop that blocks right after never hands it to the future
        self._done[plan.key] = conv
        return conv

    def current(self, key: str) -> concurrent.futures.Future[Conversation] | None:
        """The future a plan runs under now (a new one once it moved to a fresh loop)."""
        return self._futures.get(key)

    def _stall(self, message: str) -> None:
        """The watchdog found the loop blocked (or a call that ignores its cancellation),
        called in the watchdog's thread. A loop blocked inside one conversation's turn costs
        that conversation only (:meth:`_move_on`); otherwise every conversation still waited
        for is cancelled, so that the run ends now."""
        loop = self._loop
        stuck = loop.watchdog.stuck if loop is not None and loop.watchdog is not None else None
        if loop is not None and stuck is not None and self._move_on(loop, stuck, message):
            return
        self.stalled = message
        if message not in self.fatal:
            self.fatal.append(message)
        for fut in list(self._futures.values()):
            fut.cancel()

    def _move_on(self, loop: BackgroundLoop, stuck: Conversation, message: str) -> bool:
        """The loop is blocked inside ``stuck``'s turn: that conversation is finished as stuck
        (its turns so far, the watchdog's message as its error), the blocked loop is left to its
        thread, and every other unfinished conversation starts again on a fresh loop (its turns
        so far are asked again: a conversation is one unit). The waiting items see their future
        cancelled and wait on the new one (:meth:`current`). False (nothing done) when the
        conversation is not one this pipeline runs."""
        key = stuck.key
        if key not in self._submitted or key in self._done:
            return False
        text = message.replace(STOPPED, "").rstrip()
        conv = stuck.model_copy(update={"turns": [t for t in stuck.turns if t.answer is not None]})
        conv.error = (
            f"stuck: {text} This conversation is reported as stuck; the others went on on a fresh event loop"
        )
        self.notes.append(
            f"{stuck.suite}/{stuck.id} (run {stuck.run}) blocked the event loop and is reported as stuck; "
            "the other conversations ran to the end on a fresh event loop"
        )
        self._done[key] = conv
        self.calls.drop(stuck.suite, stuck.id, stuck.run)  # given up on: not a call the next loop's watchdog waits for
        self._abandoned.append(loop)
        self._loop = None
        if self._llm is not None:  # its connections belong to the blocked loop
            self._old_llm.append(self._llm)
            self._llm = None
        old, self._futures = self._futures, {}
        for k, fut in old.items():
            if fut.done() and not fut.cancelled():
                self._futures[k] = fut
            elif k in self._done:  # finished on the loop, not yet handed to its future: not run again
                self._futures[k] = _resolved(self._done[k])
        self._futures[key] = _resolved(conv)
        for k, fut in old.items():
            if k not in self._futures:
                plan, target = self._submitted[k]
                self.submit(plan, target)
            if not fut.done():
                fut.cancel()  # (after the new one is in place: a waiter finds it)
        return True

    def finished(self, key: str | None = None) -> list[Conversation]:
        """The conversations that finished and are still held (not released; ``key``: that
        plan's only): what an interrupted run reports beside those its items handed over."""
        if key is not None:
            conv = self._done.get(key)
            return [conv] if conv is not None else []
        return list(self._done.values())

    def release(self, key: str) -> None:
        """Let go of a finished plan's conversation (the caller holds what it needs of it);
        a plan not finished, or not known, is left alone."""
        fut = self._futures.get(key)
        if fut is None or not fut.done() or fut.cancelled() or fut.exception() is not None:
            return
        del self._futures[key]
        self._done.pop(key, None)
        self._released.done += 1
        self._released.started += 1
        self._released.turns += len(fut.result().turns)

    def close(self) -> None:
        for blocked in self._abandoned:
            blocked.close()  # (blocked: waits for nothing)
        self._abandoned.clear()
        if self._loop is not None:
            if self._llm is not None and hasattr(self._llm, "aclose") and self._loop.turning():  # a blocked loop: no wait
                try:
                    self._loop.run(self._llm.aclose(), timeout=10)
                except (Exception, KeyboardInterrupt):  # noqa: BLE001 - best effort at shutdown; a second Ctrl-C ends it
                    pass
            loop, self._loop = self._loop, None
            loop.close()

    # -- one conversation ---------------------------------------------------
    async def run_plan(self, plan: Plan, target: AsyncTarget, slot: asyncio.Semaphore | None = None) -> Conversation:
        """Run, score and judge one plan. ``slot`` (conversations in flight) is held
        for the turn loop only. With a model, each answered turn's judge calls start
        as soon as it is answered (``on_turn``), beside the conversation's later turns
        and the other conversations' turns, bounded by the LLM client's requests in
        flight (turn-loop calls go first); the conversation-level calls follow its
        turn loop, and every result is written after the offline scores."""
        from ..metrics.backends import JudgeAsItRuns

        cfg = self.cfg
        target, planted = self._poisoned(plan, target)
        judging = None
        if cfg.llm_enabled() and plan.kind != "sharded":  # sharded replies are scored by their user
            judging = JudgeAsItRuns(self._conversation_judge)
        try:
            async with slot if slot is not None else contextlib.nullcontext():
                if plan.kind == "generated":
                    conv = await self._run_generated(plan, target, on_turn=judging)
                elif plan.kind == "sharded":
                    conv = await self._run_sharded(plan, target)
                else:
                    template = plan.new_conversation()
                    assert template is not None
                    conv = await run_scripted(template, target, probe=cfg.forgetfulness_probe, on_turn=judging)
                if conv.error is None and conv.not_run is None:
                    await self._score(conv, plan, planted)
                    if judging is not None:
                        from ..metrics.offline import keep_offline_twins

                        keep_offline_twins(conv)  # the judge overwrites; the twins keep the offline values
            # a team's own metrics and assert: checks (the slot is not held: they may call a judge)
            ok = conv.error is None and conv.not_run is None and plan.kind != "sharded"
            checked = await self._checks(conv, plan) if ok else None
        except BaseException:
            if judging is not None:
                judging.cancel()
            raise
        if judging is not None:
            if conv.error is None and conv.not_run is None:
                await self._judge(conv, judging)
            else:
                await judging.discard()  # a failed conversation is not judged
        if checked is not None and (checked.turn or checked.conversation):
            conv.judge_calls = checked if conv.judge_calls is None else conv.judge_calls.merge(checked)
        self._mask_personal_data(conv, plan)
        return conv

    def _mask_personal_data(self, conv: Conversation, plan: Plan) -> None:
        """Scored, judged and checked: the personal data in its answers is masked in the record
        (:func:`~pytest_ragdive.metrics.pii.mask_conversation`), so no report holds the value."""
        from ..metrics.pii import PiiCheck, mask_conversation

        sc = self.cfg.suites.get(plan.suite)
        mask_conversation(conv, PiiCheck.of(sc.pii_detectors, sc.pii_allow) if sc else PiiCheck())

    async def _checks(self, conv: Conversation, plan: Plan) -> JudgeCalls | None:
        """Score ``conv`` with the registry's own metrics (:func:`~pytest_ragdive.metrics.checks.score_custom`)
        and run its golden rows' ``assert:`` checks; the judge calls of ``rubric`` checks are returned."""
        from ..metrics.checks import check_assertions, score_custom

        cfg = self.cfg
        await score_custom(conv, cfg.metrics, offline=not cfg.llm_enabled())
        checks = plan.assertions()
        if not checks:
            return None
        calls = JudgeCalls()
        judge = cfg.llm_enabled() and bool(cfg.role_model("judge"))

        async def rubric(criteria: str, turn: Turn) -> Verdict:
            from ..metrics.judged.cascade import judge_models
            from ..metrics.judged.rubric import rubric_check

            return await rubric_check(self.llm_client(), criteria, turn, judge_models(cfg), calls)

        try:
            await check_assertions(conv, checks, rubric if judge else None)
        except Exception as exc:  # noqa: BLE001 - an LLM error of a rubric check: recorded on the conversation
            record_error(conv, exc, "judging")
            self._note_fatal(exc)
        return calls

    def _poisoned(self, plan: Plan, target: AsyncTarget) -> tuple[AsyncTarget, bool | None]:
        """The target of an attack suite with ``attacks.poison``: handed the poisoned documents
        when it takes ``extra_documents`` (True), else left as it is (False); None where the
        suite does not poison (a fixture of the user's may have)."""
        sc = self.cfg.suites.get(plan.suite)
        if sc is None or sc.attacks is None or not sc.attacks.poison:
            return target, None
        from ..attacks.poison import poisoned_documents
        from .target import with_documents

        wrapped = with_documents(target, poisoned_documents())
        return (target, False) if wrapped is None else (wrapped, True)

    async def _score(self, conv: Conversation, plan: Plan, planted: bool | None = None) -> None:
        """The offline scores: long answers (:data:`OFF_LOOP_CHARS` in all) and the model tier
        in a worker thread (they take their time there while the other conversations go on),
        the usual few sentences at once on the loop (a conversation scored so is finished before
        any other turn runs: a target that blocks the loop next cannot hold it back). An answer
        over ``score_max_answer_chars`` is scored on its first that many characters, with a
        note. A grounding that cannot load ends the run."""
        from ..metrics.offline import score_conversation
        from ..metrics.pii import PiiCheck

        try:
            grounding = self.grounding()
        except FatalRunError as exc:  # the embedded model or the NLI checker
            record_error(conv, exc, "scoring")
            self._note_fatal(exc)
            return
        sc = self.cfg.suites.get(plan.suite)
        pii = PiiCheck.of(sc.pii_detectors, sc.pii_allow) if sc else PiiCheck()
        cap = self.cfg.score_max_answer_chars
        long = sum(len(t.answer or "") for t in conv.turns) >= OFF_LOOP_CHARS
        with capped_answers(conv, cap) as cut:
            if grounding.tier is None and not long:  # milliseconds: at once, as the turn loop ends
                score_conversation(conv, k=self.cfg.recall_k, grounding=grounding, pii=pii)
            else:
                await asyncio.to_thread(score_conversation, conv, k=self.cfg.recall_k, grounding=grounding, pii=pii)
        if cut:
            note = (
                f"{conv.suite}/{conv.id} (run {conv.run}): {len(cut)} answer(s) longer than score_max_answer_chars = "
                f"{cap:,} characters (turn(s) {', '.join(str(i + 1) for i in cut)}) scored on their first {cap:,}"
            )
            if note not in self.notes:
                self.notes.append(note)
        if any(t.attack is not None for t in conv.turns):  # the attack set, or an adversarial persona
            from ..attacks.score import score_attacks

            canaries = sc.attacks.canaries if sc is not None and sc.attacks is not None else []
            score_attacks(conv, canaries, pii, planted=planted)
            judged = await self._judge_undecided(conv)
            if judged:
                score_attacks(conv, canaries, pii, planted=planted, judged=judged)

    async def _judge_undecided(self, conv: Conversation) -> dict[int, Verdict]:
        """The LLM judge's verdicts on the attack turns no rule could decide (docs/safety.md);
        none without a judge model (offline they count as held, marked undecided)."""
        from ..attacks.score import judge_criteria, undecided

        cfg = self.cfg
        turns = undecided(conv)
        if not turns or not cfg.llm_enabled() or not cfg.role_model("judge"):
            return {}
        from ..metrics.judged.cascade import judge_models
        from ..metrics.judged.rubric import rubric_check

        calls = JudgeCalls()
        out: dict[int, Verdict] = {}
        try:
            for t in turns:
                out[t.index] = await rubric_check(self.llm_client(), judge_criteria(t), t, judge_models(cfg), calls)
        except Exception as exc:  # noqa: BLE001 - an LLM error: recorded on the conversation
            record_error(conv, exc, "judging")
            self._note_fatal(exc)
        if calls.turn or calls.conversation:
            conv.judge_calls = calls if conv.judge_calls is None else conv.judge_calls.merge(calls)
        return out

    async def _run_sharded(self, plan: Plan, target: AsyncTarget) -> Conversation:
        """One condition of one sharded question; with a model, the LLM shard simulator,
        the response classifier and (``sharded_judge``) the correctness judge take part."""
        from ..sharded.conditions import ReplyScorer, ShardedUser

        sc = self.cfg.suites[plan.suite]
        conv = plan.new_conversation()
        assert conv is not None and plan.question is not None and conv.sharded is not None
        simulator = classifier = judge = None
        if self.cfg.llm_enabled():
            from ..sharded.simulator import LLMClassifier, LLMJudge, ShardSimulator

            client = self.llm_client()
            if self.cfg.role_model("simulator"):
                simulator = ShardSimulator(client, plan.run, temperature=sc.sharded_simulator_temperature,
                                           max_tokens=sc.sharded_simulator_max_tokens)
            if self.cfg.role_model("classifier"):
                classifier = LLMClassifier(client)
            if sc.sharded_judge and self.cfg.role_model("judge"):
                judge = LLMJudge(client)
        scorer = ReplyScorer(require_answer_line=sc.sharded_answer_line, classifier=classifier, judge=judge)
        user = ShardedUser(plan.question, conv.sharded.condition, scorer, simulator=simulator)
        try:
            return await run_conversation(conv, user, target, probe=False)
        except Exception as exc:  # noqa: BLE001 - an LLM error of the simulator or classifier
            record_error(conv, exc, "sharded user")
            self._note_fatal(exc)
            return conv

    async def _run_generated(self, plan: Plan, target: AsyncTarget, on_turn: OnTurn | None = None) -> Conversation:
        from ..sources.roles import load_roles
        from .users.simulator import SimulatorUser

        sc = self.cfg.suites[plan.suite]
        assert sc.generated is not None and plan.spec is not None
        spec = plan.spec
        try:
            role = self._roles.get(spec.role)
            if role is None:
                role = load_roles([spec.role], extra_dirs=[str(Path(self.cfg.base_dir) / "roles")])[0]
                self._roles[spec.role] = role
            corpus_path = self.cfg.generated_corpus(plan.suite)
            assert corpus_path is not None
            docs = self.corpus(corpus_path)
            user = SimulatorUser(spec, docs[spec.document_id], role, self.llm_client(), sc.generated, plan.run)
            conv = user.conversation(plan.run)
        except Exception as exc:  # noqa: BLE001 - recorded on the conversation
            conv = Conversation(
                id=plan.conv_id,
                suite=plan.suite,
                run=plan.run,
                source="generated",
                role=spec.role,
                document_id=spec.document_id,
            )
            if not self._not_run(conv, exc):
                record_error(conv, exc, "generation")
                self._note_fatal(exc)
            return conv
        try:
            return await run_conversation(conv, user, target, probe=self.cfg.forgetfulness_probe, on_turn=on_turn)
        except Exception as exc:  # noqa: BLE001 - an LLM error of the simulator or validator
            conv.turns = [t for t in conv.turns if t.answer is not None]
            if not self._not_run(conv, exc):
                record_error(conv, exc, "generation")
                self._note_fatal(exc)
            return conv

    def _not_run(self, conv: Conversation, exc: BaseException) -> bool:
        """Record mode none without a key: a simulated user whose call is not cached cannot
        go on, so the conversation is not run (its item is skipped), not failed."""
        from ..core.errors import CacheMissError

        if not (isinstance(exc, CacheMissError) and self.cfg.judge_fallback()):
            return False
        conv.turns = []
        conv.not_run = (
            f"not run (no key): the simulated user's {exc.role} call is not cached "
            f"(record mode none, prompt {exc.prompt_id or '(none)'}): a generated conversation replays only "
            "while the bot answers as it did when the cache was recorded"
        )
        return True

    async def _judge(self, conv: Conversation, judging: JudgeAsItRuns) -> None:
        try:
            await judging.finish(conv)
        except Exception as exc:  # noqa: BLE001 - recorded on the conversation
            record_error(conv, exc, "judging")
            self._note_fatal(exc)

    def _conversation_judge(self, conv: Conversation) -> ConversationJudge:
        from ..metrics.backends import conversation_judge

        docs = self.documents()
        if conv.source == "generated" and (own := self.cfg.generated_corpus(conv.suite)):
            docs = {**docs, **self.corpus(own)}  # the document the simulator asked about
        return conversation_judge(conv, self.llm_client(), self.cfg, docs)

    def _note_fatal(self, exc: BaseException) -> None:
        """Budget exhaustion and replay-only cache misses end the run with one clear message."""
        if isinstance(exc, FatalRunError):
            msg = f"{type(exc).__name__}: {exc}"
            if msg not in self.fatal:
                self.fatal.append(msg)
