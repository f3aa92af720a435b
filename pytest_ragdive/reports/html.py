"""report.html: one self-contained page that renders a :class:`RunOutcome`.

Inline CSS, inline SVG charts and a few lines of inline JavaScript (the
verdict filter); no external resource of any kind, and a Content-Security-Policy
that forbids loading one, so the page reads the same offline, from a CI
artifact. Every text that came from a run (questions, answers, contexts, judge
reasons, errors) is untrusted and escaped.

Sections: the status and where the numbers come from, the gate table, the
metrics, per-turn-index curves of each turn-level metric (does quality fall as
the conversation goes on?), metrics by question type and by role, the
validator's counts, any further result the outcome carries (the sharded
diagnosis's decomposition, rendered from its typed field), the LLM cost, and
every conversation (worst first, filterable by verdict) with its turns,
contexts, scores and judge reasons.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..core.paths import atomic_open
from ..core.records import Conversation, Turn
from ..gate.outcome import RunOutcome
from ..gate.paired import value_of
from ..gate.ranking import VERDICTS, ConvVerdict, ranked
from ..metrics.registry import ARROW, METRICS
from .charts import PALETTE, e, line_chart

# a conversation key -> its body rendered earlier (None: render it from the record)
Bodies = Callable[[str], "str | None"]
VERDICT_HELP = {
    "error": "did not run to the end (target or pipeline error): left out of the metrics",
    "failed": "failed its item (a safety violation, or no valid generated turn)",
    "below_band": "its own value of a metric that regressed in the gate lies outside the band, on the bad side "
                  "(a conversation that was always low is included: the band is the suite's)",
    "passed": "ran and passed its item",
}
# fields of RunOutcome rendered by a section of their own; any other non-empty
# field (e.g. the sharded diagnosis) is rendered by the generic section
_KNOWN = {"info", "status", "suites", "gate", "conversations", "notes", "fatal", "baseline", "baseline_path",
          "llm", "judge_calls", "validation", "diversity", "baseline_diff"}
_GATE_COLUMNS = {"suite", "metric", "direction", "baseline_mean", "band_low", "band_high", "tolerance", "current",
                 "delta", "verdict"}


def _f(x: float | None, fmt: str = ".4f") -> str:
    return "n/a" if x is None else format(x, fmt)


def _asset(name: str) -> str:
    return (resources.files("pytest_ragdive.reports") / "assets" / name).read_text(encoding="utf-8")


def _cls(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text.lower())


def _badge(text: str) -> str:
    return f'<span class="badge v-{_cls(text)}">{e(text)}</span>'


def _table(head: list[str], rows: list[list[str]], row_classes: list[str] | None = None) -> str:
    """``rows`` hold already-escaped cell HTML."""
    out = ["<table><thead><tr>", *(f"<th>{e(h)}</th>" for h in head), "</tr></thead><tbody>"]
    for i, r in enumerate(rows):
        cls = row_classes[i] if row_classes else ""
        out.append(f'<tr class="{e(cls)}">' + "".join(r) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


@lru_cache(maxsize=8192)
def _esc(text: str) -> str:
    """``e(text)`` of a text that repeats across conversations (metric names, retrieved contexts)."""
    return e(text)


def _td(text: object, num: bool = False) -> str:
    return f'<td class="num">{e(text)}</td>' if num else f"<td>{e(text)}</td>"




def _bad_side(metric: str, value: float) -> bool:
    """Whether a score is short of the best (below 1, or above 0 for lower-is-better metrics): drawn red."""
    spec = METRICS.get(metric)
    return value > 0 if spec is not None and spec.direction == "lower" else value < 1


# -- sections -----------------------------------------------------------------


def _header(outcome: RunOutcome, title: str) -> str:
    info = outcome.info
    models = ", ".join(f"{k}: {v}" for k, v in sorted(info.judge_models.items())) or "none"
    bits = [
        f"plugin {info.plugin_version or '?'}", f"config {info.config_hash or '?'}", f"backend {info.backend}",
        f"suites {', '.join(info.suites) or '-'}", f"{len(outcome.conversations)} of {info.planned} planned conversations",
        f"models: {models}",
    ]
    if info.shard:
        bits.append(f"shard {info.shard}")
    if info.subset:
        bits.append("a subset of the plan ran")
    if not info.completed:
        bits.append("interrupted")
    out = [f"<h1>{e(title)} {_badge(outcome.status.value)}</h1>", f'<p class="meta">{e(" · ".join(bits))}</p>']
    if outcome.baseline_path:
        out.append(f'<p class="meta">baseline written to {e(outcome.baseline_path)}</p>')
    if outcome.baseline_diff is not None and not outcome.baseline_diff.identical:
        from .baseline_text import diff_lines

        text = "\n".join(diff_lines(outcome.baseline_diff))
        out.append(f'<details class="baseline-diff"><summary>changes against the baseline it replaced</summary>'
                   f'<pre class="tb">{e(text)}</pre></details>')
    items = [f'<li class="fatal">ERROR: {e(f)}</li>' for f in outcome.fatal] + [f"<li>{e(n)}</li>" for n in outcome.notes]
    if items:
        out.append('<ul class="notes">' + "".join(items) + "</ul>")
    return "".join(out)


def _gate(outcome: RunOutcome) -> str:
    if outcome.gate is None:
        return '<h2 id="gate">Gate</h2><p>Nothing was gated (no baseline, a subset, a shard, or a baseline update).</p>'
    extra = [n for r in outcome.gate[:1] for n in type(r).model_fields if n not in _GATE_COLUMNS]
    head = ["suite", "metric", "baseline band", "tol", "baseline mean", "current", "delta", *extra, "verdict"]
    rows, classes = [], []
    for r in outcome.gate:
        cells = [_td(r.suite), _td(f"{r.metric} {ARROW[r.direction]}"), _td(r.band_text, True), _td(f"{r.tolerance:g}", True),
                 _td(_f(r.baseline_mean), True), _td(_f(r.current), True), _td(r.delta_text, True)]
        cells += [_td(_plain(getattr(r, n)), isinstance(getattr(r, n), (int, float))) for n in extra]
        cells.append(f"<td>{_badge(r.verdict)}</td>")
        rows.append(cells)
        classes.append("row-bad" if r.failed else "row-good" if r.verdict == "improvement" else "")
    bad = len(outcome.regressions())
    return (f'<h2 id="gate">Gate</h2><p>{bad} of {len(outcome.gate)} gated metric(s) failed. The band is '
            "[min − tolerance, max + tolerance] over the baseline's runs; only its bad side fails.</p>"
            + _table(head, rows, classes))


def _metrics(outcome: RunOutcome) -> str:
    rows = []
    for suite, res in outcome.suites.items():
        for name, mv in res.metrics.items():
            ci = "n/a" if mv.ci_low is None or mv.ci_high is None else f"[{mv.ci_low:.3f}, {mv.ci_high:.3f}]"
            arrow = ARROW[METRICS[name].direction] if name in METRICS else ""
            rows.append([_td(suite), _td(f"{name} {arrow}"), _td(_f(mv.value), True), _td(ci, True), _td(mv.n, True),
                         _td(", ".join(_f(v, ".3f") for v in mv.per_run), True)])
    counts = "; ".join(f"{s}: {r.conversations} conversation(s), {r.errors} errored, {r.runs} run(s)"
                       for s, r in outcome.suites.items())
    return (f'<h2 id="metrics">Metrics</h2><p class="meta">{e(counts)}</p>'
            + _table(["suite", "metric", "value", "95% CI", "n", "per run"], rows))


def _figure(metric: str, series: list[tuple[str, dict[int, float]]]) -> str:
    arrow = ARROW[METRICS[metric].direction] if metric in METRICS else ""
    return (f'<figure class="chart"><figcaption>{e(metric)} {arrow} by turn</figcaption>'
            f"{line_chart(series, label=metric)}</figure>")


def _curves(outcome: RunOutcome) -> str:
    by_metric: dict[str, list[tuple[str, dict[int, float]]]] = defaultdict(list)
    for suite, res in outcome.suites.items():
        for name, mv in res.metrics.items():
            pts = {int(k): v for k, v in mv.per_turn_index.items() if v is not None}
            if len(pts) >= 2:
                by_metric[name].append((suite, pts))
    if not by_metric:
        return ""
    suites = list(dict.fromkeys(s for series in by_metric.values() for s, _ in series))
    legend = "".join(f'<span><i style="background:{PALETTE[n % len(PALETTE)]}"></i>{e(s)}</span>' for n, s in enumerate(suites))
    charts = "".join(_figure(m, by_metric[m]) for m in sorted(by_metric))
    return (f'<h2 id="curves">By turn index</h2><p>Mean of each turn-level metric at each turn number '
            f'(does quality fall as the conversation goes on?).</p><div class="legend">{legend}</div>'
            f'<div class="charts">{charts}</div>')


def _by_type(outcome: RunOutcome) -> str:
    out = []
    for suite, res in outcome.suites.items():
        names = [n for n, mv in res.metrics.items() if mv.per_question_type]
        types = sorted({t for n in names for t in res.metrics[n].per_question_type})
        if not names or len(types) < 2:
            continue
        rows = [[_td(n)] + [_td(_f(res.metrics[n].per_question_type.get(t), ".3f"), True) for t in types] for n in names]
        out.append(f"<h3>{e(suite)}</h3>" + _table(["metric", *types], rows))
    return '<h2 id="types">By question type</h2>' + "".join(out) if out else ""


def _by_role(outcome: RunOutcome) -> str:
    out = []
    for suite, res in outcome.suites.items():
        convs = [c for c in outcome.conversations if c.suite == suite and c.error is None]
        roles = sorted({c.role or "-" for c in convs})
        if len(roles) < 2:
            continue
        names = list(res.metrics)
        rows = []
        for role in roles:
            mine = [c for c in convs if (c.role or "-") == role]
            cells = [_td(role), _td(len(mine), True)]
            for n in names:
                vals = [v for c in mine if (v := value_of(c, n)) is not None]
                cells.append(_td(_f(sum(vals) / len(vals) if vals else None, ".3f"), True))
            rows.append(cells)
        out.append(f"<h3>{e(suite)}</h3>" + _table(["role", "conversations", *names], rows))
    return ('<h2 id="roles">By role</h2><p class="meta">Mean over each role\'s conversations.</p>' + "".join(out)) if out else ""


def _validation(outcome: RunOutcome) -> str:
    out = []
    cols = ("candidates", "invalid", "regenerations", "recovered", "dropped", "flagged", "validator_errors", "turns")
    for suite, v in outcome.validation.items():
        rows = [[_td(role)] + [_td(getattr(c, k), True) for k in cols] for role, c in [*v.by_role.items(), ("all", v)]]
        out.append(f"<h3>{e(suite)}</h3>" + _table(["role", *cols], rows))
        checks = ", ".join(f"{k} {n}" for k, n in sorted(v.by_check.items()) if n)
        if checks:
            out.append(f"<p>Failed checks: {e(checks)}</p>")
        div = outcome.diversity.get(suite) or {}
        if div:
            idx = sorted(div, key=int)
            out.append("<p>Share of distinct questions across runs, by turn:</p>"
                       + _table([f"turn {int(i) + 1}" for i in idx], [[_td(_f(div[i], ".2f"), True) for i in idx]]))
    return '<h2 id="validation">Generated conversations (validator)</h2>' + "".join(out) if out else ""


def _plain(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    if value is None:
        return "n/a"
    return str(value)


def _generic(value: Any, depth: int = 0) -> str:
    """Any record as nested tables (for typed results this module has no section for)."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, dict) and value and depth < 4:
        rows = [[_td(k), f"<td>{_generic(v, depth + 1)}</td>"] for k, v in value.items()]
        return _table(["", ""], rows)
    if isinstance(value, list) and value and depth < 4:
        return "<ul>" + "".join(f"<li>{_generic(v, depth + 1)}</li>" for v in value) + "</ul>"
    return e(_plain(value))


