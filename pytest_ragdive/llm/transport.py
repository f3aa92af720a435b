"""How the LLM client reaches a model: litellm (every provider) or a lean
aiohttp path for OpenAI-compatible endpoints. Both send one :class:`Request`
and return a :class:`~.cache.CachedResponse`, or raise
:class:`~pytest_ragdive.errors.TransientTransportError` for errors worth a
retry and :class:`~pytest_ragdive.errors.FatalTransportError` for the others.
Neither retries (the client's :mod:`.retry` does), neither imports its library
(litellm, aiohttp) before the first request."""

from __future__ import annotations

import asyncio
import copy
import email.utils
import json
import os
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..core.errors import FatalTransportError as _Fatal
from ..core.errors import TransientTransportError as _Transient
from .keys import CachedResponse
from .prices import PriceMap

if TYPE_CHECKING:
    from .http11 import Pool

MAX_RETRY_AFTER_S = 60.0
OPENAI_DEFAULT_BASE = "https://api.openai.com/v1"
_STRIP_PREFIXES = ("openai/", "hosted_vllm/")


@dataclass(frozen=True)
class Provider:
    """An OpenAI-compatible provider that ``transport = "auto"`` reaches over the lean path,
    resolved as litellm resolves it: ``llm.api_base``, else the provider's base variable,
    else its public URL; the key from ``llm.api_key_env``, else the first set of its key
    variables (litellm's names). tests/llm/test_provider_routes.py checks both against
    litellm's own ``get_llm_provider`` where litellm is installed."""

    default_base: str
    base_env: str
    key_envs: tuple[str, ...]

    def base(self, api_base: str | None) -> str:
        return api_base or os.environ.get(self.base_env) or self.default_base


#: provider prefix -> where litellm sends its models (providers whose chat API is OpenAI's,
#: without request rewriting in litellm that a plain OpenAI request would miss)
PROVIDERS: dict[str, Provider] = {
    "groq": Provider("https://api.groq.com/openai/v1", "GROQ_API_BASE", ("GROQ_API_KEY",)),
    "together_ai": Provider(
        "https://api.together.ai/v1", "TOGETHER_AI_API_BASE",
        ("TOGETHER_API_KEY", "TOGETHER_AI_API_KEY", "TOGETHERAI_API_KEY", "TOGETHER_AI_TOKEN"),
    ),
    "deepseek": Provider("https://api.deepseek.com/beta", "DEEPSEEK_API_BASE", ("DEEPSEEK_API_KEY",)),
    "openrouter": Provider("https://openrouter.ai/api/v1", "OPENROUTER_API_BASE", ("OPENROUTER_API_KEY", "OR_API_KEY")),
    "fireworks_ai": Provider(
        "https://api.fireworks.ai/inference/v1", "FIREWORKS_API_BASE",
        ("FIREWORKS_API_KEY", "FIREWORKS_AI_API_KEY", "FIREWORKSAI_API_KEY", "FIREWORKS_AI_TOKEN"),
    ),
    "deepinfra": Provider("https://api.deepinfra.com/v1/openai", "DEEPINFRA_API_BASE", ("DEEPINFRA_API_KEY",)),
    "cerebras": Provider("https://api.cerebras.ai/v1", "CEREBRAS_API_BASE", ("CEREBRAS_API_KEY",)),
}


def provider_of(model: str) -> str | None:
    """The :data:`PROVIDERS` prefix of ``model`` (``groq/llama-3.1-8b`` -> ``groq``), else None."""
    prefix, sep, _ = model.partition("/")
    return prefix if sep and prefix in PROVIDERS else None


