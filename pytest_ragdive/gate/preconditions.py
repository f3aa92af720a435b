"""What a baseline must satisfy before a run is gated against it (and what
changed since it was recorded), or before an update overwrites it. Shared by the pytest session and the command-line gate,
so both refuse the same things with the same one line. Imports no pytest."""

from __future__ import annotations

from pathlib import Path

from ..core.config import RagdiveConfig
from ..core.errors import BaselineError
from ..core.results import Baseline
from ..sources.fingerprint import fingerprint, golden_changes
from .baseline import load_baseline
from .rows import where_recorded


def gate_baseline(cfg: RagdiveConfig, path: Path, backend: str) -> tuple[Baseline, list[str]]:
    """Load the baseline to gate against; raise BaselineError when it cannot gate
    this run (another backend, a selected suite or gated metric missing).
    Returns it with the notes to show (another config)."""
    baseline = load_baseline(path)
    notes: list[str] = []
    if baseline.backend != backend:
        raise BaselineError(
            f"ragdive baseline {path} was recorded with the {baseline.backend} backend, "
            f"this run uses {backend}: record a baseline for it with --ragdive-update-baseline"
        )
    for suite in cfg.selected_suites():
        stored = baseline.suites.get(suite)
        if stored is None:
            raise BaselineError(
                f"ragdive baseline {path} has no suite {suite!r} (has: {', '.join(baseline.suites) or 'none'}); "
                f"record it with --ragdive-update-baseline --ragdive-suite={suite}"
            )
        missing = [m for m in where_recorded(cfg.gated_metrics(suite), stored, cfg.gate_policy.where_data) if m not in stored]
        if missing:
            raise BaselineError(missing_metrics(path, suite, missing, baseline))
    changes = golden_changes(baseline.golden, fingerprint(cfg, cfg.selected_suites(), known=baseline.golden))
    notes += changes
    if baseline.config_hash and baseline.config_hash != cfg.config_hash():
        notes.append(
            f"the baseline was recorded with another config (hash {baseline.config_hash}, now "
            f"{cfg.config_hash()}): " + ("the metrics above are gated against numbers measured on the old golden "
                                         "data; " if changes else "") + "re-record it if the change was on purpose"
        )
    return baseline, notes


def missing_metrics(path: Path, suite: str, missing: list[str], baseline: Baseline) -> str:
    """The one line for gated metrics a baseline has no value for: a metric of one's own (or a
    rubric judge) the file never knew was added after it was recorded; a built-in one was
    either added to the gate since, or had no case it applies to in the recorded run."""
    from ..metrics.registry import BUILTINS

    known = set(BUILTINS) | set(baseline.custom_metrics) | {m for ms in baseline.suites.values() for m in ms}
    new = [m for m in missing if m not in known]
    old = [m for m in missing if m in known]
    parts = []
    if new:
        parts.append(
            f"{', '.join(new)} {'was' if len(new) == 1 else 'were'} added after the baseline was recorded "
            f"(the baseline{' of ' + baseline.created if baseline.created else ''} does not know "
            f"{'it' if len(new) == 1 else 'them'})"
        )
    if old:
        parts.append(
            f"{', '.join(old)}: no value in the recorded run, either added to [tool.ragdive.gate] after the baseline "
            "was recorded or no case they apply to (e.g. citation_rate needs expected_citations)"
        )
    return (
        f"ragdive baseline {path}: gated metric(s) {', '.join(missing)} missing for suite {suite!r}: {'; '.join(parts)}: "
        "re-record it with --ragdive-update-baseline, or remove them from [tool.ragdive.gate]"
    )


def check_overwrite(cfg: RagdiveConfig, path: Path, existing: Baseline, backend: str,
                    judge_models: dict[str, str]) -> list[str]:
    """Refuse (BaselineError) to let an update overwrite a baseline recorded with
    another backend, other judge models or other golden data, unless
    ``cfg.force`` (``--ragdive-force``); returns the notes to show."""
    why = []
    if existing.backend != backend:
        why.append(f"the {existing.backend} backend (this run: {backend})")
    if existing.judge_models != judge_models:
        def fmt(m: dict[str, str]) -> str:
            return ", ".join(f"{k}={v}" for k, v in sorted(m.items())) or "none"

        why.append(f"judge models {fmt(existing.judge_models)} (this run: {fmt(judge_models)})")
    changes = golden_changes(existing.golden, fingerprint(cfg, cfg.selected_suites(), known=existing.golden))
    if changes:
        why.append("other golden data (" + "; ".join(c.removeprefix("golden data changed since the baseline: ")
                                                     for c in changes) + ")")
    if not why:
        return []
    if not cfg.force:
        raise BaselineError(
            f"ragdive baseline {path} was recorded with {'; '.join(why)}: --ragdive-update-baseline will not "
            "overwrite it; review the change and pass --ragdive-force, or write to another --ragdive-baseline"
        )
    return [f"--ragdive-force: overwriting {path}, recorded with {'; '.join(why)}"]
