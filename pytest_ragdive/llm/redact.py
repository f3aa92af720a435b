"""The secrets a run knows, and their scrubbing from every text that comes in or
goes out.

Known secrets: every key a request actually used; the value of ``llm.api_key_env``;
the value of every environment variable whose name says it is a credential
(``*API_KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ...: the variable
litellm picked for a provider, ``OPENAI_API_KEY`` included, whichever it was);
the values of the variables listed under ``redact_env``; the password and the
query values of ``api_base`` (and of ``OPENAI_API_BASE`` / ``OPENAI_BASE_URL``,
which the lean HTTP path falls back to); what an HTTP target sends as
credentials (header values, the token of ``Bearer <token>``, the password and
query values of its URL: :func:`target_secrets`); each also in its URL-encoded
and JSON-escaped forms.

Two uses:

- :meth:`Secrets.scrub` (and :meth:`~Secrets.scrub_reply`, :meth:`~Secrets.scrub_target`):
  the one redaction point on the way in. Every reply of the LLM (its content,
  before it is parsed, cached, scored, logged or reported) and of the target
  (answer, contexts, citations) has every known secret of at least
  :data:`MIN_SCRUBBED` characters replaced by ``***``. Only known values: a
  reply's own words are never rewritten by a pattern. Cheap: a substring test
  per known secret (a few), nothing when there are none.
- :meth:`Secrets.redact`: messages the plugin writes (errors, invalid-output
  reasons, the circuit breaker's message, endpoint names): the known secrets,
  and, whatever their origin, ``Bearer <token>``, ``api-key=<value>``-style pairs
  and ``sk-...`` keys.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..core.config_models import HttpTargetConfig, LLMConfig
from ..core.errors import LLMConfigError

if TYPE_CHECKING:
    from ..core.config import RagdiveConfig
    from ..core.records import TargetResponse
    from .keys import CachedResponse

__all__ = ["MASK", "MIN_SCRUBBED", "Secrets", "missing_key", "redact_url", "run_secrets", "target_secrets"]

MASK = "***"
_MIN_SECRET = 4
#: the shortest secret scrubbed from replies (a shorter one would blank ordinary words)
MIN_SCRUBBED = 8
_CREDENTIAL_NAME = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)
_BASE_VARS = ("OPENAI_API_BASE", "OPENAI_BASE_URL")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_PLAIN_HEADERS = frozenset({"content-type", "accept", "user-agent", "accept-encoding", "accept-language"})
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


def expand_env(value: str) -> str:
    """``${NAME}`` in a value, from the environment (an unset one is left as written)."""
    return _ENV_REF.sub(lambda m: os.environ.get(m.group(1), m.group(0)), value)


def target_secrets(settings: HttpTargetConfig) -> list[str]:
    """What an HTTP target sends as credentials: its header values (``${NAME}``
    expanded), the token of a ``Bearer <token>``-style value, and the user info
    and query values of its URL."""
    out = _url_secrets(settings.url)
    for name, value in settings.headers.items():
        if name.lower() in _PLAIN_HEADERS:
            continue
        v = expand_env(value)
        out.append(v)
        if " " in v:
            out.append(v.split(" ", 1)[1])
    return [v for v in out if v]


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
def _forms(secret: str) -> set[str]:
    """A secret as written, URL-encoded (both ways) and JSON-escaped (inside a JSON reply;
    some writers escape ``/`` too)."""
    escaped = json.dumps(secret)[1:-1]
    return {
        secret,
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote_plus(secret),
        escaped,
        escaped.replace("/", "\\/"),
        json.dumps(secret, ensure_ascii=False)[1:-1],
    }


class Secrets:
    """The secrets of a run (see the module docstring): the key a request uses,
    :meth:`scrub` for every reply that comes in, :meth:`redact` for every message."""

    def __init__(self, llm: LLMConfig, redact_env: Sequence[str] = (), extra: Iterable[str] = ()) -> None:
        self.llm = llm
        self.redact_env = tuple(redact_env)
        self._used: set[str] = set()
        self._extra: set[str] = {v for v in extra if v}
        self._scrubbed: tuple[str, ...] | None = None  # the known secrets for scrub(), built on first use

    # -- what is known ------------------------------------------------------
    def api_key(self, transport: str | None = None, key_envs: Sequence[str] | None = None) -> str | None:
        """The key to send: ``llm.api_key_env``'s value (read at call time), else
        for the lean HTTP path the first set of ``key_envs`` (its provider's variables,
        ``OPENAI_API_KEY`` by default; litellm finds the provider's usual variable itself).
        Remembered for :meth:`redact` and :meth:`scrub`."""
        env = self.llm.api_key_env
        if not env:
            key = None
            if (transport or self.llm.transport) == "openai_http":
                key = next((os.environ[v] for v in (key_envs or ("OPENAI_API_KEY",)) if os.environ.get(v)), None)
        else:
            key = os.environ.get(env)
            if not key:
                raise LLMConfigError(f"environment variable {env} (llm.api_key_env) is not set or empty")
        if key and key not in self._used:
            self._used.add(key)
            self._scrubbed = None
        return key

    def add(self, values: Iterable[str]) -> None:
        """More secrets the run knows (an HTTP target's credentials)."""
        new = {v for v in values if v} - self._extra
        if new:
            self._extra |= new
            self._scrubbed = None

    def _secrets(self) -> list[str]:
        """Every known secret of at least 4 characters, in every form, longest first
        (the environment read now)."""
        found = set(self._used) | self._extra
        env = self.llm.api_key_env
        if env and os.environ.get(env):
            found.add(os.environ[env])
        for name in self.redact_env:
            if os.environ.get(name):
                found.add(os.environ[name])
        for name, value in os.environ.items():
            if value and _CREDENTIAL_NAME.search(name) and len(value) >= 8:
                found.add(value)
        for url in (self.llm.api_base, *(os.environ.get(v) for v in _BASE_VARS)):
            found.update(_url_secrets(url))
        out: set[str] = set()
        for s in found:
            if len(s) >= _MIN_SECRET:
                out |= _forms(s)
        return sorted(out, key=len, reverse=True)  # longest first: no partial leftovers

    def known(self) -> tuple[str, ...]:
        """The secrets :meth:`scrub` replaces (at least :data:`MIN_SCRUBBED` characters),
        longest first; built once, again when a new one becomes known."""
        got = self._scrubbed
        if got is None:
            got = self._scrubbed = tuple(s for s in self._secrets() if len(s) >= MIN_SCRUBBED)
        return got

    # -- the way in ---------------------------------------------------------
    def scrub(self, text: str) -> str:
        """``text`` with every known secret replaced by ``***`` (no patterns)."""
        for secret in self.known():
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def _dirty(self, texts: Iterable[str | None]) -> bool:
        known = self._scrubbed if self._scrubbed is not None else self.known()
        if known:
            for t in texts:
                if t:
                    for secret in known:
                        if secret in t:
                            return True
        return False

    def scrub_reply(self, resp: CachedResponse) -> CachedResponse:
        """An LLM reply (fetched, or a cache hit an older version stored) with every known
        secret scrubbed from its content and model name (the same object when there is
        nothing to scrub)."""
        if not self._dirty((resp.content, resp.model)):
            return resp
        model = self.scrub(resp.model) if resp.model else resp.model
        clean = resp.model_copy(update={"content": self.scrub(resp.content), "model": model})
        clean._parsed = None  # a parse of the unscrubbed text is not this reply's
        return clean

    def scrub_target(self, resp: TargetResponse) -> TargetResponse:
        """A target's reply with every known secret scrubbed from its answer, contexts
        and citations (the same object when there is nothing to scrub)."""
        texts: list[str | None] = [resp.answer, *resp.citations]
        for c in resp.contexts:
            texts += [c.text, c.id, c.doc_id]
        if not self._dirty(texts):
            return resp
        contexts = [
            c.model_copy(update={"text": self.scrub(c.text), "id": self.scrub(c.id),
                                 "doc_id": self.scrub(c.doc_id) if c.doc_id else c.doc_id})
            for c in resp.contexts
        ]
        return resp.model_copy(update={
            "answer": self.scrub(resp.answer), "contexts": contexts, "citations": [self.scrub(c) for c in resp.citations],
        })

    # -- the way out --------------------------------------------------------
    def redact(self, text: str) -> str:
        """``text`` with every secret (see the module docstring) masked."""
        for secret in self._secrets():
            text = text.replace(secret, MASK)
        for pattern, repl in _PATTERNS:
            text = pattern.sub(repl, text)
        return text

    def redact_url(self, url: str) -> str:
        return self.redact(redact_url(url))


def run_secrets(cfg: RagdiveConfig) -> Secrets:
    """The secrets of a run of ``cfg``: its LLM settings, ``redact_env`` and the
    credentials of the HTTP target it configures."""
    target = cfg.target
    extra = target_secrets(target) if isinstance(target, HttpTargetConfig) else []
    return Secrets(cfg.llm, cfg.redact_env, extra)
