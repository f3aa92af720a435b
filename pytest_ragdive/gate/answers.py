"""What each conversation answered in the baseline: the answers of one recorded run, kept
beside the baseline file, and the conversations of a failing run they are shown for.

An update (``--ragdive-update-baseline``) keeps the answers of its first run
(:func:`build_answers`), each clipped to ``ANSWER_CHARS`` and at most ``MAX_CHARS`` of
answer text in all (conversations beyond, in id order, are left out and counted), with
each turn's values of the gated metrics. :func:`write_answers` writes them as
gzip-compressed JSON (byte for byte the same for the same answers: no timestamp in the
header) to ``<baseline stem>.answers.json.gz`` beside the baseline, which names the
file and its sha256 (:class:`~pytest_ragdive.core.results.AnswersRef`).

When a gate fails, :func:`compared` picks, for each failed row, the conversations
that pull its metric the wrong way against their recorded value (worst first, at most
``PER_ROW``), and the outcome carries their baseline answers (results.json too, so a
report rendered again from result files shows the same).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from pydantic import ValidationError

from ..core.records import Conversation
from ..core.results import AnswerConversation, AnswersRef, AnswerTurn, Baseline, BaselineAnswers
from ..metrics.registry import METRICS
from .paired import value_of
from .rows import GateRow

ANSWER_CHARS = 2000  # one stored answer at most (clipped with "…")
MAX_CHARS = 4_000_000  # answer text in one file at most (about 1 MB compressed)
PER_ROW = 20  # conversations compared per failed gate row
MAX_FILE_BYTES = 64 * 2**20  # the answers file read back at most, compressed and uncompressed (a cap, not a crash)
EPS = 1e-9


def answers_file(baseline_path: Path) -> Path:
    """``baseline.json`` -> ``baseline.answers.json.gz`` (same folder)."""
    return baseline_path.with_name(f"{baseline_path.stem}.answers.json.gz")


def _clip(text: str | None) -> str | None:
    if text is None or len(text) <= ANSWER_CHARS:
        return text
    return text[: ANSWER_CHARS - 1] + "…"


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 6)


def build_answers(convs: Iterable[Conversation], metrics: Mapping[str, Sequence[str]]) -> BaselineAnswers:
    """The answers of the first run of each suite (errored conversations left out), with
    the per-turn and per-conversation values of the suite's gated ``metrics`` (suite ->
    names), bounded by ``MAX_CHARS``. A suite gated on no per-conversation metric (the
    sharded diagnosis' suite-level figures) keeps none: no report compares them."""

    def per_conversation(m: str) -> bool:
        return METRICS.get(m) is None or METRICS[m].level != "suite"

    done = [c for c in convs if c.error is None and any(per_conversation(m) for m in metrics.get(c.suite, ()))]
    first = {s: min(c.run for c in done if c.suite == s) for s in {c.suite for c in done}}
    keep = sorted((c for c in done if c.run == first[c.suite]), key=lambda c: (c.suite, c.id))
    out = BaselineAnswers(run=min(first.values(), default=0))
    used = 0
    for c in keep:
        size = sum(len(t.answer or "") for t in c.turns)
        if used + size > MAX_CHARS:
            out.left_out += 1
            continue
        used += size
        gated = [m for m in metrics[c.suite] if per_conversation(m)]
        turn_metrics = [m for m in gated if METRICS.get(m) is None or METRICS[m].level == "turn"]
        out.suites.setdefault(c.suite, {})[c.id] = AnswerConversation(
            run=c.run,
            turns=[AnswerTurn(answer=_clip(t.answer), scores={m: _r(t.scores.get(m)) for m in turn_metrics if m in t.scores})
                   for t in c.turns],
            scores={m: _r(v) for m in gated if (v := value_of(c, m)) is not None},
            flags={str(t.index + 1): list(t.flags) for t in c.turns if t.flags},
        )
    return out


def answers_bytes(answers: BaselineAnswers) -> bytes:
    """The file's bytes: compact JSON, gzip without a timestamp (the same answers, the same bytes)."""
    return gzip.compress(answers.model_dump_json().encode("utf-8"), compresslevel=9, mtime=0)


def answers_ref(baseline_path: Path, answers: BaselineAnswers) -> AnswersRef:
    return AnswersRef(
        file=answers_file(baseline_path).name,
        sha256=hashlib.sha256(answers_bytes(answers)).hexdigest(),
        run=answers.run,
        conversations=sum(len(v) for v in answers.suites.values()),
    )


def write_answers(baseline_path: Path, answers: BaselineAnswers) -> Path:
    """Write the answers file beside the baseline (atomically); returns its path."""
    import os
    import tempfile

    from ..core.paths import refuse_inside_git

    path = answers_file(baseline_path)
    refuse_inside_git(path)  # a link at the path is replaced by the rename below, never written through
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(answers_bytes(answers))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load_answers(baseline: Baseline, baseline_path: Path) -> tuple[BaselineAnswers | None, str | None]:
    """The answers file ``baseline`` (read from ``baseline_path``) names, read and checked,
    and a note when it cannot be used (missing, changed since the baseline named it,
    unreadable). (None, None) when the baseline names no answers file."""
    ref = baseline.answers
    if ref is None:
        return None, None
    path = baseline_path.parent / ref.file
    why = "the report shows no baseline answers"
    over = f"the baseline's answers file {path} holds over {MAX_FILE_BYTES >> 20} MB of answers, more than a recording writes: {why}"
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None, f"the baseline's answers file {path} is missing: {why} (re-record the baseline to keep them)"
    if len(raw) > MAX_FILE_BYTES:
        return None, over
    if hashlib.sha256(raw).hexdigest() != ref.sha256:
        return None, f"the baseline's answers file {path} does not match the baseline (another recording?): {why}"
    try:
        text = gunzip_bounded(raw, MAX_FILE_BYTES)
        if text is None:  # a gzip bomb, or answers beyond what build_answers keeps
            return None, over
        return BaselineAnswers.model_validate_json(text), None
    except (OSError, EOFError, ValidationError, ValueError, zlib.error):
        return None, f"the baseline's answers file {path} cannot be read: {why}"


def gunzip_bounded(raw: bytes, limit: int) -> bytes | None:
    """``raw`` decompressed, or None when that is over ``limit`` bytes: decompressed a block
    at a time, so a small file that expands without end (a gzip bomb) costs ``limit`` at most."""
    out = bytearray()
    with gzip.GzipFile(fileobj=io.BytesIO(raw)) as fh:
        while block := fh.read(2**20):
            out += block
            if len(out) > limit:
                return None
    return bytes(out)


def compared(rows: Iterable[GateRow], convs: Iterable[Conversation], answers: BaselineAnswers) -> dict[str, AnswerConversation]:
    """The baseline answers of the conversations that pull a failed row's metric the wrong way
    (their value worse than the recorded one), worst first, at most ``PER_ROW`` per row;
    keyed ``suite::id``."""
    out: dict[str, AnswerConversation] = {}
    all_convs = [c for c in convs if c.error is None]
    for r in rows:
        if not r.failed:
            continue
        sign = 1.0 if r.direction == "higher" else -1.0
        stored = answers.suites.get(r.suite, {})
        drops: dict[str, float] = {}
        for c in all_convs:
            base = stored.get(c.id)
            if c.suite != r.suite or base is None:
                continue
            b, v = base.scores.get(r.metric), value_of(c, r.metric)
            if b is not None and v is not None and (d := sign * (b - v)) > EPS:
                drops[c.id] = max(d, drops.get(c.id, d))
        for cid in sorted(drops, key=lambda k: (-drops[k], k))[:PER_ROW]:
            out.setdefault(f"{r.suite}::{cid}", stored[cid])
    return out


def changed_turns(convs: Iterable[Conversation], answers: BaselineAnswers) -> dict[str, list[int]]:
    """``suite::id::runN`` (the conversation's key) -> the turns (numbered from 1) of this run's first run of each conversation
    whose answer differs from the recorded one (compared as stored: clipped), for every
    conversation the answers file holds; a turn the recorded run did not reach counts as changed."""
    done = [c for c in convs if c.error is None]
    first: dict[str, int] = {}
    for c in done:
        first[c.suite] = min(first.get(c.suite, c.run), c.run)
    out: dict[str, list[int]] = {}
    for c in done:
        base = answers.suites.get(c.suite, {}).get(c.id)
        if base is None or c.run != first[c.suite]:
            continue
        turns = [t.index + 1 for t in c.turns
                 if t.index >= len(base.turns) or _clip(t.answer) != base.turns[t.index].answer]
        if turns:
            out[c.key] = turns
    return out
