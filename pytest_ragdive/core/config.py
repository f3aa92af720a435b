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
import os
import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, PrivateAttr, ValidationError, ValidationInfo, field_validator, model_validator

from ..metrics.registry import BUILTINS, METRICS, NAME_RE, MetricRegistry
from ..online.config import OnlineConfig
from .config_models import (
    DEFAULT_GATE,
    DEFAULT_JUDGED,
    GATE_POLICY_KEYS,
    MAX_RUNS,
    GatePolicy,
    HttpTargetConfig,
    JudgeConfig,
    JudgedMetric,
    LLMConfig,
    NLIConfig,
    RecordMode,
    RoleModel,
    Strict,
    SuiteConfig,
)
from .errors import ConfigError, one_line, quote

SUITE_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


class RagdiveConfig(Strict):
    # twins of the CLI options
    baseline: str | None = None
    update_baseline: bool = False
    suite: str = "core"  # NAME[,NAME...] or all
    runs: int = Field(1, ge=1, le=MAX_RUNS)
    record_mode: RecordMode = RecordMode.NEW_EPISODES
    cache_dir: str = ".ragdive/cache"
    cache_ttl_days: float | None = Field(
        None, gt=0, description="LLM cache entries older than this many days are misses, fetched again (seed 001: "
        "30); `python -m pytest_ragdive cache prune` deletes them; default: never expire",
    )
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
    # record mode none: a judge call not cached fails the run (strict replay) instead of falling back
    # to the offline twins of the judged metrics ("not judged (no key)")
    require_judge: bool = False
    # file-only settings
    autorun: bool = False  # run the ragdive items in every pytest session, without a --ragdive-* option
    target: str | HttpTargetConfig | None = None  # "package.module:attribute" of the chatbot, or a table with an HTTP url (instead of the ragdive_target fixture)
    corpus: str | None = None  # JSONL or YAML documents (id, title, text): the chatbot's knowledge base for references and generated conversations
    backend: Literal["auto", "offline", "llm"] = "auto"  # auto: LLM judges and generation when a model is configured, else offline; offline or llm forces one
    judge_backend: Literal["builtin", "ragas"] = "builtin"  # who computes the judged metrics: the plugin's own judges, or ragas' metrics (the ragas extra)
    # "batch": judge calls go through the provider's batch API (OpenAI files + batches) at batch prices
    judge_mode: Literal["direct", "batch"] = "direct"  # direct: one request per judge call; batch: through the provider's batch API at batch prices
    judge_prompts: Literal["per_metric", "combined"] = Field(
        "per_metric",
        description="per_metric: one judge request per single-turn metric (four per answered turn); combined: "
        "faithfulness, context precision, context recall and correctness in one request per answered turn (a "
        "malformed part is asked again alone with its own prompt; docs/llm.md says why per_metric is the default)",
    )
    judge_cascade: list[str] = Field(default_factory=list)  # [cheap, strong]: judge with the first model, re-judge negative or unparseable verdicts with the next
    judged_metrics: list[JudgedMetric] = Field(
        default_factory=lambda: list(DEFAULT_JUDGED), min_length=1,
        description="the metrics the LLM judge scores; add answer_relevance (seed 001's relevance judge, one call "
        "per answered turn) by name",
    )
    nli: NLIConfig = Field(default_factory=lambda: NLIConfig(), description="the NLI checker of faithfulness_backend = \"nli\"")
    # after nli: its validator reads nli.model
    faithfulness_backend: Literal["semantic", "lexical", "nli"] = Field(
        "semantic",
        description="offline faithfulness and correctness: lexical and semantic evidence (semantic, the embedded "
        "WordLlama model), lexical evidence alone (lexical), or semantic with an NLI checker for the turns in "
        "nli.band (nli, the [nli] extra)",
    )
    judge_band: tuple[float, float] | None = Field(
        None,
        description="the LLM judge scores faithfulness only for turns whose offline faithfulness is at least the "
        "first value and below the second (or both 1.0); the other turns keep the offline figure, with a verdict "
        "saying so (None: every turn is judged)",
    )
    score_max_answer_chars: int = Field(
        100_000, ge=1_000,
        description="an answer longer than this is scored (offline metrics, safety, personal data) on its first "
        "this many characters, with a note in the report; the answer itself is kept whole",
    )
    forgetfulness_probe: bool = True  # ask each context-dependent turn's stand-alone question in a fresh history (forgetfulness, context_retention)
    recall_k: int = Field(5, ge=1, le=1000, strict=True)  # the k of recall_at_k and ndcg_at_k (seed 001: recall@5; recall_at_3 and recall_at_10 are reported beside it)
    redact_env: list[str] = Field(default_factory=list)  # variables whose values are scrubbed (***) from every reply
    # strict: a tolerance of true or "0.03" is a mistake, not 1.0 or 0.03
    gate: dict[str, Annotated[float, Field(ge=0, strict=True)]] = Field(default_factory=lambda: dict(DEFAULT_GATE))  # metric -> tolerance: only these metrics gate (safety_pass_rate only with 0)
    gate_policy: GatePolicy = Field(default_factory=lambda: GatePolicy())  # set as gate.method etc.
    floors: dict[str, Annotated[float, Field(strict=True)]] = Field(
        default_factory=dict,
        description="metric -> an absolute limit, beside the baseline bands: a metric worse than it fails whatever "
        "the baseline says (a floor for higher-is-better metrics, a ceiling for lower-is-better ones); gates with "
        "no baseline at all",
    )
    suites: dict[str, SuiteConfig] = Field(default_factory=dict)
    llm: LLMConfig = Field(default_factory=lambda: LLMConfig())
    online: OnlineConfig = Field(default_factory=lambda: OnlineConfig())
    judges: dict[str, JudgeConfig] = Field(default_factory=dict, description="rubric judges: [tool.ragdive.judges.NAME] defines the LLM-judged metric NAME")
    metric_modules: list[str] = Field(default_factory=list, description="modules whose @pytest_ragdive.metric functions are metrics of this project (besides conftest.py and entry points)")
    allow_python_assertions: bool = Field(
        False, description="golden data may hold `python: \"module:function\"` checks in its assert: lists, which "
        "import and call code; without this, such a check is a usage error (a pull request that edits golden data "
        "cannot run code in CI)",
    )
    # where the config came from; paths resolve against its directory
    source: str | None = Field(None, exclude=True)  # set by the loader: the file the config was read from (not a file key)
    base_dir: str = Field(".", exclude=True)  # set by the loader: the config file's directory, against which paths resolve (not a file key)
    # the metric registry of this config's runs (metrics.discovery.build_registry), built on first use
    _metrics: MetricRegistry | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _split_gate(cls, data: Any) -> Any:
        """``[tool.ragdive.gate]`` holds tolerances and the policy keys: move the latter to ``gate_policy``."""
        if isinstance(data, dict) and isinstance(data.get("gate"), dict):
            gate = dict(data["gate"])
            policy = {k: gate.pop(k) for k in GATE_POLICY_KEYS if k in gate}
            if not gate:
                gate = dict(DEFAULT_GATE)
            # the assert: checks of golden data always gate (zero tolerance, where the baseline holds them):
            # a table of one's own tolerances used to drop them silently
            gate.setdefault("assertion_pass_rate", 0.0)
            data = {**data, "gate": gate, **({"gate_policy": policy} if policy else {})}
        return data

    @field_validator("faithfulness_backend")
    @classmethod
    def _nli_model(cls, v: str, info: ValidationInfo) -> str:
        nli = info.data.get("nli")
        if v == "nli" and isinstance(nli, NLIConfig) and not nli.model:
            raise ValueError(
                'faithfulness_backend = "nli" needs nli.model: a local folder or a downloaded Hugging Face model id '
                "(e.g. vectara/hallucination_evaluation_model)"
            )
        return v

    @field_validator("judge_band")
    @classmethod
    def _judge_band(cls, v: tuple[float, float] | None) -> tuple[float, float] | None:
        if v is not None and not 0.0 <= v[0] < v[1] <= 1.0:
            raise ValueError("expected [lo, hi] with 0 <= lo < hi <= 1")
        return v

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
        # the names are checked against the run's metric registry (metrics.discovery.check_gate_names):
        # a team's own metrics are known only once their modules are found
        for name, tol in v.items():
            if not NAME_RE.match(name):
                raise ValueError(f"unknown metric {name!r}, expected one of {', '.join(sorted(BUILTINS))}")
            if not isinstance(tol, (int, float)) or isinstance(tol, bool) or not math.isfinite(tol) or tol < 0:
                raise ValueError(f"tolerance of {name!r} must be a finite number >= 0")
            if name == "safety_pass_rate" and tol != 0:
                raise ValueError("safety_pass_rate has zero tolerance: set it to 0")
        return v

    @field_validator("floors")
    @classmethod
    def _floor_values(cls, v: dict[str, float]) -> dict[str, float]:
        # the names are checked against the run's metric registry, as the gate's are
        for name, limit in v.items():
            if not NAME_RE.match(name):
                raise ValueError(f"unknown metric {name!r}, expected one of {', '.join(sorted(BUILTINS))}")
            if isinstance(limit, bool) or not math.isfinite(limit):
                raise ValueError(f"the floor of {name!r} must be a finite number")
        return v

    @field_validator("judges")
    @classmethod
    def _judge_names(cls, v: dict[str, JudgeConfig]) -> dict[str, JudgeConfig]:
        for name in v:
            if not NAME_RE.match(name):
                raise ValueError(f"judge name {name!r} must be lowercase letters, digits and '_', starting with a letter")
            if name in BUILTINS:
                raise ValueError(f"judge name {name!r} is a built-in metric's name: give the rubric judge another name")
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
    @property
    def metrics(self) -> MetricRegistry:
        """The metrics of this config's runs: the built-ins, its rubric judges, its
        metric_modules and the installed entry points (:func:`~pytest_ragdive.metrics.discovery.build_registry`;
        a pytest session adds its conftest.py files: :meth:`use_metrics`)."""
        if self._metrics is None:
            from ..metrics.discovery import build_registry

            self._metrics = build_registry(self)
        return self._metrics

    def use_metrics(self, registry: MetricRegistry) -> None:
        self._metrics = registry

    def path(self, p: str) -> Path:
        """Resolve a path from the config against the config file's directory (made absolute,
        never followed through a symbolic link: a write replaces a link, never its target)."""
        q = Path(p).expanduser()
        return q if q.is_absolute() else Path(os.path.abspath(Path(self.base_dir) / q))

    def requested_suites(self) -> list[str]:
        """The suites ``suite`` names (``all``: every configured suite, in config order)."""
        names = self.suite.split(",")
        if "all" in names:
            return list(self.suites)
        return list(dict.fromkeys(names))

    def selected_suites(self) -> list[str]:
        """The requested suites that are configured."""
        return [n for n in self.requested_suites() if n in self.suites]

    def gated_metrics(self, suite: str, entries: dict[str, float] | None = None) -> dict[str, float]:
        """The gate entries that apply to a suite: the sharded diagnosis' suite-level
        metrics (sharded_gap, aptitude, unreliability) only where it has sharded
        questions, the other metrics everywhere but in a suite of sharded questions only;
        a suite of attacks only gates its safety metrics.
        ``entries``: other metric -> value entries than the gate's (the floors)."""
        gate = self.gate if entries is None else entries
        sc = self.suites.get(suite)
        if sc is None:
            return dict(gate)
        has_sharded = bool(sc.sharded)
        sharded_only = has_sharded and not (sc.single_turn or sc.conversations or sc.ragdive_logs or sc.generated)
        if sc.attacks is not None and not (has_sharded or sc.single_turn or sc.conversations or sc.ragdive_logs
                                           or sc.generated):
            # a suite of attacks only (docs/safety.md): its safety metrics; the answer metrics need ground truths
            return {m: t for m, t in gate.items() if m in METRICS and METRICS[m].dimension == "safety"}
        return {
            m: t for m, t in gate.items()
            if (has_sharded if m in METRICS and METRICS[m].level == "suite" else not sharded_only)
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

    def judge_fallback(self) -> bool:
        """Record mode none (no key needed) without ``require_judge``: a judge call the cache
        cannot answer leaves its metric "not judged (no key)", and the gate of that suite
        decides on the judged metrics' offline twins (:data:`~pytest_ragdive.metrics.registry.OFFLINE_TWINS`)."""
        return self.record_mode.replay_only and not self.require_judge

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
        # the red-team prompts count where a suite's generated roles include an adversarial one
        attack_roles = any(r.startswith("attacker_") for sc in self.suites.values() if sc.generated
                           for r in sc.generated.roles)
        for f in sorted(resources.files("pytest_ragdive").joinpath("prompts").iterdir(), key=lambda x: x.name):
            # the rubric prompts count where the config defines a rubric judge (a release that adds
            # a prompt keeps the hashes of configs that do not use it)
            # (the combined judge's prompt, likewise, where judge_prompts = "combined")
            if f.name == "judge_combined.yaml" and self.judge_prompts != "combined":
                continue
            if f.name.endswith(".yaml") and (self.judges or not f.name.startswith("judge_rubric")) and (
                    attack_roles or not f.name.startswith("attack_")):
                out["prompt:" + f.name] = hashlib.sha256(f.read_bytes()).hexdigest()[:16]
        return out

    def config_hash(self) -> str:
        """Hash of what changes results: suites, target, backend, models, and the
        contents of the golden files and prompts (:meth:`content_digests`)."""
        keys = (
            "suites", "target", "backend", "judge_backend", "judge_cascade", "judged_metrics", "forgetfulness_probe",
            "recall_k", "llm", "model", "judges", "metric_modules", "faithfulness_backend", "nli", "judge_band",
            "score_max_answer_chars",
            "judge_prompts",
        )
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
        return f"ragdive config error in {where}: unknown key {quote(key)}{hint}"
    hint = ""
    if loc == ("suite",) and isinstance(first.get("input"), dict):
        names = ", ".join(map(str, first["input"])) or "NAME"
        hint = (f" (a table [tool.ragdive.suite.{names.split(', ')[0]}] defines nothing: suites are defined under "
                f"[tool.ragdive.suites.NAME], with an s; `suite` only selects which run: a name, NAME,NAME or all)")
    return f"ragdive config error in {where}: {one_line(err, label=lambda _loc: f'key {quote(key)}')}{hint}"


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
    metric_sources: Sequence[object] = (),
    metrics: bool = True,
) -> RagdiveConfig:
    """Build the config from a file (may be None) and CLI overrides (None = not given),
    with its metric registry (``metric_sources``: modules or functions declaring metrics
    besides the config's own sources, e.g. the pytest session's conftest.py files).
    ``metrics=False``: a command that reads no metric (``cache prune``, ``alert-rules``)
    leaves the registry to be built on first use, so that the gate's names (a conftest's
    ``@pytest_ragdive.metric`` among them, unknown outside pytest) are not checked."""
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
    if not metrics:
        return cfg
    from ..metrics.discovery import build_registry

    cfg.use_metrics(build_registry(cfg, metric_sources))
    return cfg
