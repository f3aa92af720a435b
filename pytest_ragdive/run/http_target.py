"""Ready-made targets: a chatbot behind HTTP.

``target = { url = "http://...", ... }`` in ``[tool.ragdive]``, or
``pytest_ragdive.http_target(url, ...)`` returned from the ``ragdive_target``
fixture. The target is a plain sync callable (the stdlib HTTP client, imported
on first use), so :func:`~pytest_ragdive.target.as_async` runs it in an
abandonable thread and bounds each turn by ``target_timeout_s``.

One turn is one POST: the request body is built from a JSON template (see
:class:`~pytest_ragdive.config.HttpTargetConfig`), the JSON reply is mapped to
a :class:`~pytest_ragdive.records.TargetResponse` by dotted paths; a path the
config gives that matches nothing in a reply (``doc_id = "meta.source"`` where the
reply has ``metadata.source``) is a :class:`ReplyShapeError` naming the path and the
keys the reply has there, never a silent null. The first reply that does not fit is
kept as :attr:`HttpTarget.first_reply_error`: the session stops there (a set-up
mistake, exit 4) instead of failing every conversation the same way. So is a
refused connection (after its retries) or an HTTP 401/403 before any call got
through: the bot is not running at that URL, or the token is wrong; the calls
after it fail at once with the same line. 429, 5xx and
refused or reset connections are retried ``retries`` times (exponential
backoff, ``Retry-After`` honoured up to 30 s); anything else fails the turn at
once with one line naming the status and the start of the reply. The URL in a
message never shows user info or a query string, and header values (tokens)
are blanked in any reply text quoted.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import ValidationError

from ..core.config_models import HttpTargetConfig
from ..core.errors import ConfigError, TargetError, one_line
from ..core.records import Context, TargetResponse
from .target import DEFAULT_TARGET_TIMEOUT_S, History, load_target

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
REDIRECT_STATUS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5
MAX_RETRY_AFTER_S = 30.0
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_MISSING = object()


class ReplyShapeError(TargetError):
    """A reply that does not fit the configured paths (``answer``, ``contexts``,
    ``citations``, ``context_fields``): one line naming the path and the keys found."""


class _SetupMistake(TargetError):
    """A call that cannot get through (refused, 401/403): a set-up mistake when no call has yet."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


