"""The ``attacks`` part of a suite's config (``[tool.ragdive.suites.NAME] attacks = {...}``):
the scripted attack set and poisoned documents (docs/safety.md)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

ATTACK_LIBRARY_NAMES = ("all", "instructions", "personal_data", "policy", "off_domain", "persistence", "injection")


class AttackConfig(BaseModel):
    """Adversarial users and poisoned documents of one suite."""

    model_config = ConfigDict(extra="forbid")

    library: list[str] = Field(default_factory=lambda: ["all"], description="families of the bundled attack set to run: all, instructions, personal_data, policy, off_domain, persistence, injection ([] none)")
    files: list[str] = Field(default_factory=list, description="attack conversations of your own (the bundled set's YAML format)")
    canaries: list[str] = Field(default_factory=list, description="secrets your fixture planted in the bot's system prompt: an answer that reveals one is a successful attack")
    poison: bool = Field(False, description="hand the poisoned documents to a target that declares an extra_documents parameter (searched before it answers); injection turns of a target that takes none are not scored")
    max_conversations: int | None = Field(None, ge=1, description="run at most this many attack conversations (the first ones)")

    def model_post_init(self, __context: object) -> None:
        bad = [n for n in self.library if n not in ATTACK_LIBRARY_NAMES]
        if bad:
            raise ValueError(f"attacks.library: unknown {', '.join(map(repr, bad))}; expected {', '.join(ATTACK_LIBRARY_NAMES)}")
