"""RagdiveConfig: ``[tool.ragdive]`` in pyproject.toml, or ragdive.yaml, or the CLI.

Every ``--ragdive-X`` option has a twin key ``X`` (dashes as underscores) in
the file. The command line wins over the file. Validation is strict: an
unknown key or a bad value raises :class:`ConfigError` whose one-line message
names the file, the key and what was expected; the plugin turns it into a
pytest usage error (exit code 4).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import tomllib
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import ConfigError, one_line
from .metrics.registry import METRICS
from .records import Condition

CONDITIONS: tuple[Condition, ...] = ("full", "concat", "sharded", "recap", "snowball")

SUITE_NAMES = ("core", "extended")  # the conventional suites; any other name is accepted too
SUITE_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
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


class _Strict(BaseModel):
    # no NaN or infinity anywhere: a NaN tolerance or budget switches its check off
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


class RoleModel(_Strict):
    """Model settings of one LLM role (simulator, validator, judge, classifier)."""

    model: str | None = None
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    seed: int | None = 0


class LLMConfig(_Strict):
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


class GeneratedConfig(_Strict):
    """A dynamically generated (RAG-DIVE) part of a suite; needs a model."""

    conversations: int = Field(5, ge=1, le=MAX_GENERATED_CONVERSATIONS)
    turns: int = Field(3, ge=1, le=MAX_GENERATED_TURNS)
    roles: list[str] = Field(default_factory=lambda: ["default"])
    corpus: str | None = None
    seed: int = 0
    max_regenerations: int = Field(2, ge=0, le=10)
    on_invalid: Literal["drop", "flag"] = "drop"
    window_chars: int = Field(6000, ge=200)


class SuiteConfig(_Strict):
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


_PROM_DURATION_RE = re.compile(r"^(?:\d+y)?(?:\d+w)?(?:\d+d)?(?:\d+h)?(?:\d+m)?(?:\d+s)?(?:\d+ms)?$")


class OnlineConfig(_Strict):
    """``[tool.ragdive.online]``: production monitoring (``pytest_ragdive.online``).

    Thresholds and durations of the four alert rules (durations are Prometheus
    durations such as ``30s``, ``5m``, ``1h``, ``1d``), the monitor's sliding
    window and histogram buckets, and how ``logs-to-suite`` picks conversations.
    """

    evaluation_interval: str = "30s"
    labels: dict[str, str] = Field(default_factory=lambda: {"team": "chatbot"})
    empty_retrieval_rate: float = Field(0.10, ge=0, le=1)
    empty_retrieval_window: str = "10m"
    empty_retrieval_for: str = "5m"
    citation_rate_min: float = Field(0.70, ge=0, le=1)
    citation_for: str = "10m"
    citation_window: int = Field(100, ge=1)
    citation_min_responses: int = Field(20, ge=1)
    latency_p95_s: float = Field(5.0, gt=0)
    latency_window: str = "5m"
    latency_for: str = "3m"
    latency_buckets: list[float] = Field(default_factory=lambda: [0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0])
    feedback_ratio: float = Field(2.0, gt=0)
    feedback_window: str = "1h"
    feedback_offset: str = "1d"
    feedback_for: str = "15m"
    feedback_min_events: int = Field(5, ge=0)
    feedback_categories: list[str] = Field(
        default_factory=lambda: ["wrong_answer", "no_answer", "outdated", "unhelpful", "unsafe", "other"]
    )
    low_grounding: float = Field(0.5, ge=0, le=1)
    sample: int = Field(5, ge=0)
    seed: int = 0

    @field_validator(
        "evaluation_interval", "empty_retrieval_window", "empty_retrieval_for", "citation_for",
        "latency_window", "latency_for", "feedback_window", "feedback_offset", "feedback_for",
    )
    @classmethod
    def _duration(cls, v: str) -> str:
        if not v or not _PROM_DURATION_RE.match(v):
            raise ValueError("expected a Prometheus duration such as '30s', '5m', '1h' or '1d'")
        return v

    @field_validator("latency_buckets")
    @classmethod
    def _buckets(cls, v: list[float]) -> list[float]:
        if not v or any(b <= a for a, b in zip(v, v[1:], strict=False)) or v[0] <= 0:
            raise ValueError("expected increasing positive bucket bounds in seconds")
        return v

    @field_validator("feedback_categories")
    @classmethod
    def _categories(cls, v: list[str]) -> list[str]:
        if "other" not in v or any(not re.fullmatch(r"[a-z][a-z0-9_]*", c) for c in v):
            raise ValueError("expected snake_case category names including 'other'")
        return v


GATE_POLICY_KEYS = ("method", "inconclusive", "unstable_spread")


class GatePolicy(_Strict):
    """How the gate decides: keys of ``[tool.ragdive.gate]`` beside the
    tolerances (the rule is in pytest_ragdive/paired.py)."""

    method: Literal["band", "band+paired"] = "band+paired"
    inconclusive: Literal["fail", "pass", "rerun"] = "rerun"
    # baseline conversations whose p90 - p10 over the runs exceeds this are listed as unstable
    unstable_spread: float = Field(0.5, ge=0, allow_inf_nan=False)


class HttpTargetConfig(_Strict):
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


class RagdiveConfig(_Strict):
    # twins of the CLI options
    baseline: str | None = None
    update_baseline: bool = False
    suite: str = "core"  # NAME[,NAME...] or all
    runs: int = Field(1, ge=1, le=MAX_RUNS)
    record_mode: RecordMode = RecordMode.NEW_EPISODES
    cache_dir: str = ".ragdive/cache"
    model: str | None = None
    concurrency: int = Field(8, ge=1, le=1024)
    max_cost: float | None = Field(None, ge=0)
    report_dir: str | None = None
    max_reruns: int = Field(2, ge=0, le=10)  # reruns of a suite whose gate is inconclusive
    target_timeout_s: float = Field(120.0, gt=0)  # one call of the target (one turn)
    deadline_s: float | None = Field(None, gt=0)  # the whole session; then it stops, partial, ungated
    estimate: bool = False  # --ragdive-estimate: print what the LLM calls would cost, run nothing
    shard: str | None = None  # "I/N": this process runs shard I of N (see planning.shard_plans)
    force: bool = False  # an update may overwrite a baseline of other models, backend or golden data
    # file-only settings
    autorun: bool = False
    target: str | HttpTargetConfig | None = None
    corpus: str | None = None
    backend: Literal["auto", "offline", "llm"] = "auto"
    judge_backend: Literal["builtin", "ragas"] = "builtin"
    # "batch": judge calls go through the provider's batch API (OpenAI files + batches) at batch prices
    judge_mode: Literal["direct", "batch"] = "direct"
    judge_cascade: list[str] = Field(default_factory=list)
    forgetfulness_probe: bool = True
    # strict: a tolerance of true or "0.03" is a mistake, not 1.0 or 0.03
    gate: dict[str, Annotated[float, Field(ge=0, strict=True)]] = Field(default_factory=lambda: dict(DEFAULT_GATE))
    gate_policy: GatePolicy = Field(default_factory=lambda: GatePolicy())  # set as gate.method etc.
    suites: dict[str, SuiteConfig] = Field(default_factory=dict)
    llm: LLMConfig = Field(default_factory=lambda: LLMConfig())
    online: OnlineConfig = Field(default_factory=lambda: OnlineConfig())
    # where the config came from; paths resolve against its directory
    source: str | None = Field(None, exclude=True)
    base_dir: str = Field(".", exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _split_gate(cls, data: Any) -> Any:
        """``[tool.ragdive.gate]`` holds tolerances and the policy keys: move the latter to ``gate_policy``."""
        if isinstance(data, dict) and isinstance(data.get("gate"), dict):
            gate = dict(data["gate"])
            policy = {k: gate.pop(k) for k in GATE_POLICY_KEYS if k in gate}
            if policy:
                data = {**data, "gate": gate or dict(DEFAULT_GATE), "gate_policy": policy}
        return data

    @field_validator("target", mode="before")
    @classmethod
    def _target_spec(cls, v: Any) -> Any:
        if isinstance(v, dict):
            try:
                return HttpTargetConfig.model_validate(v)
            except ValidationError as e:
                raise ValueError(f"HTTP target: {one_line(e)}") from None
        if isinstance(v, str) and (v.count(":") != 1 or not all(v.split(":"))):
            raise ValueError("expected 'package.module:attribute' or a table with an HTTP url")
        return v

    @field_validator("gate")
    @classmethod
    def _gate_metrics(cls, v: dict[str, float]) -> dict[str, float]:
        for name, tol in v.items():
            if name not in METRICS:
                raise ValueError(f"unknown metric {name!r}, expected one of {', '.join(sorted(METRICS))}")
            if not isinstance(tol, (int, float)) or isinstance(tol, bool) or not math.isfinite(tol) or tol < 0:
                raise ValueError(f"tolerance of {name!r} must be a finite number >= 0")
            if name == "safety_pass_rate" and tol != 0:
                raise ValueError("safety_pass_rate has zero tolerance: set it to 0")
        return v

    @field_validator("suites")
    @classmethod
    def _suite_names(cls, v: dict[str, SuiteConfig]) -> dict[str, SuiteConfig]:
        for name in v:
            if not SUITE_NAME_RE.match(name) or name == "all":
                raise ValueError(
                    f"suite name {name!r} must be a letter followed by letters, digits or '_' (and not 'all'); "
                    "it becomes the marker ragdive_<name>"
                )
        return v

    @field_validator("shard")
    @classmethod
    def _shard_spec(cls, v: str | None) -> str | None:
        if v is None:
            return v
        m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", v)
        if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
            raise ValueError("expected I/N with 1 <= I <= N, e.g. 2/4")
        return f"{int(m.group(1))}/{int(m.group(2))}"

    def shard_index(self) -> tuple[int, int] | None:
        """(I, N) of ``shard``, or None when the run is not sharded."""
        if self.shard is None:
            return None
        i, n = self.shard.split("/")
        return int(i), int(n)

    @field_validator("suite")
    @classmethod
    def _suite_choice(cls, v: str) -> str:
        names = [n.strip() for n in v.split(",")]
        if not all(names) or not all(n == "all" or SUITE_NAME_RE.match(n) for n in names):
            raise ValueError("expected a suite name, NAME,NAME... or all")
        return ",".join(names)

    # -- helpers -----------------------------------------------------------
    def path(self, p: str) -> Path:
        """Resolve a path from the config against the config file's directory."""
        q = Path(p).expanduser()
        return q if q.is_absolute() else (Path(self.base_dir) / q).resolve()

    def requested_suites(self) -> list[str]:
        """The suites ``suite`` names (``all``: every configured suite, in config order)."""
        names = self.suite.split(",")
        if "all" in names:
            return list(self.suites)
        return list(dict.fromkeys(names))

    def selected_suites(self) -> list[str]:
        """The requested suites that are configured."""
        return [n for n in self.requested_suites() if n in self.suites]

    def gated_metrics(self, suite: str) -> dict[str, float]:
        """The gate entries that apply to a suite: the sharded diagnosis' suite-level
        metrics (sharded_gap, aptitude, unreliability) only where it has sharded
        questions, the other metrics everywhere but in a suite of sharded questions only."""
        sc = self.suites.get(suite)
        if sc is None:
            return dict(self.gate)
        has_sharded = bool(sc.sharded)
        sharded_only = has_sharded and not (sc.single_turn or sc.conversations or sc.ragdive_logs or sc.generated)
        return {
            m: t for m, t in self.gate.items()
            if (has_sharded if METRICS[m].level == "suite" else not sharded_only)
        }

    def generated_corpus(self, suite: str) -> str | None:
        """The corpus a suite's generated conversations are about: its own, else ``corpus``."""
        sc = self.suites.get(suite)
        if sc is not None and sc.generated is not None and sc.generated.corpus:
            return sc.generated.corpus
        return self.corpus

    def role_model(self, role: str) -> str | None:
        """The model of an LLM role: its own setting, else (validator) the
        judge's, else (judge) the cascade's first model, else ``model``.

        The validator defaults to the judge model because a model checks its
        own generated turns too kindly; set ``model`` for the simulator and
        ``llm.judge.model`` to get two different models."""
        rm: RoleModel = getattr(self.llm, role)
        if rm.model:
            return rm.model
        if role == "validator" and self.llm.judge.model:
            return self.llm.judge.model
        if role in ("judge", "validator") and self.judge_cascade:
            return self.judge_cascade[0]
        return self.model

    def llm_enabled(self) -> bool:
        if self.backend == "offline":
            return False
        if self.backend == "llm":
            return True
        return any(self.role_model(r) for r in ("simulator", "validator", "judge", "classifier"))

    def content_digests(self) -> dict[str, str]:
        """Content hashes of every configured golden file and of the plugin's prompt
        files: a changed golden set or prompt changes the config hash."""
        from importlib import resources

        out: dict[str, str] = {}
        for sc in self.suites.values():
            for name in [*sc.single_turn, *sc.conversations, *sc.ragdive_logs, *sc.sharded]:
                try:
                    out[name] = hashlib.sha256(self.path(name).read_bytes()).hexdigest()[:16]
                except OSError:
                    out[name] = "missing"
        for f in sorted(resources.files("pytest_ragdive").joinpath("prompts").iterdir(), key=lambda x: x.name):
            if f.name.endswith(".yaml"):
                out["prompt:" + f.name] = hashlib.sha256(f.read_bytes()).hexdigest()[:16]
        return out

    def config_hash(self) -> str:
        """Hash of what changes results: suites, target, backend, models, and the
        contents of the golden files and prompts (:meth:`content_digests`)."""
        keys = ("suites", "target", "backend", "judge_backend", "judge_cascade", "forgetfulness_probe", "llm", "model")
        # defaults left out: a plugin release that adds a setting keeps old hashes
        data = self.model_dump(mode="json", include=set(keys), exclude_defaults=True)
        data["contents"] = self.content_digests()
        blob = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


