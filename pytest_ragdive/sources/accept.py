"""Reviewed drafts into a suite's golden file (``import-review ... --accept DRAFTS --into GOLDEN``).

The ratings are those of ``export-review``'s CSV layout (what ``draft-golden`` writes):
items ``<conversation id>#turn<n>`` and ``<conversation id>#dialogue``. A drafted
conversation is

- **accepted** when every one of its turns was rated and no rater said no to anything
  about it (turn or dialogue criteria);
- **rejected** when a rater said no to one of its items: it stays in the drafts file,
  ``reviewed: false``, to be fixed and rated again (or deleted);
- **not rated yet** otherwise: it stays in the drafts file.

Accepted conversations are appended to the golden file (``reviewed`` dropped, so true),
each under a comment naming its raters, and removed from the drafts file; the golden
file's comments and other conversations are kept as they are, and the result is
loaded once before it is written (a golden file the loader would refuse is never
written). An id that the golden file already holds is not appended again (it is
reported). Paths come from the command line only, never from the CSV."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import GoldenError, ReviewError
from .golden import ScriptedConversation, each_conversation, load_conversations


@dataclass
class Decision:
    accepted: list[ScriptedConversation] = field(default_factory=list)
    rejected: list[tuple[ScriptedConversation, list[str]]] = field(default_factory=list)
    unrated: list[ScriptedConversation] = field(default_factory=list)
    already: list[str] = field(default_factory=list)  # accepted ids the golden file already had
    raters: dict[str, list[str]] = field(default_factory=dict)


def decide(drafts: list[ScriptedConversation], ratings: dict[str, dict[str, dict[str, int]]]) -> Decision:
    """Accepted, rejected and unrated drafts (``ratings``: rater -> ``level:item`` -> criterion -> 0/1)."""
    out = Decision()
    for conv in drafts:
        items = [f"turn:{conv.id}#turn{n}" for n in range(1, len(conv.turns) + 1)]
        dialogue = f"dialogue:{conv.id}#dialogue"
        noes: list[str] = []
        rated_turns: set[str] = set()
        raters: set[str] = set()
        for rater, mine in ratings.items():
            for item in [*items, dialogue]:
                got = mine.get(item)
                if not got:
                    continue
                raters.add(rater)
                if item != dialogue:
                    rated_turns.add(item)
                noes += [f"{item.split(':', 1)[1]} {c} (rater {rater})" for c, v in sorted(got.items()) if not v]
        if noes:
            out.rejected.append((conv, noes))
        elif len(rated_turns) == len(items):
            out.accepted.append(conv)
            out.raters[conv.id] = sorted(raters)
        else:
            out.unrated.append(conv)
    return out


def _entries(convs: list[tuple[ScriptedConversation, str]], reviewed: bool | None) -> list[str]:
    import yaml

    lines: list[str] = []
    for conv, comment in convs:
        data = conv.model_dump(exclude_defaults=True)
        data.pop("reviewed", None)
        head = {"id": data.pop("id")}
        if "title" in data:
            head["title"] = data.pop("title")
        if reviewed is False:
            head["reviewed"] = False
        data = {**head, **data}
        text = yaml.safe_dump([data], sort_keys=False, allow_unicode=True, width=100)
        if comment:
            lines.append(f"  # {comment}")
        lines.extend(f"  {ln}" if ln else ln for ln in text.rstrip("\n").split("\n"))
    return lines


_EMPTY = re.compile(r"^conversations:\s*\[\s*\]\s*$", re.MULTILINE)
_KEY = re.compile(r"^conversations:\s*$", re.MULTILINE)


def append_to_golden(text: str, entries: list[str]) -> str:
    """``text`` (a golden conversations YAML file) with ``entries`` (indented list items) appended
    under its top-level ``conversations:`` list; its comments are kept."""
    if not entries:
        return text
    block = "\n".join(entries) + "\n"
    if _EMPTY.search(text):
        return _EMPTY.sub("conversations:\n" + block.rstrip("\n"), text, count=1).rstrip("\n") + "\n"
    if _KEY.search(text):
        # the list is the file's last top-level key (what init and draft-golden write)
        tail = text.split("\n")
        last_key = max(i for i, ln in enumerate(tail) if re.match(r"^[A-Za-z_]", ln))
        if not tail[last_key].startswith("conversations:"):
            raise GoldenError("the golden file's conversations: list is not its last key: append by hand")
        return text.rstrip("\n") + "\n" + block
    if not text.strip() or text.lstrip().startswith(("-", "#")):
        # a bare list of conversations: unindented items
        return text.rstrip("\n") + ("\n" if text.strip() else "") + "\n".join(
            ln[2:] if ln.startswith("  ") else ln for ln in entries) + "\n"
    raise GoldenError("expected a conversations: list or a list of conversations")


def apply(ratings: dict[str, dict[str, dict[str, int]]], drafts_path: Path, golden_path: Path) -> Decision:
    """Move the accepted drafts from ``drafts_path`` into ``golden_path`` (both rewritten
    in place; the golden file is created when missing)."""
    if drafts_path.resolve() == golden_path.resolve():
        raise ReviewError("--accept and --into name the same file: the drafts go into another (the suite's) file")
    drafts_text = drafts_path.read_text(encoding="utf-8")
    drafts = [] if _EMPTY.search(drafts_text) else list(each_conversation(drafts_path))
    decision = decide(drafts, ratings)
    golden_text = golden_path.read_text(encoding="utf-8") if golden_path.exists() else "conversations: []\n"
    have: set[str] = set()
    if golden_path.exists() and not _EMPTY.search(golden_text):
        have = {c.id for c in each_conversation(golden_path)}
    new = [c for c in decision.accepted if c.id not in have]
    decision.already = [c.id for c in decision.accepted if c.id in have]
    entries = _entries([(c, f"{c.category or 'case'}: drafted by draft-golden, reviewed by "
                           f"{', '.join(decision.raters.get(c.id, []))}") for c in new], reviewed=None)
    updated = append_to_golden(golden_text, entries)
    # the loader reads it before it is written: never leave a golden file it would refuse
    golden_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = golden_path.with_name(golden_path.name + ".ragdive-tmp" + golden_path.suffix)
    tmp.write_text(updated, encoding="utf-8")
    try:
        if new:
            load_conversations(tmp)
        tmp.replace(golden_path)
    finally:
        if tmp.exists():
            tmp.unlink()
    moved = {c.id for c in decision.accepted}
    keep = [c for c in drafts if c.id not in moved]
    why = {c.id: "rejected: " + "; ".join(n)[:300] for c, n in decision.rejected}
    head = [ln for ln in drafts_text.split("\n") if ln.startswith("#")]
    body = _entries([(c, why.get(c.id, "not rated yet")) for c in keep], reviewed=False)
    drafts_path.write_text("\n".join(head + (["conversations:"] + body if body else ["conversations: []"])) + "\n",
                           encoding="utf-8")
    return decision


def summary(decision: Decision, drafts_path: Path, golden_path: Path) -> str:
    parts = [f"{len(decision.accepted) - len(decision.already)} accepted into {golden_path}"]
    if decision.already:
        parts.append(f"{len(decision.already)} already there ({', '.join(decision.already[:5])})")
    parts.append(f"{len(decision.rejected)} rejected and {len(decision.unrated)} not rated yet, left in {drafts_path} "
                 "(reviewed: false: never gated)")
    return "ragdive import-review: " + "; ".join(parts)
