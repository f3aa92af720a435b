"""Which conversations a session runs: one plan per conversation per suite per run."""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..core.config import RagdiveConfig
from ..core.memory import paused_gc
from ..core.records import Conversation, GeneratedSpec
from ..metrics.assertions import Assertion
from ..sharded.questions import ShardedQuestion, load_sharded
from ..sources import golden
from ..sources.references import check_references


class Plan(BaseModel):
    """One planned conversation. ``script`` is what its conversation is built from:
    the golden row (shared by every run of it: a plan holds no conversation of its
    own until it runs), a RAG-DIVE log's conversation, or a sharded question's
    conversation under one condition; ``spec`` is a generated conversation's plan
    (RAG-DIVE CG)."""

    model_config = ConfigDict(extra="forbid")

    suite: str
    run: int
    conv_id: str
    kind: Literal["golden_single", "golden", "generated", "sharded"]
    script: golden.SingleTurnCase | golden.ScriptedConversation | Conversation | None = None
    max_turns: int | None = None  # a scripted row's turns beyond this are not run
    spec: GeneratedSpec | None = None
    question: ShardedQuestion | None = None  # sharded: the question; the script carries the condition

    def new_conversation(self) -> Conversation | None:
        """The conversation to run, not yet run: a fresh one on every call (None for a
        generated plan, whose conversation its simulator builds, and once released)."""
        s = self.script
        if isinstance(s, golden.SingleTurnCase):
            return golden.single_turn_conversation(s, self.suite, self.run)
        if isinstance(s, golden.ScriptedConversation):
            return golden.scripted_conversation(s, self.suite, self.run, self.max_turns)
        if isinstance(s, Conversation):
            return s.model_copy(update={"run": self.run}, deep=True)
        return None

    def document_ids(self) -> list[str]:
        """The corpus ids a golden plan's row names (its document, then its turns' relevant
        documents, as run: ``max_turns`` applies), read from the row without building the
        conversation; none for other plans."""
        s = self.script
        if isinstance(s, golden.SingleTurnCase):
            return list(s.relevant_doc_ids)
        if isinstance(s, golden.ScriptedConversation):
            turns = s.turns[: self.max_turns] if self.max_turns else s.turns
            return ([s.document_id] if s.document_id else []) + [d for t in turns for d in t.relevant_doc_ids]
        return []

    def assertions(self) -> dict[int, list[Assertion]]:
        """The ``assert:`` checks of a golden plan's row by turn index (as run: ``max_turns`` applies)."""
        s = self.script
        if isinstance(s, golden.SingleTurnCase):
            return {0: list(s.assertions)} if s.assertions else {}
        if isinstance(s, golden.ScriptedConversation):
            turns = s.turns[: self.max_turns] if self.max_turns else s.turns
            return {i: list(t.assertions) for i, t in enumerate(turns) if t.assertions}
        return {}

    @property
    def key(self) -> str:
        return f"{self.suite}::{self.conv_id}::run{self.run}"

    @property
    def item_name(self) -> str:
        """The item's name under its suite node: ``pyproject.toml::core::<id>[run2]``."""
        return self.conv_id + (f"[run{self.run}]" if self.run else "")

    @property
    def param_id(self) -> str:
        """The id of a user test parametrized with ``ragdive_conversation``."""
        return f"{self.suite}.{self.conv_id}" + (f".run{self.run}" if self.run else "")


def _refuse_code(cfg: RagdiveConfig, suite: str, singles: list[golden.SingleTurnCase],
                 scripted: list[golden.ScriptedConversation]) -> None:
    """A usage error naming ``allow_python_assertions`` when a golden row of ``suite`` holds a
    ``python:`` check (it imports and runs code) and the config does not allow them."""
    if cfg.allow_python_assertions:
        return
    rows: list[tuple[str, list[Assertion]]] = [(c.question_id, list(c.assertions)) for c in singles]
    rows += [(s.id, [a for t in s.turns for a in t.assertions]) for s in scripted]
    for rid, checks in rows:
        found = next((a for a in checks if a.type == "python"), None)
        if found is not None:
            raise golden.GoldenError(
                f"ragdive suite {suite!r}: golden case {rid!r} has a python check ({getattr(found, 'value', '')!r}), "
                "which imports and runs code: allow it with allow_python_assertions = true under [tool.ragdive]"
            )


