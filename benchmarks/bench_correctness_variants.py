"""Can a correctness that is only coverage agree better with people's completeness? Out of fold.

    python benchmarks/bench_correctness_variants.py --data ../shared/data/mtrag-human-dev.json

The shipped correctness is the coverage of the reference's facts (``grounding.correctness``
by a ``grounding.Rule`` that 5-fold cross-validation chooses from ``COVERAGE_GRID``:
``bench_human_agreement.py``). This benchmark asks whether a *family* of variants on top
of that coverage, each still a measure of how much of what the question needs the answer
states (never multiplied by faithfulness), agrees better with the median human
completeness rating of the MTRAG development half. Every family is a grid: the base rule
(the same 230 rules) times the family's own parameter, and the 5 folds (by task, the
folds of ``bench_human_agreement.py``) choose both inside their training tasks. The
figures are out of fold, with 95% intervals over tasks, and the paired difference with
the shipped variant and with every proxy is on the same resamples.

The families:

- ``passages``: ``(1 - w) x coverage + w x`` the coverage of the passages the reference
  draws on (the context windows that support a reference fact at 0.5 or more, by the
  plugin's support rule: what the question needs when the reference is terse);
- ``idf``: the facts' terms weighted by their inverse document frequency over the
  file's passages, instead of one each;
- ``question``: ``(1 - w) x coverage + w x`` the share of the question's terms the
  answer's units contain (an answer that addresses the question only partly);
- ``partial``: ``x (1 - p)`` for an answer that says it cannot answer part of the
  question (``text.has_abstention``; not answering at all already scores 0);
- ``length``: ``x min(1, answer terms / reference terms) ** a`` (information density);
- ``soft``: a fact term the answer does not state counts by the cosine of its word with
  the closest word of the answer (the embedded model), mapped onto [0, 1];
- ``all``: every family above (and the plain rule) in one grid: the folds choose the family too.

Every family includes its null (w, p or a = 0: the plain rule), so a fold that finds
nothing better keeps the plain coverage. The last table is a diagnostic, not a choice: the
same figures on the answers people rated fully faithful, and without the rated references.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_human_agreement import (  # noqa: E402
    COVERAGE_GRID,
    PROXIES,
    Rated,
    _cell,
    _rho,
    bootstrap,
    cross_validate,
    fold_of,
    load,
    question_coverage,
)

from pytest_ragdive.metrics.evidence import PARTIAL_SUPPORT  # noqa: E402
from pytest_ragdive.metrics.grounding import (  # noqa: E402
    SUPPORT_RULE,
    FactEvidence,
    Rule,
    correctness,
    coverage_of,
    fact_evidence,
    support,
    unit_evidence,
)
from pytest_ragdive.metrics.lexical import _terms  # noqa: E402
from pytest_ragdive.metrics.text import asserted_units, has_abstention, is_abstention, is_unanswerable, strip_citations  # noqa: E402

FAMILIES: dict[str, tuple[float, ...]] = {
    "passages": (0.25, 0.5, 0.75, 1.0),
    "idf": (1.0,),
    "question": (0.1, 0.25, 0.5),
    "partial": (0.1, 0.25, 0.5),
    "length": (0.25, 0.5, 1.0),
    "soft": (0.5, 0.6, 0.7),  # the cosine mapped to 0 (full at +0.3)
}


@dataclass
class Parts:
    """What the families need of one rated answer, from the plugin's own evidence."""

    plain: bool  # the rule's value stands (unanswerable reference, no answer, no fact)
    facts: list[FactEvidence]
    passages: list[FactEvidence]  # the answer's coverage of the passages the reference draws on
    idf: list[tuple[float, float]]  # per fact: (idf weight, idf-weighted lexical share)
    question: float
    partial: bool
    length: float
    soft: dict[float, list[float]]  # per floor: per fact, the soft lexical share


def drawn_on(facts: Sequence[str], contexts: Sequence[str]) -> list[str]:
    """The context windows that support a reference fact at PARTIAL_SUPPORT or more (SUPPORT_RULE), each once."""
    out: list[str] = []
    for ev in unit_evidence(facts, contexts):
        if ev is None:
            continue
        s = support(ev, SUPPORT_RULE)
        if s.source == "contexts" and s.score >= PARTIAL_SUPPORT - 1e-9 and s.context is not None and s.span:
            text = contexts[s.context][s.span[0]:s.span[1]]
            if text not in out:
                out.append(text)
    return out


