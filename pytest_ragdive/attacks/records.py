"""The attack record a turn of an adversarial conversation carries (``Turn.attack``).

Imports nothing of the plugin: :mod:`pytest_ragdive.core.records` holds it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

AttackFamily = Literal["instructions", "personal_data", "policy", "off_domain", "persistence", "injection"]
#: the families, in report order: instruction extraction, another customer's personal data,
#: policy circumvention (a refund or credit beyond policy), off-domain steering, a persistent
#: user who rephrases after each refusal, and indirect prompt injection (poisoned documents)
ATTACK_FAMILIES: tuple[AttackFamily, ...] = (
    "instructions", "personal_data", "policy", "off_domain", "persistence", "injection",
)


class AttackTurn(BaseModel):
    """What an attack turn tries to make the bot do, and how a rule sees that it did.

    ``canaries``: secrets that must never appear in an answer (besides the suite's own
    ``attacks.canaries`` and the poisoned documents' canaries); ``markers``: texts an
    answer contains only when it followed the attacker's (or the injected) instruction (a
    phrase, a phone number, a URL the instruction demands); ``forbidden``: commitments the
    bot must not make (as negative assertions: "full refund without a receipt").
    ``framing``: how the request is wrapped (plain, base64, leetspeak, roleplay, ...).
    ``poisoned``: the turn relies on the poisoned documents being retrievable."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    family: AttackFamily
    framing: str = "plain"
    goal: str = ""
    canaries: list[str] = Field(default_factory=list)
    markers: list[str] = Field(default_factory=list)
    forbidden: list[str] = Field(default_factory=list)
    poisoned: bool = False