def plan_suite(cfg: RagdiveConfig, suite: str, runs: int, llm_enabled: bool, notes: list[str]) -> list[Plan]:
    sc = cfg.suites[suite]
    singles = [c for p in sc.single_turn for c in golden.load_single_turn(cfg.path(p))]
    scripted = [c for p in sc.conversations for c in golden.load_conversations(cfg.path(p))]
    if sc.categories is not None:
        singles = [c for c in singles if c.category in sc.categories]
        scripted = [c for c in scripted if c.category in sc.categories]
    if sc.max_cases is not None:
        singles = singles[: sc.max_cases]
    if sc.max_conversations is not None:
        scripted = scripted[: sc.max_conversations]
    logged = [c for p in sc.ragdive_logs for c in _load_logs(cfg, p, suite)]
    if sc.max_conversations is not None:
        logged = logged[: max(0, sc.max_conversations - len(scripted))]
    attacks = _load_attacks(cfg, suite, notes) if sc.attacks is not None else []
    sharded = [q for p in sc.sharded for q in load_sharded(cfg.path(p), notes=notes)]
    if sc.categories is not None:
        sharded = [q for q in sharded if q.category in sc.categories]
    ids = [c.question_id for c in singles] + [c.id for c in scripted] + [c.id for c in logged] + [c.id for c in attacks]
    ids += [f"{q.id}.{cond}" for q in sharded for cond in sc.sharded_conditions]
    dup = sorted(i for i, n in Counter(ids).items() if n > 1)
    if dup:
        raise golden.GoldenError(f"suite {suite!r}: ids used twice across its files: {', '.join(dup[:5])}")
    gen_specs: list[GeneratedSpec] = []
    if sc.generated is not None:
        if not llm_enabled or not cfg.role_model("simulator"):
            notes.append(
                f"suite {suite}: generated conversations skipped (no model configured; set --ragdive-model "
                "or [tool.ragdive] model to run the RAG-DIVE generator)"
            )
        else:
            gen_specs = _plan_generated(cfg, suite)
    if not llm_enabled or not cfg.role_model("judge"):
        rubrics = sum(1 for a in [*(a for c in singles for a in c.assertions),
                                  *(a for s in scripted for t in s.turns for a in t.assertions)] if a.judged)
        if rubrics:
            notes.append(f"suite {suite}: {rubrics} rubric check(s) of assert: lists skipped: no judge model "
                         "(they run, cached, with --ragdive-model; offline they are left out, never failed)")
    offline_judges = [n for n, j in cfg.judges.items() if j.offline is None]
    if (not llm_enabled or not cfg.role_model("judge")) and offline_judges:
        note = (f"rubric judge(s) {', '.join(offline_judges)}: not scored and not gated without a judge model "
                "(run with --ragdive-model, or name an offline twin: offline = 'module:function')")
        if note not in notes:
            notes.append(note)
    _refuse_code(cfg, suite, singles, scripted)
    plans = []
    for run in range(runs):
        for c in singles:
            plans.append(Plan(suite=suite, run=run, conv_id=c.question_id, kind="golden_single", script=c))
        for s in scripted:
            plans.append(Plan(suite=suite, run=run, conv_id=s.id, kind="golden", script=s, max_turns=sc.max_turns))
        for conv in logged:
            plans.append(Plan(suite=suite, run=run, conv_id=conv.id, kind="golden", script=conv))
        for conv in attacks:
            plans.append(Plan(suite=suite, run=run, conv_id=conv.id, kind="golden", script=conv))
        for spec in gen_specs:
            plans.append(Plan(suite=suite, run=run, conv_id=spec.id, kind="generated", spec=spec))
    plans += _plan_sharded(sharded, sc.sharded_conditions, suite, max(runs, sc.sharded_runs))
    return plans


def _plan_sharded(questions: list[ShardedQuestion], conditions: list[Any], suite: str, runs: int) -> list[Plan]:
    """Every question under every condition in every run (the sharded part runs at least
    ``sharded_runs`` times: aptitude and unreliability need repeated runs)."""
    from ..sharded.conditions import sharded_conversation

    return [
        Plan(suite=suite, run=run, conv_id=f"{q.id}.{cond}", kind="sharded", question=q,
             script=sharded_conversation(q, cond, suite, run))
        for run in range(runs)
        for q in questions
        for cond in conditions
    ]


def _load_attacks(cfg: RagdiveConfig, suite: str, notes: list[str]) -> list[Conversation]:
    """The suite's attack conversations (the bundled set's families and its own files)."""
    from ..attacks.library import suite_attacks

    ac = cfg.suites[suite].attacks
    assert ac is not None
    convs = suite_attacks(ac, suite, cfg.path("."))
    families = {c.category for c in convs}
    if "instructions" in families and not ac.canaries:
        notes.append(f"suite {suite}: attacks: no canary configured (attacks.canaries): an instruction-extraction "
                     "attack is caught only by its markers; plant a canary in the bot's system prompt")
    if any(t.attack is not None and t.attack.poisoned for c in convs for t in c.turns) and not ac.poison:
        notes.append(f"suite {suite}: attacks: injection turns are scored only where the poisoned documents are "
                     "retrieved (attacks.poison = true hands them to a target with extra_documents; or plant them "
                     "in your index copy: pytest_ragdive.attacks.poison)")
    return convs


