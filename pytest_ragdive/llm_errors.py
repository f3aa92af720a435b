"""The errors of the LLM client (``pytest_ragdive.llm`` re-exports them)."""

from __future__ import annotations


class FatalRunError(Exception):
    """An error that ends the whole ragdive run, not one conversation: every
    other conversation would hit it too (no budget, replay-only cache miss,
    missing model or backend). The run fails once, with this message."""


class LLMError(Exception):
    """Base of the LLM client's errors."""


class LLMConfigError(LLMError, FatalRunError):
    """The LLM settings cannot work (no model for a role, a missing key variable...)."""


class LLMCallError(LLMError):
    """A call failed for good: a non-retryable error, or still failing after the retries."""

    def __init__(
        self, message: str, *, role: str = "", model: str = "", attempts: int = 0, status: int | None = None
    ) -> None:
        super().__init__(message)
        self.role = role
        self.model = model
        self.attempts = attempts
        self.status = status


class CacheMissError(LLMError, FatalRunError):
    """record_mode none and the cache has no answer for this call."""

    def __init__(self, role: str, model: str, prompt_id: str | None, key: str) -> None:
        self.role = role
        self.model = model
        self.prompt_id = prompt_id
        self.key = key
        super().__init__(
            f"ragdive cache miss in record mode 'none': role {role!r}, model {model!r}, "
            f"prompt {prompt_id or '(none)'!r} (key {key[:16]}); record it with "
            f"--ragdive-record-mode=new_episodes and an API key, then commit the cache"
        )


class BudgetExceeded(LLMError, FatalRunError):
    """max_cost is spent: no new calls."""

    def __init__(self, spent: float, max_cost: float, breakdown: list[str]) -> None:
        self.spent = spent
        self.max_cost = max_cost
        self.breakdown = breakdown
        what = "; ".join(breakdown) if breakdown else "nothing priced"
        super().__init__(f"ragdive LLM budget exhausted: spent ${spent:.4f} of max_cost ${max_cost:.4f} ({what})")
