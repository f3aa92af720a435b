"""The baseline file: reading and checking it (:func:`load_baseline`), building one
from a run (:func:`build_baseline`, with each gated metric's per-conversation values
in format 2), and writing it atomically in a form that reads well in a diff."""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..core.config import SUITE_NAME_RE
from ..core.errors import BaselineError, cut, fault, one_line
from ..core.paths import atomic_open, read_input
from ..core.records import Conversation
from ..core.results import BASELINE_FORMAT, Baseline, BaselineMetric, CustomMetric, SuiteResult
from ..metrics.registry import BUILTINS, METRICS, TWIN_OF
from .comparable import ELIGIBLE_METRICS
from .paired import conversation_value
from .rows import Method, pairable


def load_baseline(path: str | Path) -> Baseline:
    """Read and check a baseline file; any problem is a :class:`BaselineError`
    naming the file and the key."""
    path = Path(path)
    text = read_input(path, "ragdive baseline", BaselineError,
                      f": create it with --ragdive-update-baseline --ragdive-baseline={path}")
    if text.startswith("\ufeff"):
        raise BaselineError(
            fault(f"ragdive baseline {path}", "starts with a byte order mark (U+FEFF): save it as UTF-8 without one",
                  line=1, col=1)
        )
    try:
        bl = Baseline.model_validate_json(text)
    except ValidationError as e:
        raise BaselineError(_invalid(path, e, len(text))) from None
    for suite, metrics in bl.suites.items():
        if not SUITE_NAME_RE.match(suite) or suite == "all":
            raise BaselineError(f"ragdive baseline {path} is invalid: suites.{suite}: not a suite name (a letter, then letters, digits or '_')")
        for name, bm in metrics.items():
            key = f"suites.{suite}.{name}"
            # a built-in, a metric of this session, or one the file itself declares (custom_metrics)
            spec = METRICS.get(name) or (bl.custom_metrics[name].spec(name) if name in bl.custom_metrics else None)
            if spec is None:
                raise BaselineError(f"ragdive baseline {path} is invalid: {key}: unknown metric")
            if bm.direction != spec.direction:
                raise BaselineError(
                    f"ragdive baseline {path} is invalid: {key}.direction: {bm.direction!r}, but {name} is "
                    f"{spec.direction}-is-better"
                )
    for name, cm in bl.custom_metrics.items():
        known = METRICS.get(name)
        what = ("a built-in metric" if name in BUILTINS
                else f"{known.direction}-is-better at {known.level} level here" if known is not None
                and not known.agrees(cm.spec(name)) else None)
        if what is not None:
            raise BaselineError(
                f"ragdive baseline {path} is invalid: custom_metrics.{name}: recorded as {cm.direction}-is-better at "
                f"{cm.level} level, but {name} is {what}: re-record the baseline"
            )
    return bl


def _invalid(path: Path, err: ValidationError, size: int) -> str:
    """A baseline's validation error in one bounded line: a JSON syntax error by
    file:line:col (never the document it quotes), a bad value cut by :func:`quote`."""
    first = err.errors()[0]
    if first["type"] == "json_invalid":
        msg = str(first.get("ctx", {}).get("error") or first["msg"])
        m = re.search(r"(.*?) at line (\d+) column (\d+)$", msg)
        if m:
            hint = " (the file ends early: truncated?)" if "EOF" in m.group(1) else ""
            return fault(f"ragdive baseline {path}", f"invalid JSON: {m.group(1)}{hint} ({size} characters)",
                         line=int(m.group(2)), col=int(m.group(3)))
        return fault(f"ragdive baseline {path}", f"invalid JSON: {cut(msg)}")
    return f"ragdive baseline {path} is invalid: {one_line(err)}"


def baseline_note(baseline: Baseline, path: Path | str, method: Method) -> str | None:
    """One line when the paired test cannot run on this baseline."""
    if method == "band":
        return None
    if baseline.format_version < 2 or not any(bm.conversations for m in baseline.suites.values() for bm in m.values()):
        return (
            f"baseline {path} has format {baseline.format_version} (no per-conversation values): gated by band alone; "
            "re-record it with --ragdive-update-baseline for the paired test"
        )
    return None


