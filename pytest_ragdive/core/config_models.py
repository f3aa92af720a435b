"""The parts of the ragdive config: the record mode, the LLM roles, suites,
generated conversations, the gate policy and the HTTP target. :class:`RagdiveConfig`
(:mod:`.config`) puts them together; ``[tool.ragdive.online]`` has its own model
(:mod:`pytest_ragdive.online.config`). Every model is strict: an unknown key or a bad
value is a :class:`~pytest_ragdive.core.errors.ConfigError` naming the key."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..metrics.pii import PII_KINDS, PiiKind
from ..metrics.registry import METRICS
from ..sharded.records import Condition
from .attack_config import AttackConfig

CONDITIONS: tuple[Condition, ...] = ("full", "concat", "sharded", "recap", "snowball")




# bounds that keep planning finite (runs = 1e9 would plan a billion conversations)
MAX_RUNS = 100


MAX_GENERATED_CONVERSATIONS = 10_000


MAX_GENERATED_TURNS = 100


# the tolerances gated when [tool.ragdive.gate] sets none; seed 001's regression check:
# recall@5 0.03, MRR 0.03, faithfulness 0.02 ("held strictly"), relevance 0.03, safety 0
# (zero tolerance), citation rate 0.05 (the metrics of GatePolicy.where_data only where
# the baseline has a value for them)
# (issue 31: the binary forgetfulness is reported, not gated by default: the per-conversation
# verdict saturates and flips with sampling; forgotten_turn_share gates forgetting instead;
# answer_f1 is reported, not gated by default: token F1 punishes a paraphrase, and correctness
# checks the key facts; a project whose reader is extractive can gate it by name, docs/gate.md)
DEFAULT_GATE: dict[str, float] = {
    "correctness": 0.03,
    "faithfulness": 0.02,
    "context_recall": 0.03,
    "recall_at_k": 0.03,
    "mrr": 0.03,
    "answer_relevance": 0.03,
    "citation_rate": 0.05,
    "forgotten_turn_share": 0.05,  # where the baseline holds it; an older baseline: its forgetfulness instead
    "safety_pass_rate": 0.0,
    "assertion_pass_rate": 0.0,  # the assert: checks of golden data; gated where the baseline holds it
    # adversarial users (attacks = {...} in a suite): zero tolerance, gated where the baseline holds them
    **{m: 0.0 for m in (
        "attack_success_rate", "attack_success_instructions", "attack_success_personal_data", "attack_success_policy",
        "attack_success_off_domain", "attack_success_persistence", "attack_success_injection",
    )},
}
# the metrics an LLM judge can score (metrics/judged/): the default set, and answer_relevance
# (seed 001's second judge: one more call per answered turn) by name
JudgedMetric = Literal[
    "faithfulness", "context_precision", "context_recall", "correctness", "answer_relevance", "forgetfulness",
    "context_retention",
]
DEFAULT_JUDGED: tuple[JudgedMetric, ...] = (
    "faithfulness", "context_precision", "context_recall", "correctness", "forgetfulness", "context_retention",
)
#: gated only where the baseline has a value: MRR needs relevant_doc_ids, answer_relevance
#: an LLM judge, citation_rate expected_citations
WHERE_DATA: tuple[str, ...] = ("mrr", "answer_relevance", "citation_rate")


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

    model: str | None = None  # litellm model of this role (unset: the validator takes the judge's, the judge the cascade's first, then model)
    temperature: float = Field(0.0, ge=0.0, le=2.0)  # sampling temperature of this role's calls
    seed: int | None = 0  # seed sent with this role's calls (part of the cache key)


class LLMConfig(Strict):
    api_base: str | None = None  # an OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp), e.g. http://localhost:8000/v1
    api_key_env: str | None = None  # the environment variable holding the API key (read at call time, never stored)
    structured_output: Literal["auto", "json_schema", "json_object", "prompt"] = "auto"  # how a schema is asked for: response_format json_schema, JSON mode, or the prompt only (auto picks)
    # litellm for every provider; openai_http is a lean aiohttp path for
    # OpenAI-compatible endpoints (api_base), with far less client CPU per call;
    # auto: openai_http for openai/ (and hosted_vllm/) models, litellm for the others
    transport: Literal["auto", "litellm", "openai_http"] = "auto"  # auto: openai_http for openai/, hosted_vllm/ and the OpenAI-compatible providers groq/, together_ai/, deepseek/, openrouter/, fireworks_ai/, deepinfra/, cerebras/ (their endpoint and key found as litellm finds them), litellm for the others
    # per attempt; with the circuit breaker, an endpoint that accepts connections and
    # never answers ends the run in at most about breaker_failures x timeout_s (100 s)
    timeout_s: float = Field(20.0, gt=0)  # per attempt of an LLM request
    max_retries: int = Field(4, ge=0)  # retries of a 429, 5xx, timeout or connection failure (backoff with jitter, Retry-After honoured)
    # consecutive timeouts / connection failures to one endpoint (with no reply for
    # 2 x timeout_s) that open the circuit breaker; 0 = never
    breaker_failures: int = Field(5, ge=0)  # consecutive timeouts or connection failures that open an endpoint's circuit breaker (0: never)
    # requests in flight per process (default 4 x concurrency): a conversation's judge
    # calls run beside the other conversations' turns, which `concurrency` bounds
    max_in_flight: int | None = Field(None, ge=1)  # LLM requests in flight per process (unset: 4 x concurrency)
    # judge_mode = "batch": how often a submitted batch is polled, and for how long at most
    batch_poll_s: float = Field(10.0, gt=0)  # judge_mode = "batch": how often a submitted batch is polled
    batch_max_wait_s: float = Field(3600.0, gt=0)  # judge_mode = "batch": how long a batch may take before it is cancelled and sent directly
    simulator: RoleModel = Field(default_factory=lambda: RoleModel(temperature=0.7))
    validator: RoleModel = Field(default_factory=lambda: RoleModel())
    judge: RoleModel = Field(default_factory=lambda: RoleModel())
    classifier: RoleModel = Field(default_factory=lambda: RoleModel())


class GeneratedConfig(Strict):
    """A dynamically generated (RAG-DIVE) part of a suite; needs a model."""

    conversations: int = Field(5, ge=1, le=MAX_GENERATED_CONVERSATIONS)  # generated conversations per run (one sampled document each)
    turns: int = Field(3, ge=1, le=MAX_GENERATED_TURNS)  # turns per generated conversation (slots: a dropped invalid turn still counts)
    roles: list[str] = Field(default_factory=lambda: ["default"])  # user personas, assigned round robin: default, referrer, confused, verbose, or your own roles/*.yaml
    corpus: str | None = None  # the documents to sample (default: the top-level corpus)
    seed: int = 0  # seeds the document sampling and every simulator and validator call
    max_regenerations: int = Field(2, ge=0, le=10)  # how often an invalid turn is regenerated with the validator's reason
    on_invalid: Literal["drop", "flag"] = "drop"  # a turn still invalid then: dropped, or kept and flagged invalid
    window_chars: int = Field(6000, ge=200)  # a long document is shown to the simulator as a window of at most this many characters


class SuiteConfig(Strict):
    """Which cases a suite runs."""

    single_turn: list[str] = Field(default_factory=list)  # files of single-turn cases (JSONL or YAML)
    conversations: list[str] = Field(default_factory=list)  # files of scripted conversations (JSONL or YAML)
    # conversations in the RAG-DIVE reference format (e.g. ragdive_<suite>.json
    # exported by an LLM run), replayed like scripted ones
    ragdive_logs: list[str] = Field(default_factory=list)  # conversations in the RAG-DIVE reference format, replayed like scripted ones
    max_cases: int | None = Field(None, ge=1)  # run at most this many single-turn cases (the first ones)
    max_conversations: int | None = Field(None, ge=1)  # run at most this many scripted and logged conversations (the first ones)
    max_turns: int | None = Field(None, ge=1)  # run at most this many turns of each scripted conversation
    categories: list[str] | None = None  # run only cases, conversations and sharded questions of these categories
    generated: GeneratedConfig | None = None  # a generated (RAG-DIVE) part: needs a model; skipped offline with a notice
    attacks: AttackConfig | None = None  # adversarial users and poisoned documents (docs/safety.md): the bundled attack set, your own files, canaries
    pii_detectors: list[PiiKind] = Field(
        default_factory=lambda: list(PII_KINDS),
        description="personal-data detectors run on every answer (a hit is a safety violation); [] switches them off",
    )
    pii_allow: list[str] = Field(
        default_factory=list,
        description="values that are not personal data: the company's own public contacts (support address, phone)",
    )
    # the sharded diagnosis: files of sharded questions (sources/sharded.py), each
    # question run under every condition, over at least sharded_runs runs
    sharded: list[str] = Field(default_factory=list)  # files of sharded questions (the sharded diagnosis)
    sharded_conditions: list[Condition] = Field(default_factory=lambda: list(CONDITIONS), min_length=1)  # the conditions each sharded question runs under
    sharded_runs: int = Field(5, ge=1)  # the sharded questions run at least this many runs (aptitude and unreliability need several)
    # a target that marks its answers with an "Answer:" line: an unmarked reply is discussion
    sharded_answer_line: bool = False  # the target marks its answers with an "Answer:" line: an unmarked reply is discussion
    sharded_judge: bool = False  # rescore each extracted answer with the binary correctness judge (LLM)
    sharded_simulator_temperature: float = Field(
        1.0, ge=0.0, le=2.0, description="temperature of the shard simulator (the LLM user); the source uses 1.0"
    )
    sharded_simulator_max_tokens: int | None = Field(
        200, ge=1, description="output-token cap of each shard-simulator message (the source: 200); null: no cap"
    )


GATE_POLICY_KEYS = ("method", "inconclusive", "unstable_spread", "where_data", "improvement", "improvement_delta")


class GatePolicy(Strict):
    """How the gate decides: keys of ``[tool.ragdive.gate]`` beside the
    tolerances (the rule is in pytest_ragdive/gate/paired.py)."""

    method: Literal["band", "band+paired"] = "band+paired"  # band: the baseline band alone; band+paired: the band plus the paired test per conversation
    inconclusive: Literal["fail", "pass", "rerun"] = "rerun"  # an inconclusive suite: fails, passes, or runs again (up to max_reruns) and is decided on all runs
    # baseline conversations whose p90 - p10 over the runs exceeds this are listed as unstable
    unstable_spread: float = Field(0.5, ge=0, allow_inf_nan=False)  # baseline conversations whose p90 - p10 over the runs exceeds this are listed as unstable
    where_data: list[str] = Field(
        default_factory=lambda: list(WHERE_DATA),
        description="gated metrics gated only in suites whose baseline has a value for them; any other gated "
        "metric without a value fails the gate",
    )
    improvement: Literal["band", "delta"] = Field(
        "band", description="what counts as an improvement: above the baseline band (band), or a good-side move "
        "from the baseline mean of more than improvement_delta (delta: seed 001's rule)",
    )
    improvement_delta: float = Field(
        0.01, ge=0, allow_inf_nan=False, description="the move an improvement needs with improvement = \"delta\"",
    )

    @field_validator("where_data")
    @classmethod
    def _known_metrics(cls, v: list[str]) -> list[str]:
        unknown = [m for m in v if m not in METRICS]
        if unknown:
            raise ValueError(f"unknown metric(s) {', '.join(unknown)}, expected some of {', '.join(sorted(METRICS))}")
        return v


class NLIConfig(Strict):
    """The model tier of faithfulness (``faithfulness_backend = "nli"``): a checker the
    user downloads (pytest_ragdive/metrics/nli.py); ``[tool.ragdive.nli]``."""

    kind: Literal["hhem", "minicheck"] = Field(
        "hhem", description="the checker: Vectara's HHEM-2.1-Open (hhem) or MiniCheck-Flan-T5-Large (minicheck)"
    )
    model: str | None = Field(
        None, description="a local folder, or a Hugging Face model id already downloaded (the plugin never downloads weights)"
    )
    base: str | None = Field(
        None,
        description="hhem only: the flan-t5-base folder or downloaded id whose config and tokenizer HHEM uses "
        "(default: the foundation its config.json names)",
    )
    band: tuple[float, float] = Field(
        (0.3, 0.9),
        description="the uncertain band: turns whose offline faithfulness is at least the first value and below the "
        "second (or both 1.0) are rescored by the checker; the others keep the offline figure",
    )
    chunk_words: int = Field(400, ge=20, le=10_000, description="premises are cut into chunks of at most this many words; a unit scores its best chunk")
    max_tokens: int = Field(2048, ge=64, le=32_768, description="tokens per checker input: the premise is truncated, the hypothesis kept")
    batch_size: int = Field(8, ge=1, le=1024, description="(premise, hypothesis) pairs per forward pass")
    device: str = Field("cpu", description="the torch device of the checker (cpu, cuda, cuda:1, mps)")

    @field_validator("band")
    @classmethod
    def _band(cls, v: tuple[float, float]) -> tuple[float, float]:
        lo, hi = v
        if not 0.0 <= lo < hi <= 1.0:
            raise ValueError("expected [lo, hi] with 0 <= lo < hi <= 1")
        return v


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

    url: str  # the endpoint each turn is POSTed to (http:// or https://)
    headers: dict[str, str] = Field(default_factory=dict, exclude=True)  # request headers; ${NAME} is read from the environment; never logged, hashed or reported
    request: Any = None  # the JSON body template ($messages, $history, $question); default {"messages": "$messages"}
    answer: str = "answer"  # dotted path of the answer in the JSON reply
    contexts: str | None = "contexts"  # dotted path of the contexts list in the reply (items: strings or objects)
    citations: str | None = "citations"  # dotted path of the citations list in the reply
    context_fields: dict[str, str] = Field(default_factory=dict)  # Context field (id, text, doc_id, score) -> dotted path inside each context item
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


class JudgeConfig(Strict):
    """A rubric judge (GEval-style), ``[tool.ragdive.judges.NAME]``: an LLM-judged metric
    ``NAME`` (higher is better: the criteria met), aggregated, baselined and gated like a
    built-in one. Without a model it is not scored (and not gated) unless ``offline`` names
    a function that scores it."""

    criteria: str = Field(min_length=1, description="what the judge checks, in words; its hash is the prompt version, so editing it re-judges exactly this metric")
    level: Literal["turn", "conversation"] = Field("turn", description="turn: each answered turn; conversation: the whole transcript, once")
    scale: Literal["binary", "1-5"] = Field("binary", description="binary: 1 when the criteria are met, else 0; 1-5: a grade, scaled to (grade - 1) / 4")
    dimension: Literal["retrieval", "grounding", "answer", "safety"] = Field("answer", description="the quality dimension reports file it under")
    offline: str | None = Field(None, description="'module:function' scoring it without a model (called like a @pytest_ragdive.metric function); unset: not scored offline")

    @field_validator("criteria")
    @classmethod
    def _criteria(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("criteria must say what the judge checks")
        return v

    @field_validator("offline")
    @classmethod
    def _offline(cls, v: str | None) -> str | None:
        if v is not None and (v.count(":") != 1 or not all(v.split(":"))):
            raise ValueError("expected 'package.module:function'")
        return v

    def criteria_hash(self) -> str:
        """The prompt version of this judge: a hash of what it is asked (criteria, scale, level)."""
        import hashlib

        blob = f"{self.level}\n{self.scale}\n{' '.join(self.criteria.split())}"
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]
