"""Which golden data a baseline was recorded on, and what changed since.

A baseline stores, per suite and golden file, the file's content hash and one
short hash per case id (:class:`~pytest_ragdive.records.GoldenFile`). A later
run compares them with the files it reads and says, in one line per file,
"golden data changed since the baseline: 3 cases added in
golden/core/single_turn.jsonl" instead of gating the new set silently against
numbers measured on the old one. Imports no pytest.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..core.config import RagdiveConfig
from ..core.results import GoldenFile

Fingerprint = dict[str, dict[str, GoldenFile]]  # suite -> file (as the config names it) -> its fingerprint


def _digest(data: bytes | str, n: int = 64) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()[:n]


def _cases(kind: str, path: Path) -> dict[str, str]:
    from . import golden

    # one row at a time: a 20,000-conversation file's rows are never all held as records
    if kind == "single_turn":
        return {c.question_id: _digest(c.model_dump_json(), 12) for c in golden.each_single_turn(path)}
    if kind == "conversations":
        return {c.id: _digest(c.model_dump_json(), 12) for c in golden.each_conversation(path)}
    if kind == "sharded":
        from ..sharded.questions import read_sharded

        # the helper's flags are review notes, not content; an empty intermediate_entities
        # (a later field) keeps the digests of files written before it existed
        return {q.id: _digest(q.model_dump_json(exclude={"flags", *([] if q.intermediate_entities else
                                                                    ["intermediate_entities"])}), 12)
                for q in read_sharded(path)}
    from .ragdive_format import import_ragdive, read_ragdive

    out = {}
    for c in import_ragdive(read_ragdive(path)):
        out[f"{c.id}#run{c.run}"] = _digest(json.dumps([(t.rag_input, t.ground_truth) for t in c.turns]), 12)
    return out


def fingerprint(cfg: RagdiveConfig, suites: list[str], known: Fingerprint | None = None) -> Fingerprint:
    """The golden files of ``suites`` as they are now (unreadable files are left to the planner to report).
    ``known``: a fingerprint recorded earlier (a baseline's); a file whose content hash is the one
    recorded there keeps its recorded cases, unparsed (the same bytes are the same cases: checking a
    20,000-conversation YAML file against its baseline costs a hash, not a second parse)."""
    out: Fingerprint = {}
    for suite in suites:
        sc = cfg.suites.get(suite)
        if sc is None:
            continue
        files: dict[str, GoldenFile] = {}
        for kind, names in (("single_turn", sc.single_turn), ("conversations", sc.conversations),
                            ("ragdive_logs", sc.ragdive_logs), ("sharded", sc.sharded)):
            for name in names:
                path = cfg.path(name)
                try:
                    with open(path, "rb") as fh:  # hashed a block at a time (a large file is never held whole)
                        sha = hashlib.file_digest(fh, "sha256").hexdigest()
                    old = (known or {}).get(suite, {}).get(name)
                    files[name] = old if old is not None and old.sha256 == sha else GoldenFile(sha256=sha, cases=_cases(kind, path))
                except (OSError, ValueError):
                    continue
        out[suite] = files
    return out


def _count(n: int, what: str) -> str:
    return f"{n} case{'s' if n != 1 else ''} {what}"


def golden_changes(recorded: Fingerprint, now: Fingerprint) -> list[str]:
    """One line per golden file of the suites in ``now`` that differs from what the
    baseline recorded (nothing when the baseline recorded no fingerprint for a suite)."""
    lines = []
    for suite, files in now.items():
        old = recorded.get(suite)
        if old is None:
            continue
        for name in sorted(set(old) | set(files)):
            a, b = old.get(name), files.get(name)
            if a is None and b is not None:
                lines.append(f"golden data changed since the baseline: {name} added to suite {suite} ({_count(len(b.cases), 'in it')})")
            elif b is None and a is not None:
                lines.append(f"golden data changed since the baseline: {name} no longer in suite {suite} ({_count(len(a.cases), 'gone')})")
            elif a is not None and b is not None and a.sha256 != b.sha256:
                added = len(set(b.cases) - set(a.cases))
                removed = len(set(a.cases) - set(b.cases))
                changed = sum(1 for k in set(a.cases) & set(b.cases) if a.cases[k] != b.cases[k])
                parts = [_count(n, w) for n, w in ((added, "added"), (removed, "removed"), (changed, "changed")) if n]
                what = ", ".join(parts) if parts else "reformatted, no case changed"
                lines.append(f"golden data changed since the baseline: {what} in {name}")
    return lines

