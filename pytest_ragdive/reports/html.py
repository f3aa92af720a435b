"""report.html: one self-contained page that renders a :class:`RunOutcome`.

Inline CSS, inline SVG charts and a few lines of inline JavaScript (the
verdict filter, opening a linked conversation); no external resource of any
kind, and a Content-Security-Policy that forbids loading one, so the page reads
the same offline, from a CI artifact. Every text that came from a run
(questions, answers, contexts, judge reasons, errors) is untrusted and escaped.

Sections: the verdict line and where the numbers come from; the gate, verdict
first, and what got worse and where (:mod:`.html_gate`); the metrics by
dimension; per-turn-index curves of each turn-level metric (does quality fall
as the conversation goes on?); metrics by question type and by role; the
validator's counts; any further result the outcome carries (the sharded
diagnosis's decomposition, rendered from its typed field); the LLM cost; and
the conversations, worst first and filterable by verdict (:mod:`.html_conv`:
evidence in the answers, the baseline's answers beside today's). A large run
shows the worst ``WORST`` in full and lists the rest, each in full on a page of
``PAGE`` (``report-conversations-N.html``, the same page layout).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..core.paths import atomic_open
from ..core.records import Conversation
from ..gate.outcome import RunOutcome, rendering
from ..gate.paired import value_of
from ..gate.ranking import VERDICTS, ConvVerdict, ranked
from ..metrics.registry import ARROW, METRICS
from .charts import PALETTE, e, line_chart
from .html_bits import badge as _badge
from .html_bits import cls as _cls
from .html_bits import f as _f
from .html_bits import table as _table
from .html_bits import td as _td
from .html_conv import conversation_body, conversation_html
from .html_gate import gate_section, jump_links, worse_section
from .text import by_dimension, status_text

__all__ = ["conversation_body", "iter_html", "render_html", "write_html"]

WORST = 100  # conversations shown in full on report.html; the rest are listed, in full on pages of PAGE
PAGE = 250

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
          "llm", "judge_calls", "validation", "diversity", "baseline_diff", "recorded_answers", "baseline_answers",
          "custom_metrics", "answers_changed"}


def _asset(name: str) -> str:
    return (resources.files("pytest_ragdive.reports") / "assets" / name).read_text(encoding="utf-8")


# -- sections -----------------------------------------------------------------


def _tone(outcome: RunOutcome) -> str:
    if outcome.failed or outcome.errored:
        return "bad"
    return "good" if outcome.status.value == "passed" else "plain"


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
    out = [f"<h1>{e(title)} {_badge(outcome.status.value)}</h1>",
           f'<p class="headline {_tone(outcome)}">{e(status_text(outcome))}</p>', jump_links(outcome),
           f'<p class="meta">{e(" · ".join(bits))}</p>']
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


def _metrics(outcome: RunOutcome) -> str:
    rows, classes = [], []
    for suite, res in outcome.suites.items():
        for dim, names in by_dimension(res.metrics):
            for i, name in enumerate(names):
                mv = res.metrics[name]
                ci = "n/a" if mv.ci_low is None or mv.ci_high is None else f"[{mv.ci_low:.3f}, {mv.ci_high:.3f}]"
                arrow = ARROW[METRICS[name].direction] if name in METRICS else ""
                rows.append([_td(suite), _td(dim if i == 0 else ""), _td(f"{name} {arrow}"), _td(_f(mv.value), True),
                             _td(ci, True), _td(mv.n, True), _td(", ".join(_f(v, ".3f") for v in mv.per_run), True)])
                classes.append("group-start" if i == 0 else "")
    counts = "; ".join(f"{s}: {r.conversations} conversation(s), {r.errors} errored, {r.runs} run(s)"
                       for s, r in outcome.suites.items())
    return (f'<h2 id="metrics">Metrics</h2><p class="meta">{e(counts)}</p>'
            + _table(["suite", "dimension", "metric", "value", "95% CI", "n", "per run"], rows, classes))


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


def page_name(n: int) -> str:
    """The file of the ``n``-th page of further conversations (1-based)."""
    return f"report-conversations-{n}.html"


def _toolbar(rows: list[tuple[Conversation, ConvVerdict, float]], outcome: RunOutcome) -> str:
    counts = {v: sum(1 for _, cv, _ in rows if cv == v) for v in VERDICTS}
    options = [f'<option value="all">all ({len(rows)})</option>'] + [
        f'<option value="{v}" title="{e(VERDICT_HELP[v])}">{v} ({counts[v]})</option>' for v in VERDICTS if counts[v]
    ]
    suites = sorted({c.suite for c in outcome.conversations})
    suite_opts = ['<option value="all">all suites</option>'] + [f'<option value="{e(s)}">{e(s)}</option>' for s in suites]
    return (
        '<div class="toolbar"><label>verdict <select id="verdict-filter">' + "".join(options) + "</select></label>"
        '<label>suite <select id="suite-filter">' + "".join(suite_opts) + "</select></label>"
        '<button type="button" id="expand-all">expand all</button><button type="button" id="collapse-all">collapse all</button>'
        f'<span><span id="conv-shown">{len(rows)}</span> shown</span></div>'
    )


def _metrics_of(outcome: RunOutcome) -> list[str]:
    return sorted({r.metric for r in outcome.gate or []}) or ["correctness", "answer_f1", "forgetfulness"]


def _one(outcome: RunOutcome, c: Conversation, v: ConvVerdict, g: float, bodies: Bodies | None) -> str:
    key = f"{c.suite}::{c.id}"
    base = outcome.baseline_answers.get(key)
    # the tag: only where a turn's answer differs from the recorded one (this session's first run)
    changed = outcome.answers_changed.get(c.key)
    return conversation_html(c, v, g, _metrics_of(outcome), bodies(c.key) if bodies is not None else None, base, changed)


def _conversations(outcome: RunOutcome, bodies: Bodies | None = None, worst: int = WORST, page: int = PAGE) -> Iterator[str]:
    """The conversations section, one conversation at a time (a large run's page is never one string):
    the ``worst`` first in full, the rest as one line each, linking to the page that holds it in full.
    ``bodies(key)``: a conversation's body rendered earlier (:func:`conversation_body`), or None."""
    rows = ranked(outcome)
    legend = "; ".join(f"{v}: {VERDICT_HELP[v]}" for v in VERDICTS)
    yield (f'<h2 id="conversations">Conversations</h2><p class="meta">Worst first. {e(legend)}.</p>{_toolbar(rows, outcome)}'
           '<div id="conversation-list">')
    for c, v, g in rows[:worst]:
        yield _one(outcome, c, v, g, bodies)
    yield "</div>"
    rest = rows[worst:]
    if rest:
        metrics = _metrics_of(outcome)
        yield (f'<h3 id="more">{len(rest)} more conversation(s)</h3><p class="meta">Listed here; each is shown in full '
               f"on its page ({page} per page, worst first).</p><ul class=\"conv-more\">")
        for i, (c, v, _) in enumerate(rest):
            key = ", ".join(f"{m} {_f(x, '.2f')}" for m in metrics if (x := value_of(c, m)) is not None)
            yield (f'<li class="conv-line" data-verdict="{v}" data-suite="{e(c.suite)}">{_badge(v)} '
                   f'<a href="{page_name(i // page + 1)}#conv-{e(_cls(c.key))}">{e(c.suite)}/{e(c.id)}</a> run {c.run} '
                   f'<span class="meta small">{e(key)}</span></li>')
        yield "</ul>"


def _pages(outcome: RunOutcome, bodies: Bodies | None, worst: int, page: int) -> Iterator[tuple[int, Iterator[str]]]:
    """The pages of the conversations beyond the ``worst``: (number, its pieces)."""
    rest = ranked(outcome)[worst:]
    total = (len(rest) + page - 1) // page
    for n in range(1, total + 1):
        chunk = rest[(n - 1) * page:n * page]

        def pieces(n: int = n, chunk: list[tuple[Conversation, ConvVerdict, float]] = chunk) -> Iterator[str]:
            nav = " · ".join(f'<a href="{page_name(k)}">{k}</a>' if k != n else f"<b>{k}</b>" for k in range(1, total + 1))
            yield _head(outcome, f"conversations, page {n} of {total}")
            yield (f'<h1>Conversations, page {n} of {total}</h1><p class="meta"><a href="report.html">back to the report</a> · '
                   f"pages: {nav}</p>{_toolbar(chunk, outcome)}<div id=\"conversation-list\">")
            for c, v, g in chunk:
                yield _one(outcome, c, v, g, bodies)
            yield "</div>" + _tail()

        yield n, pieces()


CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"


def _head(outcome: RunOutcome, title: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}: {e(outcome.status.value)}</title><style>{_asset('report.css')}</style></head>"
        f'<body data-status="{e(outcome.status.value)}">'
    )


