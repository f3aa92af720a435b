"""The sharded diagnosis' decomposition table, for the terminal and for summary.md."""

from __future__ import annotations

from ..core.results import SuiteResult
from ..reports.tables import text_table
from .records import QuestionEstimate, ShardedReport

__all__ = ["HEADER", "SCORE_NOTE", "decomposition_rows", "sharded_lines", "sharded_md"]

HEADER = ["condition", "mean score F1", "mean BEST F1", "aptitude", "unreliability", "attempts", "recall final",
          "recall cumul."]
#: what the score column is, under every table
SCORE_NOTE = ("score: BEST (the best answer attempt of the conversation), except RECAP: its recap turn; "
              "aptitude and unreliability are of the score")


def _f(x: float | None, fmt: str = ".3f") -> str:
    return "n/a" if x is None else format(x, fmt)


def _v(e: QuestionEstimate | None) -> str:
    return _f(None if e is None else e.value)


def _est(e: QuestionEstimate | None, pct: bool = False) -> str:
    if e is None or e.value is None:
        return "n/a"
    fmt = ".0%" if pct else "+.3f"
    ci = "" if e.ci_low is None or e.ci_high is None else f" [{format(e.ci_low, fmt)}, {format(e.ci_high, fmt)}]"
    return f"{format(e.value, fmt)}{ci}"


def decomposition_rows(r: ShardedReport) -> tuple[list[list[str]], list[tuple[str, str]]]:
    """(one row per condition, (name, value) pairs of the gap parts, recovery and coverage)."""
    rows = [
        [c.condition.upper(), _f(c.mean_score), _f(c.mean_best), _v(c.aptitude), _v(c.unreliability),
         _f(c.answer_attempt_rate, ".0%"), _f(c.recall_final, ".2f"), _f(c.recall_cumulative, ".2f")]
        for c in r.conditions.values()
    ]
    parts = [
        ("sharded_gap (FULL - SHARDED)", _est(r.gap)),
        ("wording (FULL - CONCAT)", _est(r.wording)),
        ("delivery (CONCAT - SHARDED)", _est(r.delivery)),
        ("CONCAT preservation (CONCAT / FULL; the study's criterion: 80%)", _est(r.concat_preservation, pct=True)),
    ]
    for k, v in r.recovery.items():
        where = " (on its recap turn)" if k == "recap" else ""
        parts.append((f"{k.upper()} recovery of the gap{where}", _est(v, pct=True)))
    if "recap" in r.recovery_best:
        parts.append(("RECAP recovery on BEST over the conversation (second figure)", _est(r.recovery_best["recap"], pct=True)))
    parts.append((
        "gap where every supporting doc was retrieved",
        f"{_est(r.gap_full_coverage)} ({_f(r.full_coverage_share, '.0%')} of pairs)",
    ))
    if r.gap_judged is not None:
        parts.append(("sharded_gap on the correctness judge (0/1)", _est(r.gap_judged)))
    if r.judge_gap_difference is not None:
        parts.append(("judge robustness: F1 gap - judged gap", _est(r.judge_gap_difference)))
        parts.append(("judge robustness: correlation of the two gaps over questions", _f(r.judge_gap_correlation, "+.2f")))
    return rows, parts


def sharded_lines(results: dict[str, SuiteResult]) -> list[str]:
    """Terminal lines: per suite with a sharded part, the table and the gap decomposition."""
    out: list[str] = []
    for suite, res in results.items():
        if res.sharded is None:
            continue
        rows, parts = decomposition_rows(res.sharded)
        out += ["", f"sharded diagnosis, suite {suite} ({res.sharded.runs} runs; 95% paired bootstrap CIs over questions):"]
        out += text_table(HEADER, rows)
        out.append(f"  ({SCORE_NOTE})")
        out += [f"  {name}: {value}" for name, value in parts]
    return out


def sharded_md(results: dict[str, SuiteResult]) -> list[str]:
    """summary.md section: the decomposition table and the response classes."""
    out: list[str] = []
    for suite, res in results.items():
        r = res.sharded
        if r is None:
            continue
        rows, parts = decomposition_rows(r)
        out += ["", f"## Sharded diagnosis: {suite}", "",
                f"{r.runs} runs per question; CIs: paired bootstrap over questions (all runs of a question together).", ""]
        out.append("| " + " | ".join(HEADER) + " |")
        out.append("|" + "---|" * len(HEADER))
        out += ["| " + " | ".join(row) + " |" for row in rows]
        out += ["", f"{SCORE_NOTE[0].upper()}{SCORE_NOTE[1:]}."]
        out += ["", "| decomposition | value [95% CI] |", "|---|---|"]
        out += [f"| {name} | {value} |" for name, value in parts]
        out += ["", "| condition | response classes (turns) |", "|---|---|"]
        for c in r.conditions.values():
            out.append(f"| {c.condition.upper()} | {', '.join(f'{k} {v}' for k, v in c.classes.items()) or 'n/a'} |")
        sh = r.conditions.get("sharded")
        if sh is not None and sh.recall_per_turn:
            out += ["", "SHARDED supporting-document recall by turn: "
                    + ", ".join(f"turn {k}: {_f(v, '.2f')}" for k, v in sh.recall_per_turn.items())]
    return out
