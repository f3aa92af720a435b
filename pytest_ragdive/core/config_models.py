"""The parts of the ragdive config: the record mode, the LLM roles, suites,
generated conversations, the gate policy and the HTTP target. :class:`RagdiveConfig`
(:mod:`.config`) puts them together; ``[tool.ragdive.online]`` has its own model
(:mod:`pytest_ragdive.online.config`). Every model is strict: an unknown key or a bad
value is a :class:`~pytest_ragdive.core.errors.ConfigError` naming the key."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..sharded.records import Condition

CONDITIONS: tuple[Condition, ...] = ("full", "concat", "sharded", "recap", "snowball")




# bounds that keep planning finite (runs = 1e9 would plan a billion conversations)
MAX_RUNS = 100


MAX_GENERATED_CONVERSATIONS = 10_000


MAX_GENERATED_TURNS = 100


DEFAULT_GATE: dict[str, float] = {
    "answer_f1": 0.03,
    "correctness": 0.03,
    "faithfulness": 0.03,
    "context_recall": 0.03,
    "recall_at_k": 0.03,
    "forgetfulness": 0.05,
    "safety_pass_rate": 0.0,
}


class RecordMode(StrEnum):
    """How the LLM cache is used (as vcrpy's record modes). Callers test the
    properties, never the names."""

    NEW_EPISODES = "new_episodes"  # replay hits, call and store misses
    NONE = "none"  # replay only: a miss is an error (no key needed)
    ALL = "all"  # call everything and overwrite
    OFF = "off"  # no cache at all

    @property
    def cached(self) -> bool:
        """Whether there is a cache at all."""
        return self is not RecordMode.OFF

    @property
    def reads(self) -> bool:
        """Whether lookups may answer (new_episodes, none)."""
        return self in (RecordMode.NEW_EPISODES, RecordMode.NONE)

    @property
    def writes(self) -> bool:
        """Whether finished calls are stored (new_episodes, all)."""
        return self in (RecordMode.NEW_EPISODES, RecordMode.ALL)

    @property
    def replay_only(self) -> bool:
        """Whether a miss is an error instead of a call (none)."""
        return self is RecordMode.NONE

    @property
    def coordinates(self) -> bool:
        """Whether processes sharing the cache claim misses so that only one of
        them sends a request (reads and writes: new_episodes)."""
        return self.reads and self.writes


class Strict(BaseModel):
    # no NaN or infinity anywhere: a NaN tolerance or budget switches its check off
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


class RoleModel(Strict):
    """Model settings of one LLM role (simulator, validator, judge, classifier)."""

    model: str | None = None
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    seed: int | None = 0


class LLMConfig(Strict):
    api_base: str | None = None
    api_key_env: str | None = None
    structured_output: Literal["auto", "json_schema", "json_object", "prompt"] = "auto"
    # litellm for every provider; openai_http is a lean aiohttp path for
    # OpenAI-compatible endpoints (api_base), with far less client CPU per call;
    # auto: openai_http for openai/ (and hosted_vllm/) models, litellm for the others
    transport: Literal["auto", "litellm", "openai_http"] = "auto"
    # per attempt; with the circuit breaker, an endpoint that accepts connections and
    # never answers ends the run in at most about breaker_failures x timeout_s (100 s)
    timeout_s: float = Field(20.0, gt=0)
    max_retries: int = Field(4, ge=0)
    # consecutive timeouts / connection failures to one endpoint (with no reply for
    # 2 x timeout_s) that open the circuit breaker; 0 = never
    breaker_failures: int = Field(5, ge=0)
    # requests in flight per process (default 4 x concurrency): a conversation's judge
    # calls run beside the other conversations' turns, which `concurrency` bounds
    max_in_flight: int | None = Field(None, ge=1)
    # judge_mode = "batch": how often a submitted batch is polled, and for how long at most
    batch_poll_s: float = Field(10.0, gt=0)
    batch_max_wait_s: float = Field(3600.0, gt=0)
    simulator: RoleModel = Field(default_factory=lambda: RoleModel(temperature=0.7))
    validator: RoleModel = Field(default_factory=lambda: RoleModel())
    judge: RoleModel = Field(default_factory=lambda: RoleModel())
    classifier: RoleModel = Field(default_factory=lambda: RoleModel())


class GeneratedConfig(Strict):
    """A dynamically generated (RAG-DIVE) part of a suite; needs a model."""

    conversations: int = Field(5, ge=1, le=MAX_GENERATED_CONVERSATIONS)
    turns: int = Field(3, ge=1, le=MAX_GENERATED_TURNS)
    roles: list[str] = Field(default_factory=lambda: ["default"])
    corpus: str | None = None
    seed: int = 0
    max_regenerations: int = Field(2, ge=0, le=10)
    on_invalid: Literal["drop", "flag"] = "drop"
    window_chars: int = Field(6000, ge=200)


class SuiteConfig(Strict):
    """Which cases a suite runs."""

    single_turn: list[str] = Field(default_factory=list)
    conversations: list[str] = Field(default_factory=list)
    # conversations in the RAG-DIVE reference format (e.g. ragdive_<suite>.json
    # exported by an LLM run), replayed like scripted ones
    ragdive_logs: list[str] = Field(default_factory=list)
    max_cases: int | None = Field(None, ge=1)
    max_conversations: int | None = Field(None, ge=1)
    max_turns: int | None = Field(None, ge=1)
    categories: list[str] | None = None
    generated: GeneratedConfig | None = None
    # the sharded diagnosis: files of sharded questions (sources/sharded.py), each
    # question run under every condition, over at least sharded_runs runs
    sharded: list[str] = Field(default_factory=list)
    sharded_conditions: list[Condition] = Field(default_factory=lambda: list(CONDITIONS), min_length=1)
    sharded_runs: int = Field(5, ge=1)
    # a target that marks its answers with an "Answer:" line: an unmarked reply is discussion
    sharded_answer_line: bool = False
    sharded_judge: bool = False  # rescore each extracted answer with the binary correctness judge (LLM)


GATE_POLICY_KEYS = ("method", "inconclusive", "unstable_spread")


class GatePolicy(Strict):
    """How the gate decides: keys of ``[tool.ragdive.gate]`` beside the
    tolerances (the rule is in pytest_ragdive/gate/paired.py)."""

    method: Literal["band", "band+paired"] = "band+paired"
    inconclusive: Literal["fail", "pass", "rerun"] = "rerun"
    # baseline conversations whose p90 - p10 over the runs exceeds this are listed as unstable
    unstable_spread: float = Field(0.5, ge=0, allow_inf_nan=False)


class HttpTargetConfig(Strict):
    """A chatbot behind HTTP (``target = { url = "http://...", ... }``).

    Each turn POSTs ``request`` (a JSON template; default
    ``{"messages": "$messages"}``) where a string that is exactly ``$messages``
    (the OpenAI-style history, new user message last), ``$history`` (the
    messages before it) or ``$question`` (the new user message's text) is
    replaced by that value. The JSON reply is mapped to the response by
    dotted paths (``choices.0.message.content``); ``context_fields`` maps the
    Context fields (id, text, doc_id, score) to paths inside each context
    item (a context may also be a plain string: its text). Header values may
    name environment variables as ``${NAME}``; headers are never logged,
    hashed or reported."""

    url: str
    headers: dict[str, str] = Field(default_factory=dict, exclude=True)
    request: Any = None
    answer: str = "answer"
    contexts: str | None = "contexts"
    citations: str | None = "citations"
    context_fields: dict[str, str] = Field(default_factory=dict)
    retries: int = Field(2, ge=0, le=10)  # on 429, 5xx and refused/reset connections
    timeout_s: float | None = Field(None, gt=0)  # one HTTP request; default target_timeout_s
    follow_redirects: Literal["none", "same-origin"] = "none"  # same-origin: follow 307/308 to the same scheme+host+port

    @field_validator("url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError("expected an http:// or https:// URL")
        return v

    @field_validator("context_fields")
    @classmethod
    def _context_fields(cls, v: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(v) - {"id", "text", "doc_id", "score"})
        if unknown:
            raise ValueError(f"unknown Context field(s) {', '.join(unknown)}, expected id, text, doc_id, score")
        return v