def _extra(outcome: RunOutcome) -> str:
    out = []
    for name in type(outcome).model_fields:
        value = getattr(outcome, name)
        if name in _KNOWN or not value:
            continue
        title = "Sharded diagnosis" if "shard" in name or "decompos" in name else name.replace("_", " ").capitalize()
        out.append(f'<h2 id="x-{e(name)}" class="extra" data-field="{e(name)}">{e(title)}</h2>{_generic(value)}')
    return "".join(out)


def _cost(outcome: RunOutcome) -> str:
    out = []
    if outcome.llm is not None and outcome.llm.roles:
        rows = []
        for role, rs in sorted(outcome.llm.roles.items()):
            for model, s in sorted(rs.models.items()):
                rows.append([_td(role), _td(model), _td(s.calls, True), _td(s.requests, True), _td(s.cache_hits, True),
                             _td(s.cache_misses, True), _td(s.prompt_tokens, True), _td(s.completion_tokens, True),
                             _td("unknown" if s.cost_usd is None else f"{s.cost_usd:.4f}", True)])
        total = outcome.llm.total()
        cost = "unknown" if total.cost_usd is None else f"${total.cost_usd:.4f}"
        out.append(f"<p>{total.calls} calls, {total.requests} requests, {total.prompt_tokens + total.completion_tokens} "
                   f"tokens, {e(cost)}; cache: {e(outcome.llm.cache.summary())}</p>")
        out.append(_table(["role", "model", "calls", "requests", "cache hits", "misses", "prompt tok", "compl tok", "USD"], rows))
    if outcome.judge_calls is not None:
        jc = outcome.judge_calls
        per_model = ", ".join(f"{m}: {n}" for m, n in sorted(jc.by_model.items())) or "none"
        out.append(f"<p>Judge calls: {jc.turn} per-turn + {jc.conversation} per-conversation, re-judged by the cascade "
                   f"{jc.rejudged}, cached {jc.cached}; by model: {e(per_model)}</p>")
    return '<h2 id="cost">LLM cost</h2>' + "".join(out) if out else ""


