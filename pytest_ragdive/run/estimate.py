"""Cost before spending: the LLM calls a run would make, without making one.

:func:`estimate` goes through the planned conversations and, for each, asks
the real judge code (:func:`~pytest_ragdive.metrics.judged.judge_conversation`)
to judge it with a *probe* client: every request is built exactly as in a run
and its cache key computed, then looked up (``lookup(key)``: the cached
content or None) instead of sent. A cache hit is a warm call (free); a miss
is a call the run would send, counted with its prompt tokens (the request's
characters / ``chars_per_token``) and an assumed completion length.

What cannot be known before the target answers is assumed
(:class:`Assumptions`): a golden conversation's answers and contexts are
placeholders of the assumed size, unless ``previous`` holds the same
conversation from an earlier run (results.json), whose answers are then
used, so a deterministic target's rerun is estimated warm exactly. Generated
conversations: the simulator and validator make one call each per planned
turn, times ``1 + regeneration_rate``, all counted cold (each depends on the
target's last answer); their judge calls are probed like the rest. With a
judge cascade, ``rejudge_rate`` of the first model's cold calls go on to the
next model. The ragas backend's own calls (faithfulness 2, context recall 1,
context precision one per context) are counted cold.

Costs use ``price(model)`` (per-token USD, :class:`ModelPrice`); cold is the
cost with nothing cached, warm with the current cache; ``batch`` prices the
judge role at the provider's batch rate where the price map has one. Pure:
files and caches enter only through the arguments.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from ..core.records import Context, Conversation, Document, Turn
from ..llm.prices import ModelPrice, PriceMap

if TYPE_CHECKING:
    from ..core.config import RagdiveConfig
    from .planning import Plan

Lookup = Callable[[str], "str | None"]

_FILLER = ("the answer names the policy the user asked about and cites the section that states it "
           "with the relevant dates amounts and conditions ")


class Assumptions(BaseModel):
    """What an estimate assumes where the run would know (sizes in characters)."""

    model_config = ConfigDict(extra="forbid")

    answer_chars: int = 400
    contexts: int = 5
    context_chars: int = 600
    chars_per_token: float = 4.0
    completion_tokens: dict[str, int] = Field(
        default_factory=lambda: {"judge": 120, "simulator": 150, "validator": 60, "classifier": 20}
    )
    simulator_prompt_tokens: int = 1500
    validator_prompt_tokens: int = 1200
    regeneration_rate: float = 0.25
    rejudge_rate: float = 0.25


class RoleEstimate(BaseModel):
    """The calls of one role and model in one suite."""

    role: str
    model: str
    calls: int = 0
    warm_calls: int = 0  # of ``calls``, those the cache does not answer now
    prompt_tokens: int = 0
    completion_tokens: int = 0
    warm_prompt_tokens: int = 0
    warm_completion_tokens: int = 0
    cost_usd: float | None = None  # cold: nothing cached
    warm_cost_usd: float | None = None  # with the current cache


class SuiteEstimate(BaseModel):
    suite: str
    conversations: int = 0
    reused_answers: int = 0  # conversations whose answers came from ``previous``
    not_estimated: int = 0  # sharded conversations: their LLM calls (shard simulator, classifier) are not counted
    roles: list[RoleEstimate] = Field(default_factory=list)

    def total(self, field: str) -> float | None:
        values = [getattr(r, field) for r in self.roles]
        if any(v is None for v in values):
            return None
        return sum(values)


class CostEstimate(BaseModel):
    suites: list[SuiteEstimate] = Field(default_factory=list)
    batch: bool = False
    assumptions: Assumptions = Field(default_factory=Assumptions)

    def lines(self) -> list[str]:
        """The table ``--ragdive-estimate`` prints."""

        def usd(v: float | None) -> str:
            return "?" if v is None else f"${v:.4f}"

        out = [f"{'suite':10} {'role':10} {'model':28} {'calls':>7} {'cold tokens in/out':>19} {'cold USD':>10} "
               f"{'warm calls':>10} {'warm USD':>10}"]
        for s in self.suites:
            for r in s.roles:
                out.append(f"{s.suite:10} {r.role:10} {r.model[:28]:28} {r.calls:7d} "
                           f"{r.prompt_tokens:>11,}/{r.completion_tokens:<7,} {usd(r.cost_usd):>10} "
                           f"{r.warm_calls:10d} {usd(r.warm_cost_usd):>10}")
            calls = sum(r.calls for r in s.roles)
            warm = sum(r.warm_calls for r in s.roles)
            out.append(f"{s.suite:10} {'total':10} {s.conversations:>5} conversations{'':10} {calls:7d} {'':19} "
                       f"{usd(s.total('cost_usd')):>10} {warm:10d} {usd(s.total('warm_cost_usd')):>10}")
            if s.not_estimated:
                out.append(f"{s.suite}: {s.not_estimated} sharded conversation(s) not estimated (their shard "
                           "simulator and classifier calls)")
        if self.batch:
            out.append("judge calls priced at the batch rate where the price map has one")
        return out


# --------------------------------------------------------------------------
# the probe client


@dataclass
class _Result:
    value: Any
    raw: str
    error: str | None
    cached: bool
    model: str


@dataclass
class _Call:
    role: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool
    prompt_id: str | None = None


class _ProbeClient:
    """Duck-types the LLM client's ``complete_json``/``model_for`` for the judge code:
    builds the cache key as a run would, looks it up, never sends."""

    def __init__(self, cfg: RagdiveConfig, lookup: Lookup | None, assume: Assumptions) -> None:
        self.cfg = cfg
        self.lookup = lookup
        self.assume = assume
        self.calls: list[_Call] = []
        self._cold_first: set[str] = set()  # items whose first cascade model was not cached

    def model_for(self, role: str) -> str:
        model = self.cfg.role_model(role)
        if not model:
            raise ValueError(f"no model for the {role} role")
        return model

    async def complete_json(self, role: str, messages: list[dict[str, Any]], schema: type[BaseModel], *,
                            prompt_id: str | None = None, prompt_version: str | None = None,
                            model: str | None = None, seed: int | None = None,
                            key_tag: str | None = None) -> _Result:
        from ..llm.cache import cache_key
        from ..llm.keys import key_extra

        model = model or self.model_for(role)
        rm = getattr(self.cfg.llm, role)
        js = schema.model_json_schema()
        key = cache_key(model=model, messages=[dict(m) for m in messages], temperature=float(rm.temperature),
                        seed=seed if seed is not None else rm.seed, schema=js,
                        structured=self.cfg.llm.structured_output, prompt_id=prompt_id, prompt_version=prompt_version,
                        extra=key_extra(False, None, key_tag))
        hit = self.lookup(key) if self.lookup is not None else None
        item = cache_key(model="", messages=messages, temperature=None, seed=None, prompt_id=prompt_id)
        cascade = list(self.cfg.judge_cascade)
        if hit is None and role == "judge" and model in cascade[1:] and item in self._cold_first:
            # a placeholder verdict sent the item on: estimate() adds rejudge_rate of these instead
            return _Result(None, "", "placeholder", False, model)
        if hit is None and role == "judge" and cascade and model == cascade[0]:
            self._cold_first.add(item)
        chars = sum(len(m.get("content") or "") for m in messages) + len(json.dumps(js))
        pt = int(chars / self.assume.chars_per_token)
        ct = self.assume.completion_tokens.get(role, 100)
        self.calls.append(_Call(role, model, pt, ct, hit is not None, prompt_id))
        if hit is not None:
            try:
                return _Result(schema.model_validate_json(_unfenced(hit)), hit, None, True, model)
            except ValueError:
                pass  # a cached reply the run would repair: judged as a placeholder here
        from ..llm.structured import example_from_schema

        if js.get("title") == "CombinedJudgment":  # judge_prompts = "combined": a valid placeholder reply
            from ..metrics.judged.combined import placeholder_reply

            return _Result(schema.model_validate(placeholder_reply(js, messages)), "", None, hit is not None, model)
        return _Result(schema.model_validate(example_from_schema(js)), "", None, hit is not None, model)


def _unfenced(text: str) -> str:
    t = text.strip()
    if t.startswith("```"):
        t = t.split("\n", 1)[1] if "\n" in t else ""
        t = t.rsplit("```", 1)[0]
    return t


# --------------------------------------------------------------------------
# the estimate


def _placeholder(conv: Conversation, assume: Assumptions) -> Conversation:
    """The conversation with answers and contexts of the assumed size."""
    text = (_FILLER * (1 + assume.answer_chars // len(_FILLER)))[: assume.answer_chars]
    ctx = (_FILLER * (1 + assume.context_chars // len(_FILLER)))[: assume.context_chars]
    out = conv.model_copy(deep=True)
    for t in out.turns:
        t.answer = text
        t.contexts = [Context(id=f"ctx{i}", text=ctx) for i in range(assume.contexts)]
    return out


def _same_inputs(a: Conversation, b: Conversation) -> bool:
    return [t.rag_input for t in a.turns] == [t.rag_input for t in b.turns] and a.error is None and b.error is None


def _generated_turns(plan: Plan) -> list[Turn]:
    n = plan.spec.turns if plan.spec is not None else 1
    return [Turn(index=i, rag_input=f"generated question {i + 1} " + _FILLER[:80], ground_truth=_FILLER[:120],
                 standalone_question=_FILLER[:80]) for i in range(n)]


def estimate(
    plans: Iterable[Plan],
    cfg: RagdiveConfig,
    *,
    lookup: Lookup | None = None,
    previous: Mapping[str, Conversation] | None = None,
    documents: Mapping[str, Document] | None = None,
    price: Callable[[str], ModelPrice | None] | None = None,
    assumptions: Assumptions | None = None,
    batch: bool = False,
) -> CostEstimate:
    """Calls, tokens and USD per suite and role, cold and warm (see the module doc)."""
    from ..metrics.judged import judge_conversation

    assume = assumptions or Assumptions()
    previous = previous or {}
    documents = documents or {}
    price = price or price_map()
    by_suite: dict[str, tuple[SuiteEstimate, _ProbeClient, list[_Call]]] = {}

    async def run() -> None:
        for plan in plans:
            suite, probe, extra = by_suite.setdefault(plan.suite, (SuiteEstimate(suite=plan.suite),
                                                                  _ProbeClient(cfg, lookup, assume), []))
            suite.conversations += 1
            if plan.kind == "sharded":  # its shard simulator and classifier calls are not estimated
                suite.not_estimated += 1
                continue
            if plan.kind == "generated":
                turns = _generated_turns(plan)
                conv = _placeholder(Conversation(id=plan.conv_id, suite=plan.suite, run=plan.run, source="generated",
                                                 document_id=plan.spec.document_id if plan.spec is not None else None, turns=turns), assume)
                per = 1 + assume.regeneration_rate
                for role, pt in (("simulator", assume.simulator_prompt_tokens),
                                 ("validator", assume.validator_prompt_tokens)):
                    model = cfg.role_model(role) or "?"
                    n = round(len(turns) * per)
                    extra.extend(_Call(role, model, pt, assume.completion_tokens.get(role, 100), False)
                                 for _ in range(n))
            else:
                template = plan.new_conversation()
                assert template is not None
                before = previous.get(plan.key)
                if before is not None and _same_inputs(before, template):
                    conv = before.model_copy(deep=True)
                    suite.reused_answers += 1
                else:
                    conv = _placeholder(template, assume)
            start = len(probe.calls)
            await judge_conversation(conv, probe, cfg, documents)  # type: ignore[arg-type]
            if cfg.judge_backend == "ragas":
                _ragas_calls(conv, cfg, probe, start, extra, assume)

    asyncio.run(run())
    out = CostEstimate(batch=batch, assumptions=assume)
    for suite, probe, extra in by_suite.values():
        calls = probe.calls + extra + _cascade_calls(probe.calls, cfg, assume)
        suite.roles = _roles(calls, price, batch)
        out.suites.append(suite)
    return out


_RAGAS_PROMPTS = ("judge_faithfulness", "judge_context_precision", "judge_context_recall")


def _ragas_calls(conv: Conversation, cfg: RagdiveConfig, probe: _ProbeClient, start: int, extra: list[_Call],
                 assume: Assumptions) -> None:
    """ragas makes its own calls for three metrics: our probed ones for them give way to its counts
    (correctness and the multi-turn metrics keep our prompts)."""
    model = cfg.role_model("judge") or "?"
    probe.calls[start:] = [c for c in probe.calls[start:] if c.prompt_id not in _RAGAS_PROMPTS]
    for t in conv.turns:
        if t.answer is None:
            continue
        n = 2 + 1 + max(1, len(t.contexts))
        pt = 300 + int((len(t.answer) + sum(len(c.text) for c in t.contexts)) / assume.chars_per_token)
        extra.extend(_Call("judge", model, pt, assume.completion_tokens.get("judge", 100), False, "ragas")
                     for _ in range(n))


def _cascade_calls(calls: list[_Call], cfg: RagdiveConfig, assume: Assumptions) -> list[_Call]:
    models = list(cfg.judge_cascade)
    out: list[_Call] = []
    for first, nxt in zip(models, models[1:], strict=False):
        cold = [c for c in calls if c.role == "judge" and c.model == first and not c.cached]
        n = round(len(cold) * assume.rejudge_rate)
        out.extend(_Call("judge", nxt, c.prompt_tokens, c.completion_tokens, False, c.prompt_id) for c in cold[:n])
    return out


def _roles(calls: list[_Call], price: Callable[[str], ModelPrice | None], batch: bool) -> list[RoleEstimate]:
    groups: dict[tuple[str, str], RoleEstimate] = {}
    for c in calls:
        r = groups.setdefault((c.role, c.model), RoleEstimate(role=c.role, model=c.model))
        r.calls += 1
        r.prompt_tokens += c.prompt_tokens
        r.completion_tokens += c.completion_tokens
        if not c.cached:
            r.warm_calls += 1
            r.warm_prompt_tokens += c.prompt_tokens
            r.warm_completion_tokens += c.completion_tokens
    for r in groups.values():
        p = price(r.model)
        if p is None:
            continue
        inp, outp = p.input, p.output
        if batch and r.role == "judge" and p.batch_input is not None and p.batch_output is not None:
            inp, outp = p.batch_input, p.batch_output
        r.cost_usd = r.prompt_tokens * inp + r.completion_tokens * outp
        r.warm_cost_usd = r.warm_prompt_tokens * inp + r.warm_completion_tokens * outp
    order = {"simulator": 0, "validator": 1, "judge": 2, "classifier": 3}
    return sorted(groups.values(), key=lambda r: (order.get(r.role, 9), r.model))


def previous_results(path: Path) -> dict[str, Conversation]:
    """The conversations of an earlier results.json by key ({} when there is none or it cannot be read)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {c.key: c for c in (Conversation.model_validate(x) for x in data.get("conversations") or [])}
    except (OSError, ValueError, AttributeError):
        return {}