def build_baseline(
    results: dict[str, SuiteResult],
    gate: dict[str, float],
    *,
    config_hash: str,
    backend: str,
    judge_models: dict[str, str],
    plugin_version: str,
    existing: Baseline | None = None,
    convs: Iterable[Conversation] | None = None,
) -> Baseline:
    """A baseline from this session's suites; suites not run keep their stored
    values. With the scored conversations ``convs``, every gated metric but
    safety also stores each conversation's value in each run (format 2); so does
    the offline twin of a gated judged metric (an LLM run stores both values: a
    keyless run is gated on the twins, :mod:`.fallback`)."""
    import numpy as np

    all_convs = list(convs or [])
    suites = dict(existing.suites) if existing is not None else {}
    for suite, res in results.items():
        mine = [c for c in all_convs if c.suite == suite]
        runs = sorted({c.run for c in mine})
        metrics: dict[str, BaselineMetric] = {}
        for name, mv in res.metrics.items():
            vals = [v for v in mv.per_run if v is not None]
            if not vals:
                continue
            arr = np.asarray(vals, dtype=float)
            # an offline twin stands in for its judged metric in a keyless run: stored the same way
            gated = name if name in gate else TWIN_OF.get(name)
            paired = bool(mine) and gated in gate and pairable(name)
            # full precision: a rounded min/max would put an unchanged rerun
            # outside a zero-tolerance band
            metrics[name] = BaselineMetric(
                mean=float(arr.mean()),
                std=float(arr.std(ddof=1)) if len(arr) > 1 else 0.0,
                min=float(arr.min()),
                max=float(arr.max()),
                runs=len(vals),
                direction=METRICS[name].direction,
                tolerance=gate.get(gated, 0.0) if gated else 0.0,
                conversations=_per_conversation(mine, name, runs) if paired and len(runs) == len(vals) else None,
                eligible=_eligible(mine, runs) if paired and len(runs) == len(vals) and name in ELIGIBLE_METRICS else None,
            )
        suites[suite] = metrics
    held = {name for metrics in suites.values() for name in metrics if name not in BUILTINS}
    kept = existing.custom_metrics if existing is not None else {}
    declared = {
        name: CustomMetric.of(METRICS[name]) if name in METRICS else kept[name]
        for name in sorted(held) if name in METRICS or name in kept
    }
    return Baseline(
        custom_metrics=declared,
        format_version=BASELINE_FORMAT,
        plugin_version=plugin_version,
        config_hash=config_hash,
        backend=backend,
        judge_models=judge_models,
        created=_dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
        suites=dict(sorted(suites.items())),
    )


def _eligible(convs: list[Conversation], runs: list[int]) -> dict[str, list[list[int]]] | None:
    """Per conversation the probe ran on, its eligible turns in each run ([] where a run did
    not probe it); None when the probe ran on none."""
    out: dict[str, list[list[int]]] = {}
    pos = {r: i for i, r in enumerate(runs)}
    for c in sorted(convs, key=lambda c: (c.id, c.run)):
        if c.error is None and c.eligible_turns is not None:
            out.setdefault(c.id, [[] for _ in runs])[pos[c.run]] = sorted(c.eligible_turns)
    return out or None


def _per_conversation(convs: list[Conversation], metric: str, runs: list[int]) -> dict[str, list[tuple[float | None, int]]]:
    out: dict[str, list[tuple[float | None, int]]] = {}
    pos = {r: i for i, r in enumerate(runs)}
    for c in sorted(convs, key=lambda c: (c.id, c.run)):
        if c.error is not None:
            continue
        row = out.setdefault(c.id, [(None, 0)] * len(runs))
        v = conversation_value(c, metric)
        if v is not None:
            row[pos[c.run]] = (v.value, v.count)
    return {k: v for k, v in sorted(out.items()) if any(x is not None for x, _ in v)}


def dumps_baseline(baseline: Baseline) -> str:
    """The baseline as JSON that reads well in a diff: keys sorted, two-space
    indent, one conversation per line."""

    def dump(obj: Any, depth: int, key: str = "") -> str:
        if not isinstance(obj, dict) or not obj:
            return json.dumps(obj, allow_nan=False, separators=(", ", ": "))
        pad = "  " * (depth + 1)
        one_line = key in ("conversations", "eligible")  # a metric's per-conversation values, eligible turns
        items = [
            f"{pad}{json.dumps(k)}: " + (json.dumps(v, allow_nan=False, separators=(", ", ": ")) if one_line else dump(v, depth + 1, k))
            for k, v in sorted(obj.items())
        ]
        return "{\n" + ",\n".join(items) + "\n" + "  " * depth + "}"

    data = baseline.model_dump(mode="json")
    for metrics in data.get("suites", {}).values():
        for metric in metrics.values():
            if metric.get("eligible") is None:
                metric.pop("eligible", None)  # only the probe's metrics have eligible turns
    if not data.get("custom_metrics"):
        data.pop("custom_metrics", None)  # a baseline of built-in metrics reads as it always did
    return dump(data, 0) + "\n"


def write_baseline(path: Path, baseline: Baseline) -> None:
    """Write atomically (:func:`~pytest_ragdive.core.paths.atomic_open`: a unique temporary
    file in the same directory, renamed into place; concurrent writers never clash, a
    reader never sees half a file)."""
    text = dumps_baseline(baseline)  # before the file is opened: a record that cannot be dumped writes nothing
    with atomic_open(path) as fh:
        fh.write(text)


# -- assertion helpers (public; the session gate uses the same checks) -------