def _retry_after(headers: Any) -> float | None:
    """Seconds from Retry-After / retry-after-ms headers (a number or an HTTP date)."""
    if not headers:
        return None
    try:
        ms = headers.get("retry-after-ms") or headers.get("Retry-After-Ms")
        if ms:
            return max(0.0, float(ms) / 1000.0)
        ra = headers.get("retry-after") or headers.get("Retry-After")
    except Exception:
        return None
    if not ra:
        return None
    try:
        return max(0.0, float(ra))
    except ValueError:
        pass
    try:
        dt = email.utils.parsedate_to_datetime(ra)
        return max(0.0, dt.timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _classify_status(status: int | None) -> bool | None:
    """True: retryable, False: fatal, None: unknown."""
    if status is None:
        return None
    if status in (408, 409, 425, 429) or status >= 500:
        return True
    if 400 <= status < 500:
        return False
    return None


@dataclass
class Request:
    messages: list[dict[str, Any]]
    params: dict[str, Any]  # temperature, seed, response_format
    mode: str | None  # resolved structured mode, None for text
    #: ``json.dumps(params["response_format"])``, made once per schema (.structured), or None
    format_text: str | None = None
    #: ``canonical_json(messages)`` when the caller made it (the cache key's text), or None
    messages_text: str | None = None

    def body(self, model: str) -> bytes:
        """The JSON body of the request for ``model``: the messages' and the response format's
        texts reused when made already (the messages are then encoded once per call, not twice)."""
        params, fmt = self.params, self.format_text
        msgs = self.messages_text if self.messages_text is not None else json.dumps(self.messages)
        parts = [f'"model":{json.dumps(model)}', f'"messages":{msgs}']
        reuse = fmt is not None and "response_format" in params
        rest = {k: v for k, v in params.items() if not (reuse and k == "response_format")}
        if rest:
            parts.append(json.dumps(rest)[1:-1])
        if reuse:
            parts.append(f'"response_format":{fmt}')
        return ("{" + ",".join(parts) + "}").encode("utf-8")


class Transport(Protocol):
    """What the client needs of a transport."""

    name: str

    def reset_loop(self) -> None: ...

    async def aclose(self) -> None: ...

    def supports_schema(self, model: str) -> bool: ...

    def endpoint(self, model: str) -> str:
        """Where requests for ``model`` go (a URL, not yet redacted)."""
        ...

    async def send(self, model: str, req: Request, api_key: str | None, timeout_s: float) -> CachedResponse: ...


def transport_for(configured: str, model: str) -> str:
    """The transport a model's calls take: ``auto`` sends OpenAI-compatible models
    (``openai/``, ``hosted_vllm/`` and the providers of :data:`PROVIDERS`: ``groq/``,
    ``together_ai/``, ...) over the lean HTTP path, the others through litellm."""
    if configured != "auto":
        return configured
    return "openai_http" if model.startswith(_STRIP_PREFIXES) or provider_of(model) else "litellm"


def route_of(configured: str, model: str) -> tuple[str, str | None]:
    """(transport, provider): the provider of :data:`PROVIDERS` whose endpoint and key the
    lean path uses for ``model`` (only with ``auto``: an explicit ``openai_http`` sends the
    model name as written to ``api_base``, which a LiteLLM proxy expects)."""
    name = transport_for(configured, model)
    return name, provider_of(model) if name == "openai_http" and configured == "auto" else None


def make_transport(name: str, api_base: str | None, concurrency: int, provider: str | None = None) -> Transport:
    """The transport called ``name`` (``litellm`` or ``openai_http``; with ``provider``, the
    lean path to that provider of :data:`PROVIDERS`)."""
    if name == "openai_http":
        return OpenAIHTTPTransport(api_base, concurrency, provider)
    return LiteLLMTransport(api_base)


class LiteLLMTransport:
    name = "litellm"

    def __init__(self, api_base: str | None) -> None:
        self.api_base = api_base
        self.lib = _import_litellm()
        self.unpriced: set[str] = set()

    def reset_loop(self) -> None:
        return

    async def aclose(self) -> None:
        closer = getattr(self.lib, "close_litellm_async_clients", None)
        if closer is not None:
            try:
                await closer()
            except Exception:
                pass

    def endpoint(self, model: str) -> str:
        if self.api_base:
            return self.api_base
        provider = model.split("/", 1)[0] if "/" in model else "default"
        return f"litellm provider {provider!r}"

    def supports_schema(self, model: str) -> bool:
        try:
            return bool(self.lib.supports_response_schema(model=model))
        except Exception:
            return False

    async def send(self, model: str, req: Request, api_key: str | None, timeout_s: float) -> CachedResponse:
        litellm = self.lib
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": req.messages,
            "timeout": timeout_s + 1.0,  # ours (asyncio.timeout) fires first
            "num_retries": 0,
            "max_retries": 0,
            **copy.deepcopy(req.params),  # litellm edits the schema it is given; ours is shared per schema
        }
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if api_key:
            kwargs["api_key"] = api_key
        try:
            r = await litellm.acompletion(**kwargs)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            raise _litellm_error(e) from None
        try:
            choice = r.choices[0]
            content = choice.message.content or ""
            usage = getattr(r, "usage", None)
            pt = int(getattr(usage, "prompt_tokens", 0) or 0)
            ct = int(getattr(usage, "completion_tokens", 0) or 0)
            hidden = getattr(r, "_hidden_params", None) or {}
            cost = hidden.get("response_cost")
            if cost is None and model not in self.unpriced:
                try:
                    cost = float(litellm.completion_cost(completion_response=r))
                except Exception:
                    self.unpriced.add(model)  # litellm has no price for it: do not ask again
                    cost = None
            return CachedResponse(
                content=content,
                model=getattr(r, "model", None) or model,
                prompt_tokens=pt,
                completion_tokens=ct,
                finish_reason=getattr(choice, "finish_reason", None),
                cost_usd=float(cost) if cost is not None else None,
                created=time.time(),
            )
        except Exception as e:
            raise _Transient(f"unreadable response ({type(e).__name__})") from None


