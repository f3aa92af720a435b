"""The API key of a call, and the scrubbing of secrets from every text that
leaves the LLM client (error messages, reasons, warnings)."""

from __future__ import annotations

import os
import urllib.parse

from ..config import LLMConfig
from ..errors import LLMConfigError

__all__ = ["Secrets"]


class Secrets:
    """The key a request uses, and :meth:`redact` for every outgoing text."""

    def __init__(self, llm: LLMConfig) -> None:
        self.llm = llm

    def api_key(self) -> str | None:
        """The key to send: ``llm.api_key_env``'s value (read at call time), else
        for the lean HTTP path ``OPENAI_API_KEY`` (litellm finds the provider's
        usual variable itself)."""
        env = self.llm.api_key_env
        if not env:
            if self.llm.transport == "openai_http":
                return os.environ.get("OPENAI_API_KEY") or None
            return None
        key = os.environ.get(env)
        if not key:
            raise LLMConfigError(f"environment variable {env} (llm.api_key_env) is not set or empty")
        return key

    def redact(self, text: str) -> str:
        """``text`` without the API key or a password in api_base."""
        env = self.llm.api_key_env
        secrets = [os.environ.get(env) or ""] if env else []
        if self.llm.api_base:
            try:
                secrets.append(urllib.parse.urlsplit(self.llm.api_base).password or "")
            except ValueError:
                pass
        for secret in secrets:
            if len(secret) >= 4:
                text = text.replace(secret, "***")
        return text
