"""Reading result files (``results.json`` written by a run) back into records.

Used by the command line (review export, the gate over merged shards, the
report command). Imports no pytest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core.errors import ResultsError, one_line
from ..core.paths import read_input
from ..core.records import Conversation, JudgeCalls, ValidationStats
from ..core.results import AnswerConversation, CustomMetric, SuiteResult
from ..gate.outcome import GateStatus, RunInfo, RunOutcome
from ..gate.rows import GateRow
from ..llm.stats import LLMStats


def _load(path: Path) -> Any:
    text = read_input(path, "ragdive results", ResultsError, " (a run writes it to its report dir: --ragdive-report-dir)")
    if path.suffix == ".jsonl":
        rows = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError as err:
                    raise ResultsError(f"ragdive results {path}:{n}: not JSON: {err}") from None
        return {"conversations": [r.get("conversation", r) for r in rows if isinstance(r, dict)]}
    try:
        return json.loads(text)
    except ValueError as err:
        raise ResultsError(f"ragdive results {path} is not JSON: {err}") from None


def read_conversations(path: Path) -> list[Conversation]:
    """The scored conversations of one result file (``results.json``, or JSON lines of conversations)."""
    data = _load(path)
    raw = data.get("conversations") if isinstance(data, dict) else None
    if not isinstance(raw, list):
        raise ResultsError(f"ragdive results {path} holds no 'conversations' list: is it a results.json of a run?")
    out = []
    for i, item in enumerate(raw):
        try:
            out.append(Conversation.model_validate(item))
        except ValidationError as err:
            raise ResultsError(f"ragdive results {path}: conversation {i}: {one_line(err)}") from None
    return out


def read_outcome(path: Path) -> RunOutcome:
    """The RunOutcome a run wrote to ``results.json``."""
    data = _load(path)
    if not isinstance(data, dict) or not isinstance(data.get("info"), dict) or "status" not in data:
        raise ResultsError(f"ragdive results {path} has no 'info' and 'status': is it a results.json of this plugin's run?")
    try:
        return RunOutcome(
            info=RunInfo.model_validate(data["info"]),
            status=GateStatus(data["status"]),
            suites={s: SuiteResult.model_validate(r) for s, r in (data.get("suite_results") or {}).items()},
            gate=None if data.get("gate") is None else [GateRow.model_validate(r) for r in data["gate"]],
            conversations=read_conversations(path) if path.suffix != ".jsonl" else [],
            notes=list(data.get("notes") or []),
            fatal=list(data.get("fatal") or []),
            not_run=list(data.get("not_run") or []),
            baseline_path=data.get("baseline_path"),
            llm=None if not data.get("llm") else LLMStats.model_validate(data["llm"]),
            judge_calls=None if not data.get("judge_calls") else JudgeCalls.model_validate(data["judge_calls"]),
            validation={s: ValidationStats.model_validate(v) for s, v in (data.get("validation") or {}).items()},
            diversity=dict(data.get("diversity") or {}),
            custom_metrics={n: CustomMetric.model_validate(m) for n, m in (data.get("custom_metrics") or {}).items()},
            baseline_answers={k: AnswerConversation.model_validate(v) for k, v in (data.get("baseline_answers") or {}).items()},
            answers_changed={str(k): [int(t) for t in v] for k, v in (data.get("answers_changed") or {}).items()
                             if isinstance(v, list)},
        )
    except (ValidationError, ValueError) as err:
        detail = one_line(err) if isinstance(err, ValidationError) else str(err)
        raise ResultsError(f"ragdive results {path}: {detail}") from None


class MergedResults(BaseModel):
    """Result files of one run merged: the shards of a split run (or disjoint runs)."""

    model_config = ConfigDict(extra="forbid")

    info: RunInfo  # planned summed, completed only if every part completed, no shard
    conversations: list[Conversation]
    fatal: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    llm: LLMStats | None = None
    custom_metrics: dict[str, CustomMetric] = Field(default_factory=dict)  # the parts' metrics that are not built in
    files: int = 1  # result files merged
    shards: int = 0  # the split's shard count, 0 when the files are not shards

    @property
    def parts_word(self) -> str:
        """What the files are, for messages: "the shards", "the result files" or "the result file"."""
        return "the shards" if self.shards else "the result files" if self.files > 1 else "the result file"


def merge_results(paths: list[Path]) -> MergedResults:
    """Merge result files: every part must come from the same config, backend and
    judge models; the shards of a split run must all be there, once each; no
    conversation may appear twice."""
    if not paths:
        raise ResultsError("no result files given")
    parts = [(p, read_outcome(p)) for p in paths]
    first_path, first = parts[0]
    for p, o in parts[1:]:
        for name in ("config_hash", "backend", "judge_models", "plugin_version"):
            a, b = getattr(first.info, name), getattr(o.info, name)
            if a != b:
                raise ResultsError(f"ragdive results {p} and {first_path} come from different runs: {name} {b!r} vs {a!r}")
    shards = [o.info.shard for _, o in parts]
    notes: list[str] = []
    n = 0
    if any(shards):
        if not all(shards):
            plain = next(p for (p, o) in parts if not o.info.shard)
            raise ResultsError(f"ragdive results {plain} is not a shard, but other files are: merge the shards of one run")
        counts = {int(s.split("/")[1]) for s in shards if s}
        if len(counts) != 1:
            raise ResultsError(f"the result files are shards of different splits: {', '.join(sorted(set(map(str, shards))))}")
        n = counts.pop()
        seen: dict[int, Path] = {}
        for p, o in parts:
            assert o.info.shard is not None
            i = int(o.info.shard.split("/")[0])
            if i in seen:
                raise ResultsError(f"shard {i}/{n} given twice: {seen[i]} and {p}")
            seen[i] = p
        missing = [f"{i}/{n}" for i in range(1, n + 1) if i not in seen]
        if missing:
            raise ResultsError(f"shard(s) {', '.join(missing)} missing: the gate needs every shard of the split ({len(seen)} of {n} given)")
        notes.append(f"merged {n} shards")
    owner: dict[str, Path] = {}
    convs: list[Conversation] = []
    for p, o in parts:
        for c in o.conversations:
            if c.key in owner:
                raise ResultsError(f"conversation {c.key} is in both {owner[c.key]} and {p}")
            owner[c.key] = p
            convs.append(c)
    llm: LLMStats | None = None
    for _, o in parts:
        if o.llm is not None:
            llm = (llm or LLMStats()).merge(o.llm)
    fatal = list(dict.fromkeys(f for _, o in parts for f in o.fatal))
    custom: dict[str, CustomMetric] = {}
    for p, o in parts:
        for name, cm in o.custom_metrics.items():
            if name in custom and (custom[name].direction, custom[name].level) != (cm.direction, cm.level):
                raise ResultsError(f"ragdive results {p}: metric {name!r} is {cm.direction}-is-better at {cm.level} level, "
                                   f"another file records it as {custom[name].direction}-is-better at {custom[name].level} level")
            custom.setdefault(name, cm)
    info = first.info.model_copy(update={
        "suites": list(dict.fromkeys(s for _, o in parts for s in o.info.suites)),
        "planned": sum(o.info.planned for _, o in parts),
        "completed": all(o.info.completed for _, o in parts),
        "subset": any(o.info.subset for _, o in parts),
        "shard": None,
    })
    return MergedResults(info=info, conversations=convs, fatal=fatal, notes=notes, llm=llm, custom_metrics=custom,
                         files=len(parts), shards=n)
