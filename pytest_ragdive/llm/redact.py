"""The API key of a call, and the scrubbing of secrets from every text that
leaves the LLM client (error messages, invalid-output reasons, the circuit
breaker's message, endpoint names).

Scrubbed: every key a request actually used; the value of ``llm.api_key_env``;
the value of every environment variable whose name says it is a credential
(``*API_KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ...: the variable
litellm picked for a provider, ``OPENAI_API_KEY`` included, whichever it was);
the user info and the query values of ``api_base`` (and of ``OPENAI_API_BASE``
/ ``OPENAI_BASE_URL``, which the lean HTTP path falls back to), also in their
URL-encoded form; and, whatever their origin, ``Bearer <token>``,
``api-key=<value>``-style pairs and ``sk-...`` keys.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from typing import TYPE_CHECKING

from ..core.config_models import LLMConfig
from ..core.errors import LLMConfigError

if TYPE_CHECKING:
    from ..core.config import RagdiveConfig

__all__ = ["MASK", "Secrets", "missing_key", "redact_url"]

MASK = "***"
_MIN_SECRET = 4
_CREDENTIAL_NAME = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)
_BASE_VARS = ("OPENAI_API_BASE", "OPENAI_BASE_URL")
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=-]{6,}"), rf"\1\2{MASK}"),
    (
        re.compile(
            r"(?i)((?:api[-_]?key|x-api-key|access[-_]?token|token|secret|password|key|sig|signature)"
            r"[\"']?\s*[=:]\s*[\"']?)[^\s&\"',;}]{4,}"
        ),
        rf"\1{MASK}",
    ),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), f"sk-{MASK}"),
)


def _url_secrets(url: str | None) -> list[str]:
    """The user name, password and query values of a URL."""
    if not url:
        return []
    try:
        parts = urllib.parse.urlsplit(url)
        out = [parts.username or "", parts.password or ""]
        out += [v for _, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=False)]
    except ValueError:
        return []
    return out


def redact_url(url: str) -> str:
    """``url`` without user info and with every query value masked (for messages)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return MASK
    if not parts.scheme:
        return url
    netloc = parts.netloc.rsplit("@", 1)[-1]
    if "@" in parts.netloc:
        netloc = f"{MASK}@{netloc}"
    query = "&".join(
        f"{k}={MASK}" for k, _ in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    )
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))


# the key variable litellm reads for a provider prefix, where no api_base is given
# (litellm's documented names); other providers are not checked up front
PROVIDER_KEY_VARS = {
    "openai/": "OPENAI_API_KEY",
    "gpt-": "OPENAI_API_KEY",
    "anthropic/": "ANTHROPIC_API_KEY",
    "claude-": "ANTHROPIC_API_KEY",
    "gemini/": "GEMINI_API_KEY",
    "mistral/": "MISTRAL_API_KEY",
    "groq/": "GROQ_API_KEY",
}


def missing_key(cfg: RagdiveConfig) -> str | None:
    """What is missing for the configured models to be called, in words (None: nothing):
    ``llm.api_key_env``'s variable when it is set, else (no ``api_base``: a hosted
    provider) the provider's usual variable for the models of the roles. Only the
    variable's name is ever said, never a value."""
    llm = cfg.llm
    if llm.api_key_env:
        if not os.environ.get(llm.api_key_env):
            return f"the environment variable {llm.api_key_env} (llm.api_key_env) is not set or empty"
        return None
    if llm.api_base:
        return None  # a server of your own: it may need no key
    for role in ("simulator", "validator", "judge", "classifier"):
        model = cfg.role_model(role)
        var = next((v for prefix, v in PROVIDER_KEY_VARS.items() if model and model.startswith(prefix)), None)
        if var and not os.environ.get(var):
            return f"the {role} model {model!r} needs the environment variable {var}, which is not set (or set llm.api_key_env)"
    return None


class Secrets:
    """The key a request uses, and :meth:`redact` for every outgoing text."""

    def __init__(self, llm: LLMConfig) -> None:
        self.llm = llm
        self._used: set[str] = set()

    def api_key(self, transport: str | None = None) -> str | None:
        """The key to send: ``llm.api_key_env``'s value (read at call time), else
        for the lean HTTP path ``OPENAI_API_KEY`` (litellm finds the provider's
        usual variable itself). Remembered for :meth:`redact`."""
        env = self.llm.api_key_env
        if not env:
            key = os.environ.get("OPENAI_API_KEY") or None if (transport or self.llm.transport) == "openai_http" else None
        else:
            key = os.environ.get(env)
            if not key:
                raise LLMConfigError(f"environment variable {env} (llm.api_key_env) is not set or empty")
        if key:
            self._used.add(key)
        return key

    def _secrets(self) -> list[str]:
        found = set(self._used)
        env = self.llm.api_key_env
        if env and os.environ.get(env):
            found.add(os.environ[env])
        for name, value in os.environ.items():
            if value and _CREDENTIAL_NAME.search(name) and len(value) >= 8:
                found.add(value)
        for url in (self.llm.api_base, *(os.environ.get(v) for v in _BASE_VARS)):
            found.update(_url_secrets(url))
        out: set[str] = set()
        for s in found:
            if len(s) >= _MIN_SECRET:
                out.add(s)
                out.add(urllib.parse.quote(s, safe=""))
                out.add(urllib.parse.quote_plus(s))
        return sorted(out, key=len, reverse=True)  # longest first: no partial leftovers

    def redact(self, text: str) -> str:
        """``text`` with every secret (see the module docstring) masked."""
        for secret in self._secrets():
            text = text.replace(secret, MASK)
        for pattern, repl in _PATTERNS:
            text = pattern.sub(repl, text)
        return text

    def redact_url(self, url: str) -> str:
        return self.redact(redact_url(url))