# -- conversations ------------------------------------------------------------


def _field(label: str, text: str | None) -> str:
    if not text:
        return ""
    return f'<div class="field"><b>{e(label)}</b><span class="text">{e(text)}</span></div>'


def _scores(scores: dict[str, float | None], verdicts: dict[str, Any]) -> str:
    """Scores as compact chips (bad side marked), then each judge reason."""
    chips = "".join(
        f'<span class="chip{" chip-bad" if v is not None and _bad_side(n, v) else ""}" data-metric="{(en := _esc(n))}">'
        f"{en} <b>{_f(v, '.3f')}</b></span>"
        for n, v in scores.items()
    )
    reasons = "".join(
        f"<li><b>{e(n)}</b>: {e(v.reason)}" + (f' <span class="meta">({e(v.model)})</span>' if v.model else "") + "</li>"
        for n, v in verdicts.items()
        if v.reason
    )
    return (f'<div class="chips">{chips}</div>' if chips else "") + (f'<ul class="reasons">{reasons}</ul>' if reasons else "")


def _contexts(turn: Turn) -> str:
    if not turn.contexts:
        return '<div class="field"><b>retrieved contexts</b><span class="text">none</span></div>'
    items = "".join(
        f"<li><b>{rank}. {_esc(c.id)}</b> (doc {_esc(c.source_id)}{'' if c.score is None else f', score {c.score:.3f}'})"
        f"<br>{_esc(c.text)}</li>"
        for rank, c in enumerate(turn.contexts, 1)
    )
    rel = f", relevant: {', '.join(turn.relevant_doc_ids)}" if turn.relevant_doc_ids else ""
    return (f'<details class="ctx"><summary>{len(turn.contexts)} retrieved context(s){e(rel)}</summary>'
            f"<ol>{items}</ol></details>")


