"""The assertion helpers a user's own tests call: :func:`assert_in_band` (one number
against one band) and :func:`assert_no_regression` (a suite result against a baseline,
by the session gate's own rule). Each raises an AssertionError whose message is the
gate table's rows."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from ..core.config import RagdiveConfig
from ..core.records import Conversation
from ..core.results import Baseline, SuiteResult
from .rows import GateRow, check, compare_to_band, where_recorded


def assert_in_band(value: float | None, band: tuple[float, float], direction: str, name: str = "value") -> None:
    """Raise AssertionError (the gate-table row as message) when ``value`` is
    outside ``band`` on its bad side."""
    low, high = band
    verdict = compare_to_band(value, low, high, direction)
    if verdict in ("regression", "no data"):
        row = GateRow(
            suite="-", metric=name, direction="lower" if direction == "lower" else "higher",
            baseline_mean=None, band_low=low, band_high=high, tolerance=0.0, current=value,
            delta=None, verdict=verdict,
        )
        raise AssertionError(row.line())


def assert_no_regression(
    result: SuiteResult,
    baseline: Baseline,
    metrics: Sequence[str] | None = None,
    tolerances: dict[str, float] | None = None,
    *,
    conversations: Iterable[Conversation] | None = None,
    config: RagdiveConfig | str | Path | None = None,
) -> list[GateRow]:
    """Gate ``result`` against ``baseline`` by the rule the pytest session applies, and
    return the rows; raise AssertionError (one gate-table row per failing metric) when
    any fails.

    - **which metrics**: the session's gated metrics of that suite
      (``[tool.ragdive.gate]`` of ``config``: a RagdiveConfig, a config file, or by
      default the one found in the working directory, as pytest finds it; without one,
      the plugin's default gate) that the baseline records; ``metrics=`` narrows it
      to (or names) the metrics to gate;
    - **their tolerances**: the gate's, where ``tolerances=`` does not override them;
    - **band + paired** (``gate.method``): with the scored ``conversations`` (e.g.
      ``run_suite(..., conversations=convs)``) and a baseline holding per-conversation
      values, each metric but safety also gets the paired test; without them, the
      band alone;
    - **inconclusive reported**: a helper cannot rerun, so the evidence given is its
      one look; an inconclusive row fails (its message says so) unless
      ``gate.inconclusive = "pass"``, and is in the returned rows either way.

    A keyless run (record mode none) is gated as the session gates it: unjudged
    metrics by their offline twins (:mod:`.fallback`).
    :func:`assert_in_band` stays the single-number helper.
    """
    from .fallback import keyless_gate

    cfg = _config(config)
    stored = baseline.suites.get(result.suite)
    if stored is None:
        raise AssertionError(f"suite {result.suite!r} is not in the baseline (has: {', '.join(baseline.suites) or 'none'})")
    if metrics is not None:
        gate = {m: cfg.gate.get(m, stored[m].tolerance if m in stored else 0.0) for m in metrics}
    else:
        # (a baseline recorded before forgotten_turn_share: forgetting gated on forgetfulness)
        gate = {m: t for m, t in where_recorded(cfg.gated_metrics(result.suite), stored).items() if m in stored}
        if not gate:
            raise AssertionError(
                f"nothing to gate: the baseline's suite {result.suite!r} records none of the gated metrics "
                f"({', '.join(cfg.gated_metrics(result.suite)) or 'none'}); name them with metrics=[...]"
            )
    gate.update({m: t for m, t in (tolerances or {}).items() if m in gate})
    convs = [c for c in (conversations or []) if c.suite == result.suite]
    keyless = keyless_gate(convs, {result.suite: gate})
    policy = cfg.gate_policy
    # one look: "rerun" cannot rerun here, so an inconclusive row fails as under "fail"; the look is
    # made at the level of the session's first (its alpha split over the reruns the policy allows),
    # so that the helper and the session print the same bounds
    rows = check(
        {result.suite: result}, baseline, gate, keyless.gates, convs=convs, method=policy.method,
        on_inconclusive="pass" if policy.inconclusive == "pass" else "fail", max_reruns=0,
        unstable_spread=policy.unstable_spread, ran=keyless.ran,
        alpha_looks=1 + (cfg.max_reruns if policy.inconclusive == "rerun" else 0),
    )
    bad = [r for r in rows if r.failed]
    if bad:
        raise AssertionError("\n".join(r.line() for r in bad))
    return rows


def _config(config: RagdiveConfig | str | Path | None) -> RagdiveConfig:
    from ..core.config import find_config_file, load_config

    if isinstance(config, RagdiveConfig):
        return config
    if config is not None:
        return load_config(Path(config).resolve())
    return load_config(find_config_file([Path.cwd()]), default_dir=Path.cwd())