def _soft_share(fact: str, have: set[str], floor: float) -> float:
    from pytest_ragdive.metrics.semantic import embedder

    terms = sorted(_terms(fact))
    miss = [t for t in terms if t not in have]
    if not miss or not have:
        return 1.0 if not miss else 0.0
    best = (embedder().embed(miss) @ embedder().embed(sorted(have)).T).max(axis=1)
    return (len(terms) - len(miss) + float(np.clip((best - floor) / 0.3, 0, 1).sum())) / len(terms)


def parts(r: Rated, idf: Callable[[str], float]) -> Parts:
    gt, answer = r.turn.ground_truth or "", r.turn.answer or ""
    facts = asserted_units(gt)
    units = [] if is_abstention(answer) else asserted_units(strip_citations(answer))
    fe = fact_evidence(facts, units)
    if is_unanswerable(gt) or not units or not fe:
        return Parts(True, [], [], [], 0.0, False, 0.0, {})
    have: set[str] = set().union(*(_terms(u) for u in units))
    needs = [u for w in drawn_on(facts, [c.text for c in r.turn.contexts]) for u in asserted_units(w)]
    weights = []
    for f in fe:
        ft = _terms(f.fact)
        w = sum(idf(t) for t in sorted(ft))  # sorted: the same sum whatever the hash seed
        weights.append((w, sum(idf(t) for t in sorted(ft & have)) / w))
    ref_terms: set[str] = set().union(*(_terms(f.fact) for f in fe))
    return Parts(
        False, fe, fact_evidence(needs, units) if needs else [], weights,
        question_coverage(r.turn.rag_input, answer), has_abstention(answer), len(have) / len(ref_terms),
        {a: [_soft_share(f.fact, have, a) for f in fe] for a in FAMILIES["soft"]},
    )


def value(plain: float | None, p: Parts, rule: Rule, family: str, a: float) -> float | None:
    """The family's variant for one answer (``plain``: the plugin's correctness by ``rule``)."""
    if p.plain or plain is None or family == "plain":
        return plain
    if family == "passages":
        return (1 - a) * plain + a * (coverage_of(p.passages, rule) if p.passages else plain)
    if family == "question":
        return (1 - a) * plain + a * p.question
    if family == "partial":
        return plain * (1 - a) if p.partial else plain
    if family == "length":
        return plain * min(1.0, p.length) ** a
    if family == "idf":
        total = sum(w for w, _ in p.idf)
        terms = sum(f.weight for f in p.facts)
        den = min(total, rule.cap * total / terms) if rule.cap else total
        return min(1.0, sum(w * rule.score(lex, f.cosine) for (w, lex), f in zip(p.idf, p.facts, strict=True)) / den)
    if family == "soft":
        soft = [FactEvidence(f.fact, f.weight, s, f.cosine) for f, s in zip(p.facts, p.soft[a], strict=True)]
        return coverage_of(soft, rule)
    raise ValueError(family)


