"""``ragdive import-review FILE...``: the ratings of an exported review sample,
reported per criterion as the RAG-DIVE study's Table 1 does (each rater's
share of "yes" per criterion), with the agreement between raters: percent
agreement and Cohen's kappa per pair, averaged over pairs. With ``--accept DRAFTS
--into GOLDEN`` (a review of ``draft-golden``'s drafts), the accepted conversations
move into the suite's golden file (:mod:`pytest_ragdive.sources.accept`). Imports no pytest.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..core.errors import ReviewError
from ..core.paths import read_text
from .review_export import CRITERIA, DIALOGUE_CRITERIA, TURN_CRITERIA

YES = {"1", "y", "yes", "true", "x", "✓", "ok"}
NO = {"0", "n", "no", "false"}
BLANK = {"", "-", "n/a", "na", "?"}
# the study's Table 1 (two testers, 200 turns), for reference
STUDY_TABLE_1 = {
    "Tester1": {"correct": 0.905, "answerable": 0.875, "plausible": 0.935, "diverse": 0.95, "coherent": 0.925},
    "Tester2": {"correct": 0.925, "answerable": 0.875, "plausible": 0.965, "diverse": 0.975, "coherent": 0.95},
}


class CriterionStats(BaseModel):
    """One criterion: each rater's share of yes (and count), and the agreement between raters."""

    model_config = ConfigDict(extra="forbid")

    level: str
    by_rater: dict[str, float | None] = {}
    rated: dict[str, int] = {}
    agreement: float | None = None  # mean pairwise share of items rated the same
    kappa: float | None = None  # mean pairwise Cohen's kappa
    paired_items: int = 0  # items rated by at least one pair


class ReviewSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    raters: list[str]
    items: dict[str, int]  # level -> items with at least one rating
    criteria: dict[str, CriterionStats]


def _value(raw: str, where: str) -> int | None:
    v = raw.strip().lower()
    if v in BLANK:
        return None
    if v in YES:
        return 1
    if v in NO:
        return 0
    raise ReviewError(f"{where}: expected yes/no (or 1/0, blank for not rated), got {raw!r}")