# --------------------------------------------------------------------------
# loading


def _one_line(err: ValidationError, where: str, cli_names: dict[str, str] | None = None) -> str:
    first = err.errors()[0]
    loc = tuple(first["loc"])
    key = ".".join(str(x) for x in loc) or "(top level)"
    if loc and loc[0] == "gate_policy":  # written as gate.method etc.
        key = ".".join(str(x) for x in ("gate", *loc[1:]))
    if cli_names and loc and str(loc[0]) in cli_names:
        where, key = "command line", cli_names[str(loc[0])]
    if first["type"] == "extra_forbidden":
        fields = _fields_at(loc[:-1])
        hint = f" (expected one of: {', '.join(fields)})" if fields else ""
        return f"ragdive config error in {where}: unknown key {key!r}{hint}"
    return f"ragdive config error in {where}: {one_line(err, label=lambda _loc: f'key {key!r}')}"


def _fields_at(loc: tuple[Any, ...]) -> list[str]:
    model: Any = RagdiveConfig
    in_dict = False
    for part in loc:
        if isinstance(part, int) or in_dict:
            in_dict = False
            continue
        f = getattr(model, "model_fields", {}).get(part)
        if f is None:
            return []
        ann = f.annotation
        in_dict = getattr(ann, "__origin__", None) is dict
        inner = [a for a in getattr(ann, "__args__", (ann,)) if isinstance(a, type) and issubclass(a, BaseModel)]
        if not inner:
            return []
        model = inner[0]
    return [k for k, f in model.model_fields.items() if not f.exclude]


