"""One conversation on report.html: its turns with the evidence drawn into the answer,
and, where the gate failed, the baseline's answer beside today's.

- Every answer shows its asserted units: an unsupported one highlighted (red), a partly
  supported one underlined (amber); hovering a unit shows its support and the
  supporting span (the retrieved context's id and sentence), and the turn's evidence
  list (open on a turn with an unsupported unit) says the same in full, with the
  reference facts correctness covered. Judge reasons follow the scores.
- A forgetful turn shows its stand-alone answer (asked in a fresh chat) beside its
  in-conversation answer.
- :func:`since_baseline`: for a conversation that pulls a failed metric the wrong way,
  each turn's baseline answer and today's side by side, the changed words marked, with
  both sides' values of the gated metrics.

:func:`conversation_body` depends on the conversation alone (rendered once it is
scored, for conversations held without their contexts); the rest needs the gate.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from ..core.records import Conversation, Support, Turn
from ..core.results import AnswerConversation
from ..gate.paired import value_of
from ..gate.ranking import ConvVerdict
from ..metrics.registry import METRICS
from .html_bits import bad_side, badge, cls, e, esc, f

_TOKEN_RE = re.compile(r"\s+|\S+")


def _field(label: str, text: str | None, raw: bool = False) -> str:
    if not text:
        return ""
    return f'<div class="field"><b>{e(label)}</b><span class="text">{text if raw else e(text)}</span></div>'


def _title(u: Support) -> str:
    if u.verdict == "supported":
        where = "the conversation so far" if u.by == "conversation" else (u.context_id or "the contexts")
        return f"supported ({u.score:.2f}) by {where}: “{u.span}”" if u.span else f"supported ({u.score:.2f})"
    text = f"{u.verdict} ({u.score:.2f})"
    if u.missing:
        text += f": no source holds “{', '.join(u.missing)}”"
    if u.span:
        text += f"; closest: {u.context_id or 'the conversation'}: “{u.span}”"
    return text


def marked(text: str, units: list[Support] | None = None, changed: set[int] | None = None, tag: str = "ins") -> str:
    """``text`` as HTML: each located unit in a span classed by its verdict (title: its
    support and span), the words whose index is in ``changed`` wrapped in ``<tag>``."""
    spans = sorted((u for u in units or [] if u.start is not None and u.end is not None), key=lambda u: u.start or 0)
    if not changed:  # (every answer held): the same HTML, escaped a stretch at a time rather than a word
        return _marked_units(text, spans)
    out: list[str] = []
    k = 0  # the next unit
    open_unit: Support | None = None
    word = 0
    for m in _TOKEN_RE.finditer(text):
        a, tok = m.start(), m.group()
        if open_unit is not None and a >= (open_unit.end or 0):
            out.append("</span>")
            open_unit = None
        while k < len(spans) and (spans[k].end or 0) <= a:
            k += 1
        if open_unit is None and k < len(spans) and (spans[k].start or 0) <= a < (spans[k].end or 0) and not tok.isspace():
            open_unit = spans[k]
            out.append(f'<span class="unit u-{open_unit.verdict}" title="{e(_title(open_unit))}">')
        if tok.isspace():
            out.append(e(tok))
            continue
        piece = e(tok)
        out.append(f"<{tag}>{piece}</{tag}>" if changed and word in changed else piece)
        word += 1
    if open_unit is not None:
        out.append("</span>")
    return "".join(out)


def _marked_units(text: str, spans: list[Support]) -> str:
    """:func:`marked` with no changed words: the text between two tags escaped at once
    (escaping is per character, so the page is the same as escaping word by word)."""
    if not spans:
        return e(text)
    out: list[str] = []
    pos = 0  # text[:pos] is in out
    k = 0
    open_unit: Support | None = None
    for m in _TOKEN_RE.finditer(text):
        a = m.start()
        if open_unit is not None and a >= (open_unit.end or 0):
            out += [e(text[pos:a]), "</span>"]
            pos, open_unit = a, None
        while k < len(spans) and (spans[k].end or 0) <= a:
            k += 1
        if k == len(spans) and open_unit is None:
            break  # no unit left to open: the rest is plain text
        if open_unit is None and (spans[k].start or 0) <= a < (spans[k].end or 0) and not m.group().isspace():
            open_unit = spans[k]
            out += [e(text[pos:a]), f'<span class="unit u-{open_unit.verdict}" title="{e(_title(open_unit))}">']
            pos = a
    out.append(e(text[pos:]))
    if open_unit is not None:
        out.append("</span>")
    return "".join(out)


def _evidence(turn: Turn) -> str:
    ev = turn.evidence
    if ev is None or not ev.support:
        return ""
    bad = [u for u in ev.support if u.verdict != "supported"]
    faith = turn.scores.get("faithfulness")
    head = (f"why faithfulness {f(faith, '.2f')}: " if faith is not None else "") + (
        f"{len(bad)} of {len(ev.support)} statement(s) not fully supported" if bad else f"all {len(ev.support)} statement(s) supported")
    items = []
    for u in ev.support:
        if u.by == "none":
            src = "in no retrieved context"
        else:
            src = "restates the conversation" if u.by == "conversation" else f"context <b>{esc(u.context_id or '?')}</b>"
        span = f'<div class="span">{src}: “{esc(u.span)}”</div>' if u.span else f'<div class="span">{src}</div>'
        miss = f'<div class="miss">no source holds: {e(", ".join(u.missing))}</div>' if u.missing and u.verdict != "supported" else ""
        items.append(f'<li class="u-{u.verdict}"><span class="sv sv-{u.verdict}">{u.verdict} {u.score:.2f}</span> '
                     f'“{e(u.text)}”{span}{miss}</li>')
    rule = ev.support[0].rule
    judged = turn.verdicts.get("faithfulness")
    note = f' <span class="meta">({e(rule)} rule; the judge scored it: see its reason below)</span>' if judged and judged.model else ""
    return (f'<details class="evidence"{" open" if bad else ""}><summary>{e(head)}{note}</summary>'
            f'<ol>{"".join(items)}</ol></details>')


def _reference(turn: Turn) -> str:
    ev = turn.evidence
    if not turn.ground_truth:
        return ""
    if ev is None or not ev.reference:
        return _field("ground truth", turn.ground_truth)
    parts = []
    for c in ev.reference:
        tail = "" if c.covered >= 1 else f" (answer states {c.covered:.0%}; missing: {', '.join(c.missing)})"
        parts.append(f'<span class="fact{" fact-miss" if c.covered < 1 else ""}">{e(c.text)}</span>'
                     + (f'<span class="meta">{e(tail)}</span>' if tail else ""))
    return _field("ground truth", " ".join(parts), raw=True)


def _scores(scores: dict[str, float | None], verdicts: dict[str, Any]) -> str:
    """Scores as compact chips (bad side marked), then each judge reason."""
    chips = "".join(
        f'<span class="chip{" chip-bad" if v is not None and bad_side(n, v) else ""}" data-metric="{(en := esc(n))}">'
        f"{en} <b>{f(v, '.3f')}</b></span>"
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
        f"<li><b>{rank}. {esc(c.id)}</b> (doc {esc(c.source_id)}{'' if c.score is None else f', score {c.score:.3f}'})"
        f"<br>{esc(c.text)}</li>"
        for rank, c in enumerate(turn.contexts, 1)
    )
    rel = f", relevant: {', '.join(turn.relevant_doc_ids)}" if turn.relevant_doc_ids else ""
    return (f'<details class="ctx"><summary>{len(turn.contexts)} retrieved context(s){e(rel)}</summary>'
            f"<ol>{items}</ol></details>")


def _answer(turn: Turn) -> str:
    if turn.answer is None:
        return _field("answer", "(no answer)")
    units = turn.evidence.support if turn.evidence is not None else None
    if "forgetful" in turn.flags and turn.standalone_answer is not None:
        return ('<div class="pair forgot"><div class="side"><b>in the conversation (wrong)</b>'
                f'<div class="text">{marked(turn.answer, units)}</div></div>'
                '<div class="side"><b>the same question asked stand-alone, in a fresh chat (right)</b>'
                f'<div class="text">{e(turn.standalone_answer)}</div></div></div>')
    return _field("answer", marked(turn.answer, units), raw=True) + _field("stand-alone answer", turn.standalone_answer)


def _turn(turn: Turn) -> str:
    bad = any(v is not None and bad_side(n, v) and n in ("correctness", "safety_pass_rate") for n, v in turn.scores.items())
    parts = [
        f'<div class="turn{" turn-bad" if bad else ""}" data-turn="{turn.index + 1}">',
        f"<h3>Turn {turn.index + 1} <span class=\"meta\">{e(turn.question_type)}"
        f"{'' if turn.latency_s is None else f' · {turn.latency_s:.2f} s'}{' · ' + e(', '.join(turn.flags)) if turn.flags else ''}</span></h3>",
        _field("question", turn.rag_input),
        _field("stand-alone question", turn.standalone_question if turn.standalone_question != turn.rag_input else ""),
        _answer(turn),
        _evidence(turn),
        _reference(turn),
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


# -- since the baseline ---------------------------------------------------------


def word_changes(old: str, new: str) -> tuple[set[int], set[int]]:
    """Indexes of the words of ``old`` removed and of ``new`` inserted (word-level diff)."""
    a, b = old.split(), new.split()
    gone: set[int] = set()
    added: set[int] = set()
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op in ("replace", "delete"):
            gone.update(range(i1, i2))
        if op in ("replace", "insert"):
            added.update(range(j1, j2))
    return gone, added


def _delta_chips(base: dict[str, float | None], now: dict[str, float | None], only_changed: bool = False) -> str:
    """One chip per metric: its baseline value, today's, the change (worse: red)."""
    out = []
    for m in base:
        b, v = base.get(m), now.get(m)
        if (b is None and v is None) or (only_changed and b is not None and v is not None and abs(v - b) < 5e-4):
            continue
        d = "" if b is None or v is None or abs(v - b) < 5e-4 else f" ({v - b:+.2f})"
        lower = m in METRICS and METRICS[m].direction == "lower"
        bad = v is not None and b is not None and (v > b + 5e-4 if lower else v < b - 5e-4)
        out.append(f'<span class="chip{" chip-bad" if bad else ""}">{esc(m)} {f(b, ".2f")} → <b>{f(v, ".2f")}</b>{e(d)}</span>')
    return f'<div class="chips">{"".join(out)}</div>' if out else ""


