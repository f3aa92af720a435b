"""The golden data points at documents that exist.

:func:`check_references` runs once after planning: the configured corpus
file must exist and parse, and every ``relevant_doc_ids`` entry and
``document_id`` of a golden case or scripted conversation must name one of
its documents. Otherwise retrieval metrics would silently score 0 against a
typo. The error names the golden file(s) and the unknown ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ..core.errors import GoldenError
from . import golden

if TYPE_CHECKING:
    from ..core.config import RagdiveConfig


class Plan(Protocol):
    """What this check reads of a planned conversation (``planning.Plan``)."""

    suite: str
    run: int
    conv_id: str

    def document_ids(self) -> list[str]: ...


def check_references(cfg: RagdiveConfig, plans: Sequence[Plan]) -> None:
    """Raise GoldenError for a missing corpus file or ids that are not in the corpus."""
    if not cfg.corpus:
        return
    path = cfg.path(cfg.corpus)
    if not path.is_file():
        raise GoldenError(f"{path}: corpus file not found (corpus = {cfg.corpus!r} in {cfg.source or 'the config'})")
    known = {d.id for d in golden.load_corpus(path)}
    unknown: dict[tuple[str, str], list[str]] = {}  # (suite, conversation id) -> unknown ids
    for plan in plans:
        if plan.run:
            continue
        missing = [d for d in dict.fromkeys(plan.document_ids()) if d not in known]
        if missing:
            unknown[(plan.suite, plan.conv_id)] = missing
    if not unknown:
        return
    ids = sorted({d for v in unknown.values() for d in v})
    where = _files_of(cfg, unknown)
    cases = sorted({cid for _suite, cid in unknown})
    more = f" (+{len(cases) - 5} more)" if len(cases) > 5 else ""
    raise GoldenError(
        f"{', '.join(where)}: document id(s) not in the corpus {path}: {', '.join(map(repr, ids[:10]))}"
        f"{' ...' if len(ids) > 10 else ''} (in {', '.join(cases[:5])}{more})"
    )


def _files_of(cfg: RagdiveConfig, unknown: dict[tuple[str, str], list[str]]) -> list[str]:
    """The golden files holding the conversations with unknown ids (read again: the error path only)."""
    files: list[str] = []
    for suite in sorted({s for s, _ in unknown}):
        sc = cfg.suites[suite]
        wanted = {cid for s, cid in unknown if s == suite}
        for p in sc.single_turn:
            if wanted & {c.question_id for c in golden.load_single_turn(cfg.path(p))}:
                files.append(str(cfg.path(p)))
        for p in sc.conversations:
            if wanted & {c.id for c in golden.load_conversations(cfg.path(p))}:
                files.append(str(cfg.path(p)))
    return list(dict.fromkeys(files)) or ["golden data"]