def find_config_file(candidates: list[Path], explicit: str | None = None) -> Path | None:
    """The file holding the ragdive config: the explicit path, else the first
    ragdive.yaml, or pyproject.toml with a [tool.ragdive] table, in the
    candidate directories (ini file's dir, rootdir, invocation dir, args)."""
    if explicit:
        p = Path(explicit)
        if not p.is_file():
            raise ConfigError(f"ragdive config error: --ragdive-config file {explicit} does not exist")
        return p.resolve()
    dirs: list[Path] = []
    for c in candidates:
        if c not in dirs:
            dirs.append(c)
    for d in dirs:
        for name in ("ragdive.yaml", "ragdive.yml"):
            if (d / name).is_file():
                return (d / name).resolve()
        pp = d / "pyproject.toml"
        if pp.is_file():
            try:
                text = pp.read_text(encoding="utf-8")
            except OSError:
                continue
            if "[tool.ragdive" in text:
                return pp.resolve()
    return None


def read_config_file(path: Path) -> dict[str, Any]:
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(path.read_text(encoding="utf-8"))
            section = data.get("tool", {}).get("ragdive", {})
        else:
            import yaml

            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
            section = loaded.get("ragdive", loaded) if isinstance(loaded, dict) else loaded
            if section is None:
                section = {}
    except (tomllib.TOMLDecodeError, ValueError) as e:
        raise ConfigError(f"ragdive config error in {path}: cannot parse: {str(e).splitlines()[0]}") from None
    except Exception as e:  # yaml errors
        raise ConfigError(f"ragdive config error in {path}: cannot parse: {' '.join(str(e).split())}") from None
    if not isinstance(section, dict):
        raise ConfigError(f"ragdive config error in {path}: expected a mapping of settings, got {type(section).__name__}")
    return section


def load_config(
    file: Path | None,
    cli: dict[str, Any] | None = None,
    cli_names: dict[str, str] | None = None,
    default_dir: Path | None = None,
) -> RagdiveConfig:
    """Build the config from a file (may be None) and CLI overrides (None = not given)."""
    data: dict[str, Any] = read_config_file(file) if file is not None else {}
    where = str(file) if file is not None else "defaults"
    try:
        cfg = RagdiveConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigError(_one_line(e, where)) from None
    overrides = {k: v for k, v in (cli or {}).items() if v is not None}
    if overrides:
        try:
            cfg = RagdiveConfig.model_validate({**data, **overrides})
        except ValidationError as e:
            raise ConfigError(_one_line(e, where, cli_names)) from None
    cfg.source = where
    cfg.base_dir = str((file.parent if file is not None else (default_dir or Path.cwd())).resolve())
    return cfg
