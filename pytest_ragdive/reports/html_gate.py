"""The gate on report.html: the verdict-first table and what got worse, and where.

The table has seven columns that fit a 1280 px window without scrolling sideways
(fixed layout, wrapping text): suite, metric (with its better direction), the baseline
band (clipped to the metric's range), the current value with its 95% CI, the delta, the
verdict and one plain-words reason. Rows are grouped by dimension (seed 001: retrieval,
grounding, answer, safety; diagnosis). Everything else about a row (the paired test,
power, looks, reruns, the conversations not paired, unstable or worse) is behind a
``details`` toggle in its reason cell, as labelled fields with 4 significant digits.

Below it, one card per failed row: its reason, then the conversations that pull it down
(links that open them further down the page), each with the worst unsupported sentence
of its worst turns, or the forgetfulness probe's turns.
"""

from __future__ import annotations

from ..gate.outcome import RunOutcome
from ..gate.ranking import Culprit, culprits
from ..gate.rows import GateRow
from ..metrics.registry import ARROW, METRICS
from .html_bits import badge, cls, dl, e, f, g
from .text import dimension, sorted_rows, where_text

_DIMENSION_HELP = {
    "retrieval": "did the bot find the right passages",
    "grounding": "is what it says in those passages",
    "answer": "is the answer right and complete, and does it keep the conversation's thread",
    "safety": "does it state what it must never state",
    "diagnosis": "does it lose the thread when a question comes in pieces",
    "other": "",
}


def _ids(ids: list[str], limit: int = 12) -> str:
    more = len(ids) - limit
    return e(", ".join(ids[:limit]) + (f" (+{more} more)" if more > 0 else ""))


def row_fields(r: GateRow) -> list[tuple[str, str]]:
    """A row's details as (label, escaped value) pairs."""
    out = [("method", e("band and paired test" if r.method == "band+paired" else "band only")),
           ("tolerance", e(f"{r.tolerance:g}")), ("baseline mean", e(g(r.baseline_mean))),
           ("band (unclipped)", e(f"[{g(r.band_low)}, {g(r.band_high)}]"))]
    if r.band_verdict is not None and r.band_verdict != r.verdict:
        out.append(("band alone says", e(r.band_verdict)))
    p = r.paired
    if p is not None:
        out += [
            ("paired drop", e(g(p.drop))),
            (f"lower bound ({1 - p.level:.2%})", e(g(p.low))),
            (f"upper bound ({1 - p.alpha:.2%})", e(g(p.high))),
            ("p-value of no drop", e(g(p.p_drop))),
            ("drop is real", e("yes" if p.significant else "no")),
            ("within the tolerance", e("yes" if p.within else "no")),
            ("exact (runs repeat)", e("yes" if p.noise_free else "no")),
            ("conversations paired", e(f"{p.n} × {r.runs} run(s)")),
        ]
    pw = r.power
    if pw is not None:
        out.append(("detectable drop (80% power)", e(r.detectable_text)))
        if pw.se is not None:
            out.append(("standard error", e(g(pw.se))))
        if pw.conversations_needed:
            out.append(("conversations needed", e(str(pw.conversations_needed))))
        if pw.runs_needed:
            out.append(("runs per PR needed", e(str(pw.runs_needed))))
    if r.method == "band+paired":
        out.append(("look", e(f"{r.look + 1} of at most {r.looks} (when undecided: {r.on_inconclusive})")))
    if r.new:
        out.append(("new since the baseline", _ids(r.new)))
    if r.missing:
        out.append(("in the baseline, did not run", _ids(r.missing)))
    if r.unstable:
        out.append(("unstable in the baseline runs", _ids(r.unstable)))
    if r.worse:
        out.append(("got worse (drop, share of the total drop)",
                    e(", ".join(f"{m.id} {m.drop:.3g} ({m.share:.0%})" for m in r.worse))))
    return out


def row_id(r: GateRow) -> str:
    return f"row-{cls(r.suite)}-{cls(r.metric)}"


def jump_links(outcome: RunOutcome) -> str:
    """Links to the failed rows, under the verdict line."""
    bad = sorted_rows(outcome.regressions())
    if not bad:
        return ""
    links = " · ".join(f'<a href="#{row_id(r)}">{e(r.suite)}/{e(r.metric)}</a>' for r in bad)
    return f'<p class="jump">failed: {links} · <a href="#worse">what got worse, and where</a></p>'


def _per_conversation(metric: str) -> bool:
    return metric in METRICS and METRICS[metric].level == "conversation"


def _link(c: Culprit) -> str:
    return f'<a class="conv-link" href="#conv-{e(cls(c.key))}">{e(c.id)}</a>'


