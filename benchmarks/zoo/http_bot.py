"""(f) Hive Works: a bot behind HTTP with a reply shape of its own. The bot remembers the
previous user turn only (a window of one, weight 0.6) and answers with its single best
sentence. The server answers ``POST /chat`` with a body ``{"query": ..., "history": [...]}``:

    {"data": {"reply": "...", "sources": [{"chunk_id": ..., "meta": {"source": doc id},
     "content": ...}], "cited": [...]}}

so the plugin's HTTP target reads it with reply paths (``answer = "data.reply"``...,
:func:`target_config`). The knobs of a request are its ``X-Zoo-Knobs`` and ``X-Zoo-Seed``
headers when it sends them (the target's config sends ``${ZOO_KNOBS}`` and ``${ZOO_SEED}``
from the pytest process's environment, like a deployment flag), else the server's own.
Run one by hand: ``python -m zoo.http_bot --port 8765``."""

from __future__ import annotations

import argparse
import json
import random
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .base import ZooBot
from .common import Doc, Knobs, Sentence, extract, weights

MAX_BODY = 1_000_000


class CoworkingBot(ZooBot):
    domain = "coworking"
    k = 3

    def query(self, earlier: list[str], current: str) -> dict[str, float]:
        return weights(current, earlier[-1:], decay=0.6)

    def read(self, hits: list[tuple[Doc, float]], query: Mapping[str, float], rng: random.Random) -> list[Sentence]:
        return extract(self.corpus, hits, query, self.knobs, n=1)


def target_config(url: str) -> dict[str, Any]:
    """The ``target`` table of ``[tool.ragdive]`` that reads this server's replies."""
    return {
        "url": url,
        "request": {"query": "$question", "history": "$history"},
        "answer": "data.reply",
        "contexts": "data.sources",
        "citations": "data.cited",
        "context_fields": {"id": "chunk_id", "doc_id": "meta.source", "text": "content"},
        "headers": {"X-Zoo-Knobs": "${ZOO_KNOBS}", "X-Zoo-Seed": "${ZOO_SEED}"},
    }


def _handler(server: BotServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            size = int(self.headers.get("Content-Length") or 0)
            if self.path != "/chat" or not 0 < size <= MAX_BODY:
                self.send_error(404 if self.path != "/chat" else 400)
                return
            try:
                body = json.loads(self.rfile.read(size))
                history = [m for m in body.get("history") or [] if isinstance(m, dict)]
                messages = [*history, {"role": "user", "content": str(body["query"])}]
            except (ValueError, KeyError, TypeError):
                self.send_error(400)
                return
            bot = server.bot_for(self.headers.get("X-Zoo-Knobs"), self.headers.get("X-Zoo-Seed"))
            if bot is None:
                self.send_error(400, "unknown knob")
                return
            answer, docs, cited = bot.respond(messages)
            reply = {"data": {
                "reply": answer,
                "sources": [{"chunk_id": f"{d.id}#0", "meta": {"source": d.id}, "content": d.text} for d in docs],
                "cited": cited,
            }}
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (quiet)
            return

    return Handler


class BotServer:
    """The bot on 127.0.0.1 (port 0: a free one), served from a daemon thread."""

    def __init__(self, knobs: Knobs | None = None, port: int = 0) -> None:
        self.bot = CoworkingBot(knobs)
        self._bots: dict[tuple[str, str], CoworkingBot] = {}
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def bot_for(self, knobs: str | None, seed: str | None) -> CoworkingBot | None:
        """The bot of a request's knob headers (None: a knob it does not know); the server's own without them."""
        if knobs is None and seed is None:
            return self.bot
        key = (knobs or "", seed or "0")
        with self._lock:
            if key not in self._bots:
                try:
                    self._bots[key] = CoworkingBot(Knobs.from_env({"ZOO_KNOBS": key[0], "ZOO_SEED": key[1]}))
                except ValueError:
                    return None
            return self._bots[key]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/chat"

    def __enter__(self) -> BotServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8765)
    args = ap.parse_args()
    with BotServer(port=args.port) as srv:
        print(f"serving {srv.url} (knobs: {','.join(sorted(srv.bot.knobs.names)) or 'none'}); Ctrl-C stops")
        try:
            srv.thread.join()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