def _litellm_error(e: Exception) -> Exception:
    status = getattr(e, "status_code", None)
    status = status if isinstance(status, int) else None
    name = type(e).__name__
    msg = f"{name}: {' '.join(str(e).split())[:300]}"
    if status == 429 or name == "RateLimitError":
        headers = getattr(e, "litellm_response_headers", None)
        if headers is None:
            resp = getattr(e, "response", None)
            headers = getattr(resp, "headers", None)
        if headers is None:
            headers = getattr(e, "headers", None)
        return _Transient(msg, 429, _retry_after(headers))
    if name in ("Timeout", "APITimeoutError", "APIConnectionError"):
        return _Transient(msg, status, unreachable=True)
    if name in ("ServiceUnavailableError", "InternalServerError"):
        return _Transient(msg, status)
    verdict = _classify_status(status)
    if verdict is True:
        return _Transient(msg, status)
    if verdict is False:
        return _Fatal(msg, status)
    mod = type(e).__module__ or ""
    if isinstance(e, (OSError, TimeoutError)):
        return _Transient(msg, status, unreachable=status is None)
    if mod.startswith(("litellm", "openai", "httpx", "aiohttp")):
        return _Transient(msg, status)
    return _Fatal(msg, status)


def _import_litellm() -> Any:
    """Import litellm with its local price map and without telemetry or debug
    output (setting these again on a later import is harmless)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    litellm.drop_params = True
    litellm.set_verbose = False
    litellm.disable_streaming_logging = True
    litellm.disable_end_user_cost_tracking = True
    litellm.disable_add_user_agent_to_request_tags = True
    return litellm


def api_model_name(model: str, provider: str | None = None) -> str:
    """The model name an OpenAI-compatible endpoint expects (``openai/x`` -> ``x``; with
    ``provider``, ``groq/x`` -> ``x``, ``openrouter/vendor/x`` -> ``vendor/x``)."""
    if provider is not None and model.startswith(provider + "/"):
        return model[len(provider) + 1 :]
    for p in _STRIP_PREFIXES:
        if model.startswith(p):
            return model[len(p) :]
    return model


@dataclass
class _EnvRoute:
    """What aiohttp's ``trust_env`` reads from the environment for every request (the
    proxy of ``HTTP(S)_PROXY`` / ``NO_PROXY``, and ``~/.netrc``), read once per
    transport: per request it costs two worker-thread hops and a read of the whole
    environment. Where aiohttp's helpers are missing, the session trusts the
    environment itself (``trust_env``)."""

    proxy: Any = None
    proxy_auth: Any = None
    netrc_auth: Any = None  # basic auth from ~/.netrc for the host, used when no API key is sent
    trust_env: bool = False

    @classmethod
    def of(cls, url: str) -> _EnvRoute:
        if _nothing_in_env(url):  # the common case, decided without importing aiohttp (0.2-0.4 s of CPU)
            return cls()
        try:
            from aiohttp.helpers import basicauth_from_netrc, get_env_proxy_for_url, netrc_from_env
            from yarl import URL
        except ImportError:
            return cls(trust_env=True)
        u = URL(url)
        route = cls()
        try:
            route.proxy, route.proxy_auth = get_env_proxy_for_url(u)
        except LookupError:
            pass
        try:
            netrc = netrc_from_env()
            if netrc is not None and u.host is not None:
                route.netrc_auth = basicauth_from_netrc(netrc, u.host)
        except LookupError:
            pass
        return route


def _nothing_in_env(url: str) -> bool:
    """Whether aiohttp's ``trust_env`` could find nothing for ``url``: no proxy for its
    scheme that is not bypassed (urllib's ``getproxies``/``proxy_bypass``, which aiohttp's
    helpers use), and no netrc file (``$NETRC``, else ``~/.netrc`` or ``~/_netrc``). Conservative: when in
    doubt it says False, and aiohttp's own helpers decide."""
    import urllib.request

    parts = urllib.parse.urlsplit(url)
    try:
        if parts.scheme in urllib.request.getproxies() and not (
            parts.hostname and urllib.request.proxy_bypass(parts.hostname)
        ):
            return False
        netrc_env = os.environ.get("NETRC")
        paths = [Path(netrc_env)] if netrc_env is not None else [Path.home() / n for n in (".netrc", "_netrc")]
        return not any(os.path.lexists(p) for p in paths)
    except Exception:  # noqa: BLE001 - no home directory, an odd environment: let aiohttp decide
        return False