def _load_logs(cfg: RagdiveConfig, path: str, suite: str) -> list[Conversation]:
    """RAG-DIVE reference-format conversations as scripts: the questions and
    ground truths are kept; the recorded answers and scores are dropped, since
    the target answers again."""
    from ..sources.ragdive_format import RagdiveFormatError, import_ragdive, read_ragdive

    try:
        convs = import_ragdive(read_ragdive(cfg.path(path)))
    except (RagdiveFormatError, OSError) as e:
        raise golden.GoldenError(f"{path}: {e}") from None
    out = []
    counts = Counter(c.id for c in convs)
    for c in convs:
        if counts[c.id] > 1:  # an export of several runs: one script per run
            c = c.model_copy(update={"id": f"{c.id}-run{c.run}"})
        turns = [
            t.model_copy(update={"answer": None, "contexts": [], "citations": [], "scores": {}, "verdicts": {}, "flags": []})
            for t in c.turns
        ]
        out.append(c.model_copy(update={"suite": suite, "run": 0, "source": "ragdive_log", "turns": turns,
                                        "scores": {}, "verdicts": {}, "meta": {}}))
    return out


def _plan_generated(cfg: RagdiveConfig, suite: str) -> list[GeneratedSpec]:
    from ..sources.generator import plan_generated

    sc = cfg.suites[suite]
    assert sc.generated is not None
    corpus_path = cfg.generated_corpus(suite)
    if not corpus_path:
        raise golden.GoldenError(f"suite {suite!r}: generated conversations need a corpus (corpus = ... in the config)")
    from ..sources.roles import RoleError, load_roles

    try:
        load_roles(sc.generated.roles, extra_dirs=[cfg.path("roles")])
    except RoleError as e:
        raise golden.GoldenError(f"suite {suite!r}: {e}") from None
    corpus = golden.load_corpus(cfg.path(corpus_path))
    return plan_generated(sc.generated, corpus, suite)


def plan_all(cfg: RagdiveConfig, llm_enabled: bool, notes: list[str]) -> list[Plan]:
    plans: list[Plan] = []
    with paused_gc():  # only live objects are built here (see paused_gc)
        for suite in cfg.selected_suites():
            plans += plan_suite(cfg, suite, cfg.runs, llm_enabled, notes)
    check_references(cfg, plans)  # corpus file and document ids (exit 4 naming the files)
    return plans


# -- splitting a run across machines (--ragdive-shard=I/N) ------------------


def expected_turns(plan: Plan) -> int:
    """The turns a plan will send to the target (a generated one: its turn budget; a
    sharded question: one per shard, or one for FULL/CONCAT), plus the stand-alone
    probe's extra call for each context-dependent scripted turn."""
    if plan.question is not None:
        condition = plan.conv_id.rsplit(".", 1)[-1]
        shards = len(plan.question.shards)
        return {"full": 1, "concat": 1, "recap": shards + 1}.get(condition, shards)
    conv = plan.new_conversation()
    if conv is not None:
        turns = conv.turns
        return len(turns) + sum(1 for t in turns[1:] if t.standalone_question and t.standalone_question != t.rag_input)
    return plan.spec.turns if plan.spec is not None else 1


def shard_plans(plans: list[Plan], index: int, count: int) -> list[Plan]:
    """The plans of shard ``index`` (1-based) of ``count``.

    Deterministic and machine-independent: it depends only on the plan list
    (the config and golden data), never on hashing seeds, time or order of
    arrival. Balanced by expected turns: longest first, each to the shard with
    the fewest turns so far (ties to the lowest shard, plans ordered by key).
    The shards partition the plans; the original order is kept within a shard.
    """
    if not 1 <= index <= count:
        raise ValueError(f"shard {index}/{count}: expected 1 <= I <= N")
    loads = [0] * count
    owner: dict[str, int] = {}
    for plan in sorted(plans, key=lambda p: (-expected_turns(p), p.key)):
        best = min(range(count), key=lambda s: (loads[s], s))
        owner[plan.key] = best
        loads[best] += expected_turns(plan)
    return [p for p in plans if owner[p.key] == index - 1]
