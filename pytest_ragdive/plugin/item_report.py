"""What one conversation item says in pytest's output: why it failed (the turn,
its question, the answer and the rule broken) and its per-turn scores in a few
lines (shown with ``-v``, ``-rA`` and under a failure). Imports no pytest."""

from __future__ import annotations

from ..core.records import Conversation, Turn
from ..metrics.pii import find_pii, mask_text
from ..metrics.registry import METRICS
from ..metrics.safety import violations

# the scores shown per turn, when present
TURN_SCORES = ("correctness", "answer_f1", "faithfulness", "context_recall", "recall_at_k", "safety_pass_rate")
CONVERSATION_SCORES = ("forgetfulness", "context_retention")


def _clip(text: str | None, n: int = 240) -> str:
    t = " ".join((text or "").split())
    return t if len(t) <= n else t[: n - 1] + "…"


def _turn_head(turn: Turn) -> list[str]:
    lines = [f"turn {turn.index + 1} ({turn.question_type}): question: {_clip(turn.rag_input)!r}"]
    if turn.standalone_question and turn.standalone_question != turn.rag_input:
        lines.append(f"  stand-alone question: {_clip(turn.standalone_question)!r}")
    return lines


def failure_text(conv: Conversation, with_traceback: bool = True) -> str | None:
    """Why the item of ``conv`` fails, or None when it passes."""
    if conv.error:
        turn = next((t for t in conv.turns if t.answer is None), None)
        lines = [f"{conv.suite}/{conv.id} (run {conv.run}) did not finish: {conv.error}"]
        if turn is not None:
            lines += _turn_head(turn)
        answered = [t for t in conv.turns if t.answer is not None]
        if answered:
            lines.append(f"  {len(answered)} earlier turn(s) answered; last answer: {_clip(answered[-1].answer)!r}")
        if conv.traceback and with_traceback:
            lines += ["", conv.traceback.rstrip()]
        return "\n".join(lines)
    if conv.source == "generated" and not conv.turns:
        counts = conv.validation
        invalid = "?" if counts is None else counts.invalid
        candidates = "?" if counts is None else counts.candidates
        return (
            "the generator produced no valid turn for this conversation "
            f"(validator: {invalid} invalid of {candidates} candidates; see results.json for the reasons)"
        )
    if conv.failures:
        lines = [f"safety violation (zero tolerance) in {conv.suite}/{conv.id} (run {conv.run}):"]
        for turn in conv.turns:
            broken = violations(turn.answer, turn.negative_assertions)
            if not broken:
                continue
            lines += _turn_head(turn)
            # personal data in the quoted answer is masked (the failures below name it)
            hits = find_pii(turn.answer)
            lines.append(f"  answer: {_clip(mask_text(turn.answer or '', hits), 400)!r}")
            for text in broken:
                lines.append(f"  rule broken: the answer must not state {text!r} (a negative assertion of this turn)")
        # personal data (kind and masked value), recorded by the safety rule too
        lines += [f"  {f}" for f in conv.failures if _PII in f]
        checks = _check_lines(conv)
        if len(lines) == 1:
            lines = checks or [*lines, *(f"  {f}" for f in conv.failures)]  # failures recorded by another rule
        else:
            lines += checks
        return "\n".join(lines)
    return None


_SAFETY = "answer states forbidden text"  # the failures of offline.safety_failures (shown above)
_PII = "answer contains personal data"  # offline.safety_failures' personal data (shown above)


def _check_lines(conv: Conversation) -> list[str]:
    """The team's own checks that failed (``assert:`` lists, metrics that raised), per turn
    with its question and answer; a conversation-level one after them."""
    mine = [f for f in conv.failures if _SAFETY not in f and _PII not in f]
    if not mine:
        return []
    lines = [f"failed check(s) in {conv.suite}/{conv.id} (run {conv.run}):"]
    for turn in conv.turns:
        prefix = f"turn {turn.index + 1}: "
        here = [f.removeprefix(prefix) for f in mine if f.startswith(prefix)]
        if here:
            lines += _turn_head(turn)
            if turn.attack is None:  # a lost attack turn's failure quotes its answer, canaries and personal data masked
                lines.append(f"  answer: {_clip(turn.answer, 400)!r}")
            lines += [f"  {f}" for f in here]
    lines += [f"  {f}" for f in mine if not any(f.startswith(f"turn {t.index + 1}: ") for t in conv.turns)]
    return lines


def _own(metric: str) -> bool:
    """A team's own metric, a rubric judge, or the assert: checks' pass rate: shown too."""
    return metric == "assertion_pass_rate" or (metric in METRICS and METRICS[metric].kind != "builtin")


def score_lines(conv: Conversation) -> list[str]:
    """One line per turn with its main scores, then the conversation-level ones."""
    width = max((len(f"turn {t.index + 1} {t.question_type}") for t in conv.turns), default=0)
    out = []
    for t in conv.turns:
        shown = [*TURN_SCORES, *(m for m in t.scores if m not in TURN_SCORES and _own(m))]
        scores = "  ".join(f"{m} {t.scores[m]:.2f}" for m in shown if t.scores.get(m) is not None)
        flags = f"  [{', '.join(t.flags)}]" if t.flags else ""
        out.append(f"{f'turn {t.index + 1} {t.question_type}':<{width}}  {scores or 'not scored'}{flags}")
    whole = [*CONVERSATION_SCORES, *(m for m in conv.scores if _own(m) and METRICS[m].level == "conversation")]
    conv_scores = "  ".join(f"{m} {conv.scores[m]:.2f}" for m in whole if conv.scores.get(m) is not None)
    if conv_scores:
        out.append(f"{'conversation':<{width}}  {conv_scores}")
    return out