def since_baseline(conv: Conversation, base: AnswerConversation) -> str:
    """Each turn's baseline answer beside today's (changed words marked), with both sides'
    values of the gated metrics; unchanged turns are named, not repeated."""
    rows, same = [], []
    for t in conv.turns:
        bt = base.turns[t.index] if t.index < len(base.turns) else None
        now_scores = {m: t.scores.get(m) for m in (bt.scores if bt is not None else {})}
        if bt is None or (bt.answer == t.answer and all(
                (bt.scores.get(m) is None) == (now_scores[m] is None) and abs((bt.scores.get(m) or 0) - (now_scores[m] or 0)) < 5e-4
                for m in bt.scores)):
            same.append(str(t.index + 1))
            continue
        gone, added = word_changes(bt.answer or "", t.answer or "")
        units = t.evidence.support if t.evidence is not None else None
        rows.append(
            f'<div class="cmp-turn" data-cmp-turn="{t.index + 1}"><div class="cmp-q">Turn {t.index + 1}: {e(t.rag_input)}</div>'
            '<div class="pair"><div class="side base"><b>baseline answer</b>'
            f'<div class="text">{marked(bt.answer or "(no answer)", None, gone, "del")}</div></div>'
            f'<div class="side now"><b>this run</b><div class="text">{marked(t.answer or "(no answer)", units, added)}</div>'
            f"</div></div>{_delta_chips(bt.scores, now_scores)}</div>"
        )
    conv_scores = {m: v for m, v in base.scores.items() if m not in {k for bt in base.turns for k in bt.scores}}
    head = _delta_chips(conv_scores, {m: value_of(conv, m) for m in conv_scores}, only_changed=True)
    tail = f'<p class="meta">turn(s) {", ".join(same)} answered as in the baseline</p>' if same else ""
    legend = ('<p class="legend-marks"><del>struck through</del>: gone since the baseline · <ins>underlined</ins>: new · '
              '<span class="unit u-unsupported">red</span>: in no retrieved context · '
              '<span class="unit u-partial">amber</span>: partly supported · hover a sentence for its support</p>')
    return (f'<section class="since"><h3>Since the baseline <span class="meta">(the answers of its recorded run {base.run} '
            f"beside this run's)</span></h3>{legend}{head}{''.join(rows)}{tail}</section>")