def estimate_run(cfg: RagdiveConfig, plans: Iterable[Plan], documents: Mapping[str, Document]) -> CostEstimate:
    """:func:`estimate` with what a run has: its cache (read only; record_mode ``all`` and
    ``off`` send every call), the report dir's results.json, litellm's price map."""
    from ..llm.cache import LLMCache

    previous = previous_results(cfg.path(cfg.report_dir) / "results.json") if cfg.report_dir else {}
    cache = LLMCache.from_config(cfg) if cfg.record_mode in ("new_episodes", "none") else None
    try:
        lookup = cache_lookup(cache) if cache is not None else None
        return estimate(plans, cfg, lookup=lookup, previous=previous, documents=documents,
                        batch=cfg.judge_mode == "batch")
    finally:
        if cache is not None:
            cache.close()


def cache_lookup(cache: Any) -> Lookup:
    """``lookup(key)`` over an :class:`~pytest_ragdive.cache.LLMCache`: a peek, no hit or miss counted."""

    def lookup(key: str) -> str | None:
        hit = cache.peek(key)
        return None if hit is None else str(hit.content)

    return lookup


# --------------------------------------------------------------------------
# prices


def price_map(table: Mapping[str, Any] | None = None) -> Callable[[str], ModelPrice | None]:
    """``price(model)`` over a price table (litellm's by default); None for an unknown model."""
    return PriceMap(table).price
