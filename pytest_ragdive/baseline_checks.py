"""What a baseline must satisfy before a run is gated against it, or before an
update overwrites it. Shared by the pytest session and the command-line gate,
so both refuse the same things with the same one line. Imports no pytest."""

from __future__ import annotations

from pathlib import Path

from .baseline import load_baseline
from .config import RagdiveConfig
from .errors import BaselineError
from .records import Baseline


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
        missing = [m for m in cfg.gated_metrics(suite) if m not in stored]
        if missing:
            raise BaselineError(
                f"ragdive baseline {path}: gated metric(s) {', '.join(missing)} missing for suite {suite!r} "
                "(the recorded run had no value for them: no case they apply to, e.g. safety_pass_rate "
                "needs negative_assertions); add such cases and re-record, or remove them from [tool.ragdive.gate]"
            )
    if baseline.config_hash and baseline.config_hash != cfg.config_hash():
        notes.append(
            f"the baseline was recorded with another config (hash {baseline.config_hash}, now "
            f"{cfg.config_hash()}): re-record it if the suites changed on purpose"
        )
    return baseline, notes