def _tail() -> str:
    return f"<script>{_asset('report.js')}</script></body></html>\n"


def iter_html(outcome: RunOutcome, title: str = "ragdive quality gate", bodies: Bodies | None = None,
              worst: int = WORST, page: int = PAGE) -> Iterator[str]:
    """The page in pieces, in order (``"".join`` of them is :func:`render_html`)."""
    yield _head(outcome, title)
    yield from (_header(outcome, title), gate_section(outcome), worse_section(outcome), _metrics(outcome),
                _curves(outcome), _by_type(outcome), _by_role(outcome), _validation(outcome), _extra(outcome),
                _cost(outcome))
    yield from _conversations(outcome, bodies, worst, page)
    yield _tail()


@rendering
def render_html(outcome: RunOutcome, title: str = "ragdive quality gate") -> str:
    """The whole page as one string."""
    return "".join(iter_html(outcome, title))


@rendering
def write_html(report_dir: Path, outcome: RunOutcome, bodies: Bodies | None = None,
               worst: int = WORST, page: int = PAGE) -> Path:
    """Write ``report.html`` into ``report_dir`` (and, beyond the ``worst`` conversations,
    ``report-conversations-N.html`` pages of ``page`` each; stale pages of an earlier run
    are removed: those the manifest lists, :mod:`.manifest`); returns the report's path. ``bodies``: as for :func:`iter_html`
    (conversations held without their contexts, rendered when scored)."""
    from .manifest import owned, remember

    report_dir.mkdir(parents=True, exist_ok=True)
    for name in owned(report_dir) or ():  # the pages an earlier report wrote (the manifest says which)
        if name.startswith("report-conversations-"):
            (report_dir / name).unlink(missing_ok=True)
    path = report_dir / "report.html"
    with atomic_open(path) as fh:  # piece by piece: the page is never held whole
        for piece in iter_html(outcome, bodies=bodies, worst=worst, page=page):
            fh.write(piece)
    pages = []
    try:
        for n, pieces in _pages(outcome, bodies, worst, page):
            pages.append(report_dir / page_name(n))
            with atomic_open(pages[-1]) as fh:
                for piece in pieces:
                    fh.write(piece)
    finally:
        remember(report_dir, [path, *pages])
    return path
