"""A session's metric registry, gathered from every source a team can declare metrics in.

The sources, in this order (a name taken twice, or a built-in's name, is a
:class:`~pytest_ragdive.core.errors.MetricError`: exit 4):

1. the built-ins (:data:`.registry.BUILTINS`);
2. the rubric judges of the config (``[tool.ragdive.judges.NAME]``), with the
   offline twin a judge names (``offline = "module:function"``);
3. the modules the config names (``metric_modules = ["team_checks.metrics"]``,
   imported with the config's directory on ``sys.path``);
4. the ``pytest_ragdive.metrics`` entry points of installed packages (each names a
   module, a decorated function or a list of them);
5. what the caller passes: the pytest session's conftest.py modules, the functions
   given to :func:`pytest_ragdive.run_suite`.

Then every metric named under ``[tool.ragdive.gate]`` must be one of them."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Protocol

from ..core.errors import ConfigError, MetricError
from .registry import BUILTINS, MetricClash, MetricRegistry, MetricSpec, declared_in

if TYPE_CHECKING:
    from ..core.config_models import JudgeConfig


class ConfigLike(Protocol):
    """What discovery reads of a run's config (:class:`~pytest_ragdive.core.config.RagdiveConfig`,
    which builds its registry here: a protocol, so that this module does not import it)."""

    @property
    def judges(self) -> dict[str, JudgeConfig]: ...

    @property
    def metric_modules(self) -> list[str]: ...

    @property
    def gate(self) -> dict[str, float]: ...

    @property
    def floors(self) -> dict[str, float]: ...

    @property
    def source(self) -> str | None: ...

    @property
    def base_dir(self) -> str: ...

ENTRY_POINT_GROUP = "pytest_ragdive.metrics"


def build_registry(cfg: ConfigLike, sources: Iterable[object] = ()) -> MetricRegistry:
    """The registry of a run of ``cfg``; ``sources``: modules, decorated functions or lists
    of them the caller found (conftest.py modules, run_suite's ``metrics``), and
    :class:`MetricSpec` records of metrics a result file recorded (adopted where no source
    here declares them; one declared here must agree)."""
    specs: list[MetricSpec] = [rubric_spec(name, j, cfg) for name, j in cfg.judges.items()]
    for mod in cfg.metric_modules:
        specs += declared_in(_import(mod, cfg))
    specs += _entry_point_specs()
    recorded: list[MetricSpec] = []
    for src in sources:
        if isinstance(src, MetricSpec):  # as a result file recorded it: adopted where not declared here
            recorded.append(src)
        else:
            specs += declared_in(src)
    try:
        registry = BUILTINS.extended(specs).adopted(recorded)
    except MetricClash as e:
        raise MetricError(f"ragdive metric error: {e}") from None
    check_gate_names(cfg, registry)
    return registry


def check_gate_names(cfg: ConfigLike, registry: MetricRegistry) -> None:
    """Every gate tolerance and floor names a metric of the registry (one line, the config file and key)."""
    for key, name in [*(("gate", n) for n in cfg.gate), *(("floors", n) for n in cfg.floors)]:
        if name not in registry:
            raise ConfigError(
                f"ragdive config error in {cfg.source or 'the config'}: key '{key}': unknown metric {name!r}, "
                f"expected one of {', '.join(sorted(registry))} (a metric of your own: declare it with "
                "@pytest_ragdive.metric in conftest.py, a module of metric_modules or an entry point)"
            )


def rubric_spec(name: str, judge: JudgeConfig, cfg: ConfigLike) -> MetricSpec:
    """The metric a rubric judge of the config defines (higher is better: its criteria met)."""
    criteria = " ".join(judge.criteria.split())
    short = criteria if len(criteria) <= 160 else criteria[:157] + "..."
    scale = "1 when the criteria are met, else 0" if judge.scale == "binary" else "a 1-5 grade scaled to 0-1"
    fn = _resolve(judge.offline, cfg, f"judges.{name}.offline") if judge.offline else None
    return MetricSpec(
        name, "higher", judge.level, f"rubric judge (LLM; {scale}): {short}", judge.dimension,
        kind="rubric", origin=f"[tool.ragdive.judges.{name}]" + (f", offline twin {judge.offline}" if fn else ""), fn=fn,
    )


def _on_path(cfg: ConfigLike) -> None:
    if cfg.base_dir not in sys.path:
        sys.path.insert(0, cfg.base_dir)


def _import(module: str, cfg: ConfigLike) -> Any:
    _on_path(cfg)
    try:
        return importlib.import_module(module)
    except Exception as e:  # noqa: BLE001 - a user's module: any error is its own
        raise MetricError(
            f"ragdive config error in {cfg.source or 'the config'}: key 'metric_modules': cannot import {module!r}: "
            f"{type(e).__name__}: {e}"
        ) from None


def _resolve(spec: str, cfg: ConfigLike, key: str) -> Any:
    """``module:function``, imported with the config's directory on sys.path."""
    mod_name, _, attr = spec.partition(":")
    _on_path(cfg)
    try:
        obj = getattr(importlib.import_module(mod_name), attr)
    except Exception as e:  # noqa: BLE001 - a user's module: any error is its own
        raise MetricError(
            f"ragdive config error in {cfg.source or 'the config'}: key {key!r}: cannot load {spec!r}: {type(e).__name__}: {e}"
        ) from None
    if not callable(obj):
        raise MetricError(f"ragdive config error in {cfg.source or 'the config'}: key {key!r}: {spec!r} is not a function")
    return obj


def _entry_point_specs() -> list[MetricSpec]:
    out: list[MetricSpec] = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            obj = ep.load()
        except Exception as e:  # noqa: BLE001 - a third-party package's error is its own
            dist = getattr(getattr(ep, "dist", None), "name", "?")
            raise MetricError(
                f"ragdive metric error: entry point {ep.name} = {ep.value!r} of package {dist} "
                f"(group {ENTRY_POINT_GROUP}) cannot be loaded: {type(e).__name__}: {e}"
            ) from None
        found = declared_in(obj)
        if not found:
            raise MetricError(
                f"ragdive metric error: entry point {ep.name} = {ep.value!r} (group {ENTRY_POINT_GROUP}) declares no "
                "metric: it must name a module, a function decorated with @pytest_ragdive.metric, or a list of them"
            )
        out += found
    return out