def _turn(turn: Turn) -> str:
    bad = any(v is not None and _bad_side(n, v) and n in ("correctness", "safety_pass_rate") for n, v in turn.scores.items())
    parts = [
        f'<div class="turn{" turn-bad" if bad else ""}" data-turn="{turn.index + 1}">',
        f"<h3>Turn {turn.index + 1} <span class=\"meta\">{e(turn.question_type)}"
        f"{'' if turn.latency_s is None else f' · {turn.latency_s:.2f} s'}{' · ' + e(', '.join(turn.flags)) if turn.flags else ''}</span></h3>",
        _field("question", turn.rag_input),
        _field("stand-alone question", turn.standalone_question if turn.standalone_question != turn.rag_input else ""),
        _field("answer", turn.answer if turn.answer is not None else "(no answer)"),
        _field("ground truth", turn.ground_truth),
        _field("stand-alone answer", turn.standalone_answer),
        _field("citations", ", ".join(turn.citations)),
        _field("must not state", "; ".join(turn.negative_assertions)),
        _contexts(turn),
        _scores(turn.scores, turn.verdicts),
        "</div>",
    ]
    return "".join(parts)


def conversation_body(conv: Conversation) -> str:
    """One conversation's body on the page (its fields, scores and turns): what does not
    depend on the gate, so it can be rendered as soon as the conversation is scored."""
    body = [
        _field("error", conv.error),
        _field("failures", "\n".join(conv.failures)),
        _field("document", conv.document_id),
        _field("category", " / ".join(x for x in (conv.category, conv.difficulty) if x)),
    ]
    if conv.traceback:
        body.append(f'<details><summary>traceback</summary><pre class="tb">{e(conv.traceback)}</pre></details>')
    if conv.scores or conv.verdicts:
        body.append("<h3>Conversation scores</h3>" + _scores(conv.scores, conv.verdicts))
    body += [_turn(t) for t in conv.turns]
    return "".join(body)