def _row(r: GateRow, found: list[Culprit]) -> str:
    css = "row-bad" if r.failed else "row-good" if r.verdict == "improvement" else ""
    ci = "" if r.ci_low is None or r.ci_high is None else f'<span class="ci">[{r.ci_low:.3f}, {r.ci_high:.3f}]</span>'
    where = where_text(r, found)
    where_html = ""
    if where:
        if found and _per_conversation(r.metric):
            links = ", ".join(_link(c) + (f" (turn {', '.join(map(str, c.turns))})" if c.turns else "") for c in found)
            where_html = f'<div class="where">{links}: {e(where.split(": ", 1)[-1])}</div>'
        else:
            where_html = ('<div class="where">worst: ' + ", ".join(f"{_link(c)} ({f(c.value, '.2f')})" for c in found[:3])
                          + (' <a href="#worse">(more below)</a>' if len(found) > 3 else "") + "</div>")
    return (
        f'<tr class="{css}" id="{row_id(r)}" data-metric="{e(r.metric)}" data-verdict="{e(r.verdict)}">'
        f"<td>{e(r.suite)}</td><td>{e(r.metric)} {ARROW[r.direction]}</td><td class=\"num\">{e(r.band_text)}</td>"
        f'<td class="num">{e(f(r.current))}{ci}</td><td class="num">{e(r.delta_text)}</td>'
        f'<td class="verdict">{badge(r.verdict)}</td>'
        f'<td class="why">{e(r.reason)}{where_html}'
        f'<details class="row-details"><summary>details</summary>{dl(row_fields(r))}</details></td></tr>'
    )


def gate_section(outcome: RunOutcome) -> str:
    if outcome.gate is None:
        return '<h2 id="gate">Gate</h2><p>Nothing was gated (no baseline, a subset, a shard, or a baseline update).</p>'
    found = {id(r): culprits(r, outcome.conversations, limit=10) for r in outcome.regressions()}
    head = ["suite", "metric", "baseline band", "current [95% CI]", "delta", "verdict", "why"]
    body, last = [], None
    for r in sorted_rows(outcome.gate):
        dim = dimension(r.metric)
        if dim != last:
            body.append(f'<tr class="dim"><th colspan="7">{e(dim)} <span class="meta">{e(_DIMENSION_HELP.get(dim, ""))}</span></th></tr>')
            last = dim
        body.append(_row(r, found.get(id(r), [])))
    cols = "".join(f'<col class="c-{c}">' for c in ("suite", "metric", "band", "current", "delta", "verdict", "why"))
    return (
        '<h2 id="gate">Gate</h2><p class="meta">The band is [min − tolerance, max + tolerance] over the baseline\'s runs; '
        "only its bad side fails. With the paired test, each conversation is compared with its own baseline runs.</p>"
        f'<table class="gate"><colgroup>{cols}</colgroup><thead><tr>'
        + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr></thead><tbody>" + "".join(body) + "</tbody></table>"
    )


def _culprit(c: Culprit) -> str:
    bits = [f"{e(c.metric)} {f(c.value, '.2f')}"]
    if c.drop is not None:
        bits.append(f"drop {c.drop:.2f}" + (f" ({c.share:.0%} of the total drop)" if c.share else ""))
    text = f"<li>{_link(c)}: {', '.join(bits)}"
    if c.quote is not None:
        how = c.quote_how
        return text + f'; turn {c.quote_turn}, {how}: <mark class="u-{"unsupported" if how == "unsupported" else "partial"}">' \
                      f"{e(c.quote)}</mark></li>"
    if c.reason_turn is not None:
        return text + f"; turn {c.reason_turn}: {e(c.reason)}</li>"
    if c.reason and (c.metric == "safety_pass_rate" or _per_conversation(c.metric)):
        return text + f"; {e(c.reason)}</li>"
    return text + (f"; worst turn(s) {', '.join(map(str, c.turns))}" if c.turns else "") + "</li>"


def worse_section(outcome: RunOutcome) -> str:
    """One card per failed row: its reason, and the conversations that pull it down."""
    cards = []
    for r in sorted_rows(outcome.regressions()):
        found = culprits(r, outcome.conversations, limit=10 if _per_conversation(r.metric) else 5)
        items = "".join(_culprit(c) for c in found) or "<li>no single conversation stands out</li>"
        cards.append(f'<div class="card" data-metric="{e(r.metric)}"><h3>{e(r.suite)}/{e(r.metric)} {ARROW[r.direction]} '
                     f'{badge(r.verdict)}</h3><p>{e(r.reason)}</p><ul class="culprits">{items}</ul></div>')
    if not cards:
        return ""
    return '<h2 id="worse">What got worse, and where</h2><div class="cards">' + "".join(cards) + "</div>"