Variant = tuple[Rule, str, float]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--splits", type=lambda v: [int(x) for x in v.split(",")], default=[7, 11, 23, 31, 47, 59],
                    help="fold seeds of the repeated cross-validation table (comma-separated)")
    args = ap.parse_args()
    if not args.data.is_file():
        sys.exit(f"--data: no such file: {args.data}")
    rows = load(args.data)
    comp = [r.human["completeness"] for r in rows]
    faith = [r.human["faithfulness"] for r in rows]
    folds = fold_of(rows, args.folds, args.seed, "task")

    docs = [d["text"] for d in json.loads(args.data.read_text())["documents"]]
    df: dict[str, int] = {}
    for d in docs:
        for t in _terms(d):
            df[t] = df.get(t, 0) + 1

    def idf(t: str) -> float:
        return math.log((len(docs) + 1) / (df.get(t, 0) + 1)) + 1

    pre = [parts(r, idf) for r in rows]
    plain = {rule: [correctness(r.turn.answer, r.turn.ground_truth, rule) for r in rows] for rule in COVERAGE_GRID}

    def grid(family: str) -> list[Variant]:
        return [(rule, "plain", 0.0) for rule in COVERAGE_GRID] + [
            (rule, family, a) for rule in COVERAGE_GRID for a in FAMILIES.get(family, ())
        ]

    grids = {"plain": grid("plain"), **{f: grid(f) for f in FAMILIES}}
    grids["all"] = list(dict.fromkeys(v for g in grids.values() for v in g))
    scored = {
        name: [[value(plain[rule][i], p, rule, fam, a) for i, p in enumerate(pre)] for rule, fam, a in variants]
        for name, variants in grids.items()
    }
    results = {}
    for name, variants in grids.items():
        cv = cross_validate(scored[name], comp, folds, args.folds)
        results[name] = (cv, [variants[c] for c in cv.chosen], variants[cv.refit])

    def rho(scores: Sequence[float | None], human: Sequence[float]) -> Callable[[np.ndarray], float]:
        return lambda idx: _rho(scores, human, idx)

    proxies = {p: [r.scores[p] for r in rows] for p in PROXIES}
    names = list(results)
    stats: list[Callable[[np.ndarray], float]] = []
    for name in names:
        oof = results[name][0].oof
        base = results["plain"][0].oof
        stats += [rho(oof, comp), rho(oof, faith)]
        stats.append(lambda i, o=oof: rho(o, comp)(i) - rho(o, faith)(i))
        stats.append(lambda i, o=oof, b=base: rho(o, comp)(i) - rho(b, comp)(i))
        stats += [lambda i, o=oof, s=s: rho(o, comp)(i) - rho(s, comp)(i) for s in proxies.values()]
    width = 4 + len(PROXIES)
    values = bootstrap(rows, stats, args.resamples, args.seed)

    def short(v: Variant) -> str:
        rule, fam, a = v
        return rule.label() + ("" if fam == "plain" else f"; {fam} {a:g}")

    print(f"{len(rows)} rated answers, {len({r.task for r in rows})} tasks; Spearman with the median human rating, "
          f"95% CI over tasks ({args.resamples} resamples, seed {args.seed}); {args.folds}-fold cross-validation by task\n")
    print("| family | variants | chosen in the folds | whole half | completeness | faithfulness | completeness - faithfulness | minus plain (completeness) |")
    print("|---|---|---|---|---|---|---|---|")
    for k, name in enumerate(names):
        cv, chosen, refit = results[name]
        v = values[k * width:(k + 1) * width]
        print(f"| {name} | {len(grids[name])} | " + "; ".join(short(c) for c in chosen) + f" | {short(refit)} | "
              f"{_cell(v[0])} | {_cell(v[1])} | {_cell(v[2], True)} | {_cell(v[3], True)} |")
    print("\nPaired difference with each proxy (Spearman with completeness, variant out of fold minus proxy):\n")
    print("| family | " + " | ".join(PROXIES) + " |")
    print("|---|" + "---|" * len(PROXIES))
    for k, name in enumerate(names):
        v = values[k * width + 4:(k + 1) * width]
        print(f"| {name} | " + " | ".join(_cell(x, True) for x in v) + " |")

    print("\nRepeated cross-validation: the out-of-fold Spearman with completeness under other splits of the tasks "
          "into folds (the fold seed), and its mean; the last column, the mean difference with plain:\n")
    print("| family | " + " | ".join(f"seed {s}" for s in args.splits) + " | mean | mean minus plain |")
    print("|---|" + "---|" * (len(args.splits) + 2))
    per_split = {
        name: [_rho(cross_validate(scored[name], comp, fold_of(rows, args.folds, s, "task"), args.folds).oof, comp)
               for s in args.splits]
        for name in names
    }
    for name in names:
        v, base = per_split[name], per_split["plain"]
        mean_diff = float(np.mean(np.subtract(v, base)))
        print(f"| {name} | " + " | ".join(f"{x:.3f}" for x in v) + f" | {np.mean(v):.3f} | {mean_diff:+.3f} |")

    print("\nDiagnostic (nothing chosen here): Spearman with completeness on subsets, out of fold:\n")
    subsets = {
        "every answer": [True] * len(rows),
        "rated fully faithful (median 4)": [r.human["faithfulness"] >= 4 for r in rows],
        "the rated references left out": [r.model != "reference" for r in rows],
    }
    series = {"plain": results["plain"][0].oof, "passages": results["passages"][0].oof, **proxies}
    print("| subset | n | " + " | ".join(series) + " |")
    print("|---|---|" + "---|" * len(series))
    for label, keep in subsets.items():
        idx = np.flatnonzero(keep)
        sub = [rows[i] for i in idx]
        sub_stats = [rho([s[i] for i in idx], [comp[i] for i in idx]) for s in series.values()]
        cells = bootstrap(sub, sub_stats, args.resamples, args.seed)
        print(f"| {label} | {len(idx)} | " + " | ".join(_cell(c) for c in cells) + " |")


if __name__ == "__main__":
    main()
