"""``judge_prompts = "combined"``: one judge request per answered turn.

Faithfulness (claims and verdicts), context precision, context recall and
correctness come back in one structured reply (prompt ``judge_combined``) that
shares the question, contexts, ground truth and answer once. The reply is read
part by part: each part is validated against its own metric's schema and scored
by its own rule (:data:`.scoring.SPECS`), exactly as that metric's own prompt's
reply would be; a part that is missing, does not validate or cannot be scored
(e.g. three context verdicts for four contexts) is asked again *alone* with its
metric's own prompt (``judge_<metric>``), whose outcome then stands: a part is
never scored silently. A reply that is no JSON object at all, after the client's
one repair call, sends every part to its own prompt.

Only the parts a turn needs are asked for (the JSON schema and the ``Tasks``
line name them): a turn without contexts or ground truth, a ``judge_band`` that
keeps the offline faithfulness, ``judged_metrics`` or a backend (ragas) that
judges some metric leave fewer; one part left goes to its own prompt directly.
With ``judge_cascade``, each model asks the combined prompt once per turn (the
metrics it re-judges share that one request).

Every single-turn judge call of this mode carries the mode in its cache key
(``key_tag``): the two modes never answer each other's calls from the cache.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from ...core.errors import InvalidJudgment, one_line
from ...core.records import JudgeCalls
from ...llm.prompts import FENCE_NOTE, load_prompt
from ...llm.structured import example_from_schema
from .cascade import ROLE, JudgeFn, Outcome, default_model
from .scoring import SPECS, TURN_METRICS

if TYPE_CHECKING:
    from ...llm import LLMClient, LLMResult

__all__ = ["COMBINED_PROMPT", "KEY_TAG", "CombinedTurn", "placeholder_reply", "reply_schema"]

COMBINED_PROMPT = "judge_combined"
#: the cache-key tag of every single-turn judge call in combined mode
KEY_TAG = "judge_prompts=combined"


class _Reply(BaseModel):
    """What is read of a combined reply: any JSON object (each part is checked on its
    own); its JSON schema, the one sent to the model, is the strict one of the parts."""

    model_config = ConfigDict(extra="allow")
    strict_schema: ClassVar[dict[str, Any]] = {}

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return cls.strict_schema


@cache  # not a session memo (core/memo.py): one class per set of SPECS names (constants, a few), built once per process
def reply_schema(parts: tuple[str, ...]) -> type[BaseModel]:
    """The reply model of a combined call asking for ``parts`` (one class per set, so that
    the client builds its schema once)."""
    fields: dict[str, Any] = {p: (SPECS[p].schema, ...) for p in parts}
    strict = create_model("CombinedJudgment", **fields)
    model = create_model("CombinedJudgment", __base__=_Reply)
    model.strict_schema = strict.model_json_schema()
    return model


_CONTEXT_MARK = re.compile(r"<<<BEGIN CONTEXT \d+ ")


def placeholder_reply(json_schema: Mapping[str, Any], messages: Sequence[Mapping[str, Any]],
                      *, fill: bool = False) -> dict[str, Any]:
    """A valid combined reply for a fake server or the cost estimate: the schema's minimal
    instance, with one context verdict per context the prompt shows."""
    reply = example_from_schema(dict(json_schema), fill=fill) or {}
    if "context_precision" in reply:
        text = "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")
        n = len(_CONTEXT_MARK.findall(text))
        reply["context_precision"] = {
            "verdicts": [{"context": i, "relevant": True, "reason": "fake"} for i in range(1, n + 1)]
        }
    return reply


class CombinedTurn:
    """The combined judge of one turn: :meth:`judge` gives each part's :data:`JudgeFn`;
    the first one called for a model sends that model's one request, the others share it.
    ``fallbacks`` are the parts' own-prompt judges (for a part that is not usable)."""

    def __init__(
        self,
        client: LLMClient,
        values: Mapping[str, Any],
        parts: Sequence[str],
        n_contexts: int,
        calls: JudgeCalls,
        fallbacks: Mapping[str, JudgeFn],
    ) -> None:
        self.client = client
        self.parts = tuple(p for p in TURN_METRICS if p in parts)
        self.n_contexts = n_contexts
        self.calls = calls
        self.fallbacks = dict(fallbacks)
        self.prompt = load_prompt(COMBINED_PROMPT)
        self.messages = self.prompt.render(fence_note=FENCE_NOTE, tasks=", ".join(self.parts), **values)
        self._replies: dict[str | None, asyncio.Future[tuple[LLMResult[Any], str | None]]] = {}

    def judge(self, metric: str) -> JudgeFn:
        async def judge(model: str | None) -> Outcome:
            fut = self._replies.get(model)
            if fut is None:
                fut = self._replies[model] = asyncio.ensure_future(self._ask(model))
            res, used = await fut
            outcome = self._part(res, metric, used)
            if outcome.invalid:
                return await self.fallbacks[metric](model)  # asked again alone, with its own prompt
            return outcome

        return judge

    async def _ask(self, model: str | None) -> tuple[LLMResult[Any], str | None]:
        requested = model or default_model(self.client)
        res = await self.client.complete_json(
            ROLE, self.messages, reply_schema(self.parts), prompt_id=self.prompt.id,
            prompt_version=self.prompt.version, model=model, key_tag=KEY_TAG,
        )
        used = requested or res.model
        self.calls.add("turn", used, res.cached)
        return res, used

    def _part(self, res: LLMResult[Any], metric: str, used: str | None) -> Outcome:
        if res.value is None:
            return Outcome(None, f"invalid combined judge output: {res.error or 'unparseable output'}", used, True)
        raw = (res.value.model_extra or {}).get(metric)
        if raw is None:
            return Outcome(None, f"invalid combined judge output: no {metric} part", used, True)
        spec = SPECS[metric]
        try:
            score, reason = spec.score(spec.schema.model_validate(raw), self.n_contexts)
        except ValidationError as e:
            return Outcome(None, f"invalid combined judge output: {metric}: {one_line(e, limit=3, inputs=False)}", used, True)
        except InvalidJudgment as e:
            return Outcome(None, f"invalid combined judge output: {metric}: {e}", used, True)
        return Outcome(score, reason, used)