def _conversation(conv: Conversation, verdict: ConvVerdict, goodness: float, metrics: list[str], body: str | None = None) -> str:
    key = ", ".join(f"{m} {_f(v, '.2f')}" for m in metrics if (v := value_of(conv, m)) is not None)
    head = (f"{_badge(verdict)} <b>{e(conv.suite)}/{e(conv.id)}</b> run {conv.run} · {len(conv.turns)} turn(s)"
            f"{' · role ' + e(conv.role) if conv.role else ''} · {e(conv.source)}"
            f' <span class="meta small">{e(key)}</span>')
    if body is None:
        body = conversation_body(conv)
    return (f'<details class="conv" data-verdict="{verdict}" data-suite="{e(conv.suite)}" data-goodness="{goodness:.4f}" '
            f'id="conv-{e(_cls(conv.key))}"><summary>{head}</summary><div class="conv-body">{body}</div></details>')


def _conversations(outcome: RunOutcome, bodies: Bodies | None = None) -> Iterator[str]:
    """The conversations section, one conversation at a time (a large run's page is never one string).
    ``bodies(key)``: a conversation's body rendered earlier (:func:`conversation_body`), or None."""
    rows = ranked(outcome)
    metrics = sorted({r.metric for r in outcome.gate or []}) or ["correctness", "answer_f1", "forgetfulness"]
    counts = {v: sum(1 for _, cv, _ in rows if cv == v) for v in VERDICTS}
    options = [f'<option value="all">all ({len(rows)})</option>'] + [
        f'<option value="{v}" title="{e(VERDICT_HELP[v])}">{v} ({counts[v]})</option>' for v in VERDICTS if counts[v]
    ]
    suites = sorted({c.suite for c in outcome.conversations})
    suite_opts = ['<option value="all">all suites</option>'] + [f'<option value="{e(s)}">{e(s)}</option>' for s in suites]
    toolbar = (
        '<div class="toolbar"><label>verdict <select id="verdict-filter">' + "".join(options) + "</select></label>"
        '<label>suite <select id="suite-filter">' + "".join(suite_opts) + "</select></label>"
        '<button type="button" id="expand-all">expand all</button><button type="button" id="collapse-all">collapse all</button>'
        f'<span><span id="conv-shown">{len(rows)}</span> shown</span></div>'
    )
    legend = "; ".join(f"{v}: {VERDICT_HELP[v]}" for v in VERDICTS)
    yield (f'<h2 id="conversations">Conversations</h2><p class="meta">Worst first. {e(legend)}.</p>{toolbar}'
           '<div id="conversation-list">')
    for c, v, g in rows:
        yield _conversation(c, v, g, metrics, bodies(c.key) if bodies is not None else None)
    yield "</div>"


CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"


def iter_html(outcome: RunOutcome, title: str = "ragdive quality gate", bodies: Bodies | None = None) -> Iterator[str]:
    """The page in pieces, in order (``"".join`` of them is :func:`render_html`)."""
    yield (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}: {e(outcome.status.value)}</title><style>{_asset('report.css')}</style></head>"
        f'<body data-status="{e(outcome.status.value)}">'
    )
    yield from (_header(outcome, title), _gate(outcome), _metrics(outcome), _curves(outcome), _by_type(outcome),
                _by_role(outcome), _validation(outcome), _extra(outcome), _cost(outcome))
    yield from _conversations(outcome, bodies)
    yield f"<script>{_asset('report.js')}</script></body></html>\n"


def render_html(outcome: RunOutcome, title: str = "ragdive quality gate") -> str:
    """The whole page as one string."""
    return "".join(iter_html(outcome, title))


def write_html(report_dir: Path, outcome: RunOutcome, bodies: Bodies | None = None) -> Path:
    """Write ``report.html`` into ``report_dir``; returns its path. ``bodies``: as for
    :func:`iter_html` (conversations held without their contexts, rendered when scored)."""
    report_dir.mkdir(parents=True, exist_ok=True)
    path = report_dir / "report.html"
    with atomic_open(path) as fh:  # piece by piece: the page is never held whole
        for piece in iter_html(outcome, bodies=bodies):
            fh.write(piece)
    return path