def read_ratings(paths: list[Path]) -> dict[str, dict[str, dict[str, int]]]:
    """rater -> item -> criterion -> 0/1, from one or more filled review CSVs."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for path in paths:
        try:
            fh = path.open(encoding="utf-8-sig", newline="")
        except OSError as err:
            raise ReviewError(f"review file {path} cannot be read: {err.strerror or err}") from None
        try:
            with fh:
                _read_file(path, fh, out)
        except UnicodeDecodeError:
            read_text(path, ReviewError)  # raises, naming the line and column of the byte
            raise
        except csv.Error as err:  # a cell over the csv module's field limit, a NUL byte
            raise ReviewError(f"review file {path} is not a review CSV: {err}") from None
    if not out:
        raise ReviewError(f"no ratings found in {', '.join(map(str, paths))}: fill the yes/no columns first")
    return out


def _read_file(path: Path, fh: Any, out: dict[str, dict[str, dict[str, int]]]) -> None:
    reader = csv.DictReader(fh)
    missing = [c for c in ("item", "level", *CRITERIA) if c not in (reader.fieldnames or [])]
    if missing:
        raise ReviewError(f"{path}: not a review file from export-review: missing column(s) {', '.join(missing)}")
    for row in reader:
        line = reader.line_num
        rater = (row.get("rater") or "").strip() or path.stem
        level = (row.get("level") or "").strip()
        if level not in ("turn", "dialogue"):
            raise ReviewError(f"{path}:{line}: column level: expected turn or dialogue, got {level!r}")
        allowed = TURN_CRITERIA if level == "turn" else DIALOGUE_CRITERIA
        ratings = {}
        for c in CRITERIA:
            v = _value(row.get(c) or "", f"{path}:{line}: column {c}")
            if v is None:
                continue
            if c not in allowed:
                raise ReviewError(f"{path}:{line}: {c} is rated per {'dialogue' if level == 'turn' else 'turn'}, "
                                  f"not on a {level} row")
            ratings[c] = v
        if not ratings:
            continue
        item = f"{level}:{row['item']}"
        mine = out.setdefault(rater, {})
        if item in mine:
            raise ReviewError(f"{path}:{line}: rater {rater!r} rated item {row['item']!r} twice")
        mine[item] = ratings


def _kappa(a: list[int], b: list[int]) -> float | None:
    n = len(a)
    if n == 0:
        return None
    po = sum(1 for x, y in zip(a, b, strict=True) if x == y) / n
    pa, pb = sum(a) / n, sum(b) / n
    pe = pa * pb + (1 - pa) * (1 - pb)
    if pe >= 1 - 1e-12:
        return 1.0 if po == 1 else None  # both raters constant: kappa undefined unless they agree
    return (po - pe) / (1 - pe)


def summarize(ratings: dict[str, dict[str, dict[str, int]]]) -> ReviewSummary:
    raters = sorted(ratings)
    stats: dict[str, CriterionStats] = {}
    for c in CRITERIA:
        level = "turn" if c in TURN_CRITERIA else "dialogue"
        st = CriterionStats(level=level)
        for r in raters:
            vals = [v[c] for v in ratings[r].values() if c in v]
            st.rated[r] = len(vals)
            st.by_rater[r] = sum(vals) / len(vals) if vals else None
        agree, kappas, items = [], [], set()
        for r1, r2 in itertools.combinations(raters, 2):
            common = sorted(i for i in ratings[r1] if c in ratings[r1][i] and c in ratings[r2].get(i, {}))
            if not common:
                continue
            a = [ratings[r1][i][c] for i in common]
            b = [ratings[r2][i][c] for i in common]
            items.update(common)
            agree.append(sum(1 for x, y in zip(a, b, strict=True) if x == y) / len(common))
            if (k := _kappa(a, b)) is not None:
                kappas.append(k)
        st.agreement = sum(agree) / len(agree) if agree else None
        st.kappa = sum(kappas) / len(kappas) if kappas else None
        st.paired_items = len(items)
        stats[c] = st
    levels = {lv: len({i for r in raters for i in ratings[r] if i.startswith(lv + ":")}) for lv in ("turn", "dialogue")}
    return ReviewSummary(raters=raters, items=levels, criteria=stats)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def summary_lines(s: ReviewSummary) -> list[str]:
    head = ["", *CRITERIA]
    rows = [[r] + [f"{_pct(s.criteria[c].by_rater[r])} ({s.criteria[c].rated[r]})" for c in CRITERIA] for r in s.raters]
    if len(s.raters) > 1:
        rows.append(["agreement"] + [_pct(s.criteria[c].agreement) for c in CRITERIA])
        rows.append(["Cohen's kappa"] + ["n/a" if s.criteria[c].kappa is None else f"{s.criteria[c].kappa:.2f}"
                                          for c in CRITERIA])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    lines = [
        f"{len(s.raters)} rater(s); {s.items['turn']} turn(s) and {s.items['dialogue']} dialogue(s) rated; "
        "share of yes per criterion (items rated):",
        "  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip(),
    ]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    study = "; ".join(f"{t} " + " ".join(_pct(v[c]) for c in CRITERIA) for t, v in STUDY_TABLE_1.items())
    lines.append(f"RAG-DIVE study, Table 1 (200 turns): {study}")
    if len(s.raters) < 2:
        lines.append("one rater: no agreement to report (give a second person a copy of the export)")
    return lines


def add_arguments(parser: argparse.ArgumentParser, command: str = "") -> None:
    parser.add_argument("files", nargs="+", type=Path, help="filled review CSV(s) from export-review, one per rater or with a rater column")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--accept", type=Path, default=None, metavar="DRAFTS",
                        help="the drafts file the CSV reviews (draft-golden's): move the accepted conversations "
                        "(every turn rated, no 'no') into --into")
    parser.add_argument("--into", type=Path, default=None, metavar="GOLDEN",
                        help="with --accept: the suite's golden conversations file that receives them")


def run(args: argparse.Namespace) -> int:
    if (args.accept is None) != (args.into is None):
        raise ReviewError("--accept DRAFTS and --into GOLDEN go together")
    ratings = read_ratings(args.files)
    summary = summarize(ratings)
    if args.format == "json":
        print(json.dumps(summary.model_dump(mode="json"), indent=2))
    else:
        print("\n".join(summary_lines(summary)))
    if args.accept is not None:
        from ..sources.accept import apply
        from ..sources.accept import summary as accept_summary

        decision = apply(ratings, args.accept, args.into)
        print(accept_summary(decision, args.accept, args.into))
    return 0
