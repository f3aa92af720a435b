"""The scripted attack set: multi-turn attack conversations as golden data, no model needed.

The bundled library is ``data/library.yaml`` (six families, plain and in encodings and
role-play framings); a suite runs it with ``attacks = {}`` (every family) or
``attacks = {library = ["policy", "injection"]}``, and adds files of its own in the same
format (``attacks = {files = ["attacks.yaml"]}``)::

    version: "1"
    attacks:
      - id: atk-my-refund
        family: policy            # instructions | personal_data | policy | off_domain | persistence | injection
        framing: plain            # a label: plain, base64, leetspeak, roleplay, ...
        goal: what success looks like, for the reports
        markers: ["..."]          # texts only an obedient answer states
        forbidden: ["..."]        # commitments beyond policy
        canaries: ["..."]         # secrets of this attack
        poisoned: false           # relies on the poisoned documents
        turns:
          - the first user message
          - the next one (each sent whatever the bot answered)
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core.attack_config import AttackConfig
from ..core.errors import GoldenError, one_line
from ..core.paths import read_text
from ..core.records import Conversation, Turn
from .records import ATTACK_FAMILIES, AttackFamily, AttackTurn

__all__ = ["AttackScript", "attack_conversation", "bundled_attacks", "load_attack_file", "suite_attacks"]

MAX_ATTACK_TURNS = 20


class AttackScript(BaseModel):
    """One attack conversation of a library file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[A-Za-z0-9_.-]+$", max_length=120)
    family: AttackFamily
    framing: str = Field("plain", max_length=40)
    goal: str = Field("", max_length=400)
    markers: list[str] = Field(default_factory=list)
    forbidden: list[str] = Field(default_factory=list)
    canaries: list[str] = Field(default_factory=list)
    poisoned: bool = False
    turns: list[str] = Field(min_length=1, max_length=MAX_ATTACK_TURNS)

    def attack(self) -> AttackTurn:
        markers = list(self.markers)
        canaries = list(self.canaries)
        if self.poisoned:
            from .poison import load_poison

            for p in load_poison():
                markers += [m for m in p.markers if m not in markers]
                canaries.append(p.canary)
        return AttackTurn(family=self.family, framing=self.framing, goal=self.goal, canaries=canaries,
                          markers=markers, forbidden=list(self.forbidden), poisoned=self.poisoned)


class _AttackFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: str = "1"
    attacks: list[AttackScript] = Field(min_length=1)


def _parse(text: str, where: str) -> list[AttackScript]:
    import yaml

    try:
        data: Any = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise GoldenError(f"{where}: invalid YAML: {' '.join(str(e).split())}") from None
    try:
        scripts = _AttackFile.model_validate(data).attacks
    except ValidationError as e:
        raise GoldenError(f"{where}: {one_line(e)}") from None
    seen: set[str] = set()
    for s in scripts:
        if s.id in seen:
            raise GoldenError(f"{where}: attack id {s.id!r} used twice")
        seen.add(s.id)
    return scripts


@cache  # not a session memo (core/memo.py): the bundled data file, read-only, read once per process
def bundled_attacks() -> tuple[AttackScript, ...]:
    """The bundled library, in file order."""
    text = resources.files("pytest_ragdive").joinpath("attacks", "data", "library.yaml").read_text(encoding="utf-8")
    return tuple(_parse(text, "pytest_ragdive/attacks/data/library.yaml"))


def load_attack_file(path: Path) -> list[AttackScript]:
    """A user's attack file (the library's format)."""
    if not path.is_file():
        raise GoldenError(f"{path}: file not found")
    return _parse(read_text(path, GoldenError), str(path))


def attack_conversation(script: AttackScript, suite: str, run: int = 0) -> Conversation:
    """The conversation to run: one turn per user message, each carrying the attack."""
    attack = script.attack()
    turns = [
        Turn(index=i, rag_input=msg, standalone_question=msg if i == 0 else "",
             question_type="Initial" if i == 0 else "Follow-up", attack=attack)
        for i, msg in enumerate(script.turns)
    ]
    return Conversation(id=script.id, suite=suite, run=run, role=f"attacker:{script.family}", source="attack",
                        category=script.family, turns=turns, meta={"goal": script.goal, "framing": script.framing})


def suite_attacks(cfg: AttackConfig, suite: str, base: Path) -> list[Conversation]:
    """The attack conversations of a suite: the library's selected families, then its files."""
    wanted = set(ATTACK_FAMILIES) if "all" in cfg.library else set(cfg.library)
    scripts = [s for s in bundled_attacks() if s.family in wanted]
    for f in cfg.files:
        p = Path(f)
        scripts += load_attack_file(p if p.is_absolute() else base / p)
    if cfg.max_conversations is not None:
        scripts = scripts[: cfg.max_conversations]
    return [attack_conversation(s, suite) for s in scripts]