def conversation_html(conv: Conversation, verdict: ConvVerdict, goodness: float, metrics: list[str],
                      body: str | None = None, base: AnswerConversation | None = None,
                      changed_turns: list[int] | None = None) -> str:
    """One conversation; ``base``: its baseline answers, shown beside (a failed gate);
    ``changed_turns``: the turns answered otherwise than in the baseline's recorded run (the tag)."""
    key = ", ".join(f"{m} {f(v, '.2f')}" for m in metrics if (v := value_of(conv, m)) is not None)
    changed = ""
    if changed_turns:
        which = ", ".join(map(str, changed_turns))
        changed = f' <span class="tag">answer changed since the baseline (turn{"s" if len(changed_turns) > 1 else ""} {which})</span>'

    head = (f"{badge(verdict)} <b>{e(conv.suite)}/{e(conv.id)}</b> run {conv.run} · {len(conv.turns)} turn(s)"
            f"{' · role ' + e(conv.role) if conv.role else ''} · {e(conv.source)}{changed}"
            f' <span class="meta small">{e(key)}</span>')
    if body is None:
        body = conversation_body(conv)
    since = since_baseline(conv, base) if base is not None else ""
    return (f'<details class="conv" data-verdict="{verdict}" data-suite="{e(conv.suite)}" data-goodness="{goodness:.4f}" '
            f'id="conv-{e(cls(conv.key))}"><summary>{head}</summary><div class="conv-body">{since}{body}</div></details>')