def public_url(url: str) -> str:
    """The URL without user info, query string or fragment (where credentials hide)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def lookup(data: Any, path: str) -> Any:
    """The value at a dotted path (``choices.0.message.content``); ``_MISSING`` if absent."""
    cur = data
    for part in path.split(".") if path else []:
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.lstrip("-").isdigit() and -len(cur) <= int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return _MISSING
    return cur


def render_request(template: Any, messages: History) -> Any:
    """The request body: ``$messages``, ``$history`` and ``$question`` string values replaced."""
    question = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
    values: dict[str, Any] = {"$messages": messages, "$history": messages[:-1], "$question": question}

    def walk(node: Any) -> Any:
        if isinstance(node, str) and node in values:
            return values[node]
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk({"messages": "$messages"} if template is None else template)


class HttpTarget:
    """A chatbot behind an HTTP endpoint; call it with the message history."""

    def __init__(self, settings: HttpTargetConfig, timeout_s: float = DEFAULT_TARGET_TIMEOUT_S) -> None:
        self.settings = settings
        self.timeout_s = settings.timeout_s or timeout_s
        self.where = f"HTTP target {public_url(settings.url)}"
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        parts = urlsplit(settings.url)
        secrets = [parts.password or "", parts.query]
        self._url = settings.url
        if parts.username is not None:  # urllib sends no user info: make it a Basic header
            import base64

            netloc = parts.netloc.rpartition("@")[2]
            self._url = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
            token = base64.b64encode(f"{parts.username}:{parts.password or ''}".encode()).decode()
            self._headers["Authorization"] = f"Basic {token}"
        for name, value in settings.headers.items():
            self._headers[name] = self._expand(name, value)
        secrets += [v for k, v in self._headers.items() if k not in ("Content-Type", "Accept")]
        secrets += [v.split(" ", 1)[1] for v in secrets if " " in v]  # the token of "Bearer <token>"
        self._secrets = sorted({v for v in secrets if len(v) >= 4}, key=len, reverse=True)
        self._sleep: Callable[[float], None] = time.sleep
        self._replies = 0  # replies mapped so far (the first is checked as the set-up's)
        self._lock = threading.Lock()
        # the first reply did not fit the configured paths: a set-up mistake (the session stops)
        self.first_reply_error: str | None = None
        self._opener: Any = None  # urllib's opener without its redirect handling, built on first use

    def _expand(self, header: str, value: str) -> str:
        """``${NAME}`` in a header value, from the environment."""
        for var in _ENV_REF.findall(value):
            if var not in os.environ:
                raise TargetError(f"{self.where}: header {header!r} needs the environment variable {var}, which is not set")
        return _ENV_REF.sub(lambda m: os.environ[m.group(1)], value)

    def __repr__(self) -> str:
        return f"HttpTarget({public_url(self.settings.url)!r})"

    # -- one turn ------------------------------------------------------------
    def __call__(self, messages: History) -> TargetResponse:
        body = json.dumps(render_request(self.settings.request, messages), ensure_ascii=False).encode("utf-8")
        if self.first_reply_error is not None and self._replies == 0:  # set-up mistake: no call gets through
            raise TargetError(self.first_reply_error)
        try:
            status, ctype, raw = self._post(body)
        except _SetupMistake as e:
            with self._lock:
                if self._replies == 0 and self.first_reply_error is None:
                    self.first_reply_error = f"{e} ({e.hint})"
            raise TargetError(str(e)) from None
        try:
            reply = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise TargetError(
                f"{self.where} replied with something that is not JSON ({ctype or 'no content type'}): {self._excerpt(raw)}"
            ) from None
        with self._lock:
            first = self._replies == 0
            self._replies += 1
        try:
            return self.parse(reply)
        except ReplyShapeError as e:
            if first:
                self.first_reply_error = f"{e} (the first reply: fix the target's reply paths in the config)"
            raise

    def ragdive_secrets(self) -> list[str]:
        """The credentials this target sends (header values, URL user info and query):
        scrubbed from every reply of the run (:mod:`pytest_ragdive.llm.redact`)."""
        return list(self._secrets)

    def _post(self, body: bytes) -> tuple[int, str, bytes]:
        import http.client
        import urllib.error
        import urllib.request

        if self._opener is None:
            self._opener = _opener()
        attempts = self.settings.retries + 1
        refused = False
        for attempt in range(attempts):
            url, hops = self._url, 0
            retry_after: float | None = None
            try:
                while True:
                    req = urllib.request.Request(url, data=body, headers=self._headers, method="POST")
                    try:
                        with self._opener.open(req, timeout=self.timeout_s) as resp:  # the user's URL
                            return resp.status, resp.headers.get("Content-Type", ""), resp.read()
                    except urllib.error.HTTPError as e:
                        if e.code not in REDIRECT_STATUS:
                            raise
                        e.close()
                        url, hops = self._redirect(url, e.code, e.headers.get("Location") if e.headers else None), hops + 1
                        if hops > MAX_REDIRECTS:
                            raise TargetError(f"{self.where}: more than {MAX_REDIRECTS} redirects") from None
            except urllib.error.HTTPError as e:
                raw = e.read() if e.fp is not None else b""
                if e.code in (401, 403):
                    raise _SetupMistake(
                        f"{self.where} answered HTTP {e.code} {e.reason}: {self._excerpt(raw)}",
                        "the first call: check the token or credentials in the target's headers or URL",
                    ) from None
                if e.code not in RETRY_STATUS and not (500 <= e.code < 600 and e.code != 501):
                    raise TargetError(f"{self.where} answered HTTP {e.code} {e.reason}: {self._excerpt(raw)}") from None
                why = f"HTTP {e.code} {e.reason}: {self._excerpt(raw)}"
                refused = False
                retry_after = _retry_after(e.headers.get("Retry-After") if e.headers else None)
            except urllib.error.URLError as e:
                reason = e.reason
                if not isinstance(reason, (ConnectionRefusedError, ConnectionResetError)):
                    raise TargetError(f"{self.where}: cannot connect: {reason}") from None
                why = f"cannot connect: {reason}"
                refused = isinstance(reason, ConnectionRefusedError)
            except (ConnectionResetError, ConnectionRefusedError) as e:
                why = f"connection failed: {e}"
                refused = isinstance(e, ConnectionRefusedError)
            except TimeoutError:
                raise TargetError(f"{self.where} did not answer within {self.timeout_s:g} s") from None
            except http.client.HTTPException as e:
                raise TargetError(f"{self.where}: broken HTTP reply: {type(e).__name__}: {e}") from None
            if attempt + 1 < attempts:
                self._sleep(retry_after if retry_after is not None else min(0.5 * 2**attempt, 8.0))
        if refused:
            raise _SetupMistake(
                f"{self.where} still failing after {attempts} attempt(s): {why}",
                "the first call: is the bot running at this URL?",
            )
        raise TargetError(f"{self.where} still failing after {attempts} attempt(s): {why}")

    def _redirect(self, url: str, code: int, location: str | None) -> str:
        """The URL a redirect sends the POST to, or a TargetError: none is followed by
        default; ``follow_redirects = "same-origin"`` follows 307 and 308 (which keep the
        method and body) to the same scheme, host and port, so that the headers (the
        credentials) never reach another origin."""
        from urllib.parse import urljoin

        if not location:
            raise TargetError(f"{self.where} answered HTTP {code} without a Location header")
        to = urljoin(url, location)
        shown = public_url(to) if to.startswith(("http://", "https://")) else location[:200]
        if self.settings.follow_redirects == "none":
            raise TargetError(
                f"{self.where} answered HTTP {code}, a redirect to {shown}: redirects are not followed (point url "
                "at the final address, or set follow_redirects = \"same-origin\" in the target table)"
            )
        if _origin(to) != _origin(url):
            raise TargetError(
                f"{self.where} answered HTTP {code}, a redirect to another origin ({shown}): not followed, "
                "the request's credentials never leave the target's scheme, host and port"
            )
        if code not in (307, 308):
            raise TargetError(
                f"{self.where} answered HTTP {code}, a redirect to {shown}: following it would turn the POST into a "
                "GET without the question (only 307 and 308 keep it): point url at that address"
            )
        return to

    # -- reply -> TargetResponse ---------------------------------------------
    def parse(self, reply: Any) -> TargetResponse:
        s = self.settings
        answer = lookup(reply, s.answer)
        if answer is _MISSING:
            raise ReplyShapeError(f"{self.where}: the reply has no answer at {s.answer!r} ({_shape_at(reply, s.answer)})")
        if not isinstance(answer, str):
            raise ReplyShapeError(f"{self.where}: the answer at {s.answer!r} is a {type(answer).__name__}, expected a string")
        return TargetResponse(answer=answer, contexts=self._contexts(reply), citations=self._citations(reply))

    def _list_at(self, reply: Any, field: str) -> list[Any]:
        path: str | None = getattr(self.settings, field)
        if not path:
            return []
        value = lookup(reply, path)
        if value is _MISSING or value is None:
            if field in self.settings.model_fields_set:  # asked for explicitly: it must be there
                raise ReplyShapeError(f"{self.where}: the reply has no {field} at {path!r} ({_shape_at(reply, path)})")
            return []
        if not isinstance(value, list):
            raise ReplyShapeError(f"{self.where}: the {field} at {path!r} is a {type(value).__name__}, expected a list")
        return value

    def _contexts(self, reply: Any) -> list[Context]:
        out: list[Context] = []
        fields = self.settings.context_fields
        for i, item in enumerate(self._list_at(reply, "contexts")):
            if isinstance(item, str):
                out.append(Context(id=str(i), text=item))
                continue
            got = {f: lookup(item, fields.get(f, f)) for f in ("id", "text", "doc_id", "score")}
            for f, path in fields.items():  # a field mapped explicitly must be there (a null is a value)
                if got[f] is _MISSING:
                    raise ReplyShapeError(
                        f"{self.where}: context {i} has no {f} at {path!r} ({_shape_at(item, path)}): "
                        f"context_fields.{f} matches nothing in the reply"
                    )
            text = got["text"]
            if not isinstance(text, str):
                raise ReplyShapeError(
                    f"{self.where}: context {i} has no text at {fields.get('text', 'text')!r} ({_shape_at(item, fields.get('text', 'text'))})"
                )
            doc_id = None if got["doc_id"] in (_MISSING, None) else str(got["doc_id"])
            cid = str(got["id"]) if got["id"] not in (_MISSING, None) else (doc_id or str(i))
            score = got["score"] if isinstance(got["score"], (int, float)) and not isinstance(got["score"], bool) else None
            out.append(Context(id=cid, text=text, doc_id=doc_id, score=score))
        return out

    def _citations(self, reply: Any) -> list[str]:
        items = self._list_at(reply, "citations")
        bad = [c for c in items if not isinstance(c, (str, int))]
        if bad:
            raise ReplyShapeError(f"{self.where}: citations must be strings, got {type(bad[0]).__name__}")
        return [str(c) for c in items]

    def _excerpt(self, raw: bytes, limit: int = 200) -> str:
        text = " ".join(raw.decode("utf-8", "replace").split())
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return (text[:limit] + "...") if len(text) > limit else (text or "(empty reply)")


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = -1
    return scheme, (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(scheme)


def _opener() -> Any:
    """urllib's opener, following no redirect by itself (it would turn the POST into a
    bodyless GET and send the headers, credentials included, to whatever host the
    Location names): a redirect reaches :meth:`HttpTarget._post` as an HTTPError."""
    import urllib.request

    class NoRedirects(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    return urllib.request.build_opener(NoRedirects)


def _retry_after(value: str | None) -> float | None:
    try:
        return min(max(float(value), 0.0), MAX_RETRY_AFTER_S) if value else None
    except ValueError:
        return None


def _shape_at(data: Any, path: str) -> str:
    """What the reply has where ``path`` stops matching: the keys there (``keys: a, b``
    at the top, ``keys at 'metadata': page, source`` deeper)."""
    parts = path.split(".") if path else []
    cur, seen = data, []
    for part in parts:
        nxt = lookup(cur, part)
        if nxt is _MISSING:
            break
        cur = nxt
        seen.append(part)
    where = f" at {'.'.join(seen)!r}" if seen else ""
    if isinstance(cur, dict):
        return f"keys{where}: " + (", ".join(sorted(map(str, cur))[:12]) or "none")
    return f"a {type(cur).__name__}{where}"


def http_target(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    request: Any = None,
    answer: str = "answer",
    contexts: str | None = "contexts",
    citations: str | None = "citations",
    context_fields: dict[str, str] | None = None,
    retries: int = 2,
    timeout_s: float = DEFAULT_TARGET_TIMEOUT_S,
    follow_redirects: str = "none",
) -> HttpTarget:
    """An HTTP target for the ``ragdive_target`` fixture; the arguments are the
    keys of ``target = { url = ... }`` (see :class:`HttpTargetConfig`)."""
    values: dict[str, Any] = {"url": url, "request": request, "answer": answer, "retries": retries}
    if follow_redirects != "none":
        values["follow_redirects"] = follow_redirects
    if headers is not None:
        values["headers"] = headers
    if context_fields is not None:
        values["context_fields"] = context_fields
    # contexts/citations given explicitly only when they differ from the default (then they must be there)
    if contexts != "contexts":
        values["contexts"] = contexts
    if citations != "citations":
        values["citations"] = citations
    try:
        settings = HttpTargetConfig.model_validate(values)
    except ValidationError as e:
        raise ConfigError(f"pytest_ragdive.http_target: {one_line(e)}") from None
    return HttpTarget(settings, timeout_s)


def from_config(spec: str | HttpTargetConfig, timeout_s: float = DEFAULT_TARGET_TIMEOUT_S) -> Callable[..., Any]:
    """The target a config names: an import spec, or an HTTP endpoint."""
    if isinstance(spec, HttpTargetConfig):
        return HttpTarget(spec, timeout_s)
    from .frameworks import adapt

    return adapt(load_target(spec))


def openai_target(
    base_url: str,
    model: str,
    *,
    api_key_env: str | None = None,
    system: str | None = None,
    extra: Mapping[str, Any] | None = None,
    timeout_s: float = DEFAULT_TARGET_TIMEOUT_S,
) -> Callable[[History], TargetResponse]:
    """Any OpenAI-compatible ``/v1/chat/completions`` bot as the target.

    ``base_url``: the API root (``http://127.0.0.1:8000/v1``) or the full
    ``.../chat/completions`` URL; ``api_key_env``: the environment variable holding
    the bearer token (read when the target is built, never logged); ``system``: a
    system message put first; ``extra``: more request fields (``temperature``...).
    The answer is ``choices.0.message.content``; such an API returns no retrieved
    documents, so context metrics stay n/a unless the reply carries ``contexts``.
    The same thing in the config: ``target = { url = ".../v1/chat/completions",
    request = { model = "...", messages = "$messages" }, answer = "choices.0.message.content" }``.
    """
    url = base_url.rstrip("/")
    if not url.endswith("/chat/completions"):
        url += "/chat/completions"
    request: dict[str, Any] = {"model": model, "messages": "$messages", **dict(extra or {})}
    headers = {"Authorization": f"Bearer ${{{api_key_env}}}"} if api_key_env else None
    inner = http_target(url, headers=headers, request=request, answer="choices.0.message.content", timeout_s=timeout_s)
    if system is None:
        return inner
    prefix = [{"role": "system", "content": system}]

    def call(messages: History) -> TargetResponse:
        return inner(prefix + list(messages))

    call.ragdive_secrets = inner.ragdive_secrets  # type: ignore[attr-defined]
    return call