class OpenAIHTTPTransport:
    name = "openai_http"

    def __init__(self, api_base: str | None, concurrency: int, provider: str | None = None) -> None:
        # as litellm does for openai/ models: the configured base, else the environment's
        self.provider = provider
        self.key_envs: tuple[str, ...] = ("OPENAI_API_KEY",)
        if provider is not None:
            route = PROVIDERS[provider]
            base = route.base(api_base)
            self.key_envs = route.key_envs
        else:
            base = (api_base or os.environ.get("OPENAI_API_BASE") or os.environ.get("OPENAI_BASE_URL")
                    or OPENAI_DEFAULT_BASE)
        self.base = base
        # the path appended, a query string (?api-version=..., ?api-key=...) kept
        parts = urllib.parse.urlsplit(base)
        self.url = urllib.parse.urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/chat/completions"))
        self.concurrency = concurrency
        self._session: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.prices = PriceMap()
        self._env: _EnvRoute | None = None
        self._lean: Pool | None = None  # the .http11 pool, when this URL needs nothing aiohttp alone does
        self._lean_url: bool | None = None  # whether it can (None: not decided yet)

    def supports_schema(self, model: str) -> bool:
        return True

    def endpoint(self, model: str) -> str:
        return self.base

    def reset_loop(self) -> None:
        if self._lean is not None:
            self._lean.reset()
        old, self._session = self._session, None
        if old is not None and not old.closed:
            try:  # its loop is gone: close the sockets without it
                old.connector._close()
                old._connector = None
            except Exception:
                pass

    async def aclose(self) -> None:
        if self._lean is not None:
            await self._lean.aclose()
        s, self._session = self._session, None
        if s is not None and not s.closed:
            await s.close()

    def _pool(self, api_key: str | None) -> Pool | None:
        """The lean HTTP/1.1 pool (:mod:`.http11`) for this request, or None when it needs
        aiohttp: a proxy from the environment, ``~/.netrc`` credentials (sent when no key is),
        credentials in the URL, or a scheme other than http(s)."""
        env = self._env
        if env is None:
            env = self._env = _EnvRoute.of(self.url)
        if env.proxy is not None or env.trust_env or (env.netrc_auth is not None and not api_key):
            return None
        if self._lean_url is None:
            from .http11 import Pool, lean_url

            self._lean_url = lean_url(self.url)
            self._lean = Pool(self.url) if self._lean_url else None
        return self._lean

    def _get_session(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            if self._session is not None and self._loop is not loop:
                self.reset_loop()
            import aiohttp

            if self._env is None:
                self._env = _EnvRoute.of(self.url)
            connector = aiohttp.TCPConnector(limit=max(self.concurrency, 1) * 2, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=aiohttp.ClientTimeout(total=None), trust_env=self._env.trust_env
            )
            self._loop = loop
        return self._session

    async def send(self, model: str, req: Request, api_key: str | None, timeout_s: float) -> CachedResponse:
        name = api_model_name(model, self.provider)
        body = req.body(name)
        pool = self._pool(api_key)
        if pool is not None:
            from .http11 import HTTPError

            try:
                reply = await pool.post(body, api_key)
            except asyncio.CancelledError:
                raise
            except (HTTPError, OSError) as e:
                raise _Transient(f"connection error: {type(e).__name__}: {e}", unreachable=True) from None
            status, raw = reply.status, reply.body
            if 300 <= status < 400:
                where = reply.headers.get("location")
                to = f" to {redact_location(where)}" if where else ""
                raise _Fatal(f"HTTP {status}: a redirect{to}, not followed (the request and its key go "
                             "to llm.api_base only: set it to the final URL)", status)
            retry_after = _retry_after(reply.headers) if status == 429 else None
        else:
            status, raw, retry_after = await self._send_aiohttp(body, api_key)
        return self._reply(model, name, status, raw, retry_after)

    async def _send_aiohttp(self, body: bytes, api_key: str | None) -> tuple[int, bytes, float | None]:
        import aiohttp

        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        session = self._get_session()
        env = self._env
        assert env is not None
        extra: dict[str, Any] = {}
        if env.proxy is not None:
            extra["proxy"], extra["proxy_auth"] = env.proxy, env.proxy_auth
        if env.netrc_auth is not None and not api_key:
            extra["auth"] = env.netrc_auth
        try:
            async with session.post(self.url, data=body, headers=headers, **extra) as r:
                status = r.status
                raw = await r.read()
                retry_after = _retry_after(r.headers) if status == 429 else None
        except asyncio.CancelledError:
            raise
        except (aiohttp.ClientError, OSError) as e:
            raise _Transient(f"connection error: {type(e).__name__}: {e}", unreachable=True) from None
        return status, raw, retry_after

    def _reply(self, model: str, name: str, status: int, raw: bytes, retry_after: float | None) -> CachedResponse:
        if status >= 400:
            detail = raw[:300].decode("utf-8", "replace")
            try:
                detail = json.loads(raw)["error"]["message"][:300]
            except Exception:
                pass
            msg = f"HTTP {status}: {detail}"
            if _classify_status(status) is False:
                raise _Fatal(msg, status)
            raise _Transient(msg, status, retry_after)
        try:
            data = json.loads(raw)
            choice = data["choices"][0]
            content = choice["message"].get("content") or ""
            usage = data.get("usage") or {}
            pt = int(usage.get("prompt_tokens") or 0)
            ct = int(usage.get("completion_tokens") or 0)
        except Exception as e:
            raise _Transient(f"malformed response body ({type(e).__name__})", status) from None
        return CachedResponse(
            content=content if isinstance(content, str) else json.dumps(content),
            model=data.get("model") or name,
            prompt_tokens=pt,
            completion_tokens=ct,
            finish_reason=choice.get("finish_reason"),
            cost_usd=self.prices.cost(model, pt, ct),
            created=time.time(),
        )


def redact_location(url: str) -> str:
    """A redirect's target for a message: no user info, query values masked."""
    from .redact import redact_url

    return redact_url(url)
