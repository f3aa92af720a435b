"""The example chatbot in production: a Starlette app serving the monitored bot.

    pip install 'pytest-ragdive[serve]'                     # starlette, uvicorn, prometheus_client
    uvicorn serve:create_app --factory --port 8000          # from example_project/

Routes:

- ``POST /chat`` ``{"messages": [{"role": "user", "content": "..."}], "conversation_id": "..."}``
  -> ``{"request_id", "answer", "contexts", "citations"}``: the same bot the tests gate
  (``example_rag.make_bot``), wrapped with ``pytest_ragdive.online.monitored``;
  ``contexts`` are the chunks it used (``id``, ``doc_id``, ``text``, ``score``), the
  shape ``target = { url = "http://localhost:8000/chat" }`` reads by default.
- ``POST /feedback`` ``{"request_id": "...", "category": "wrong_answer"}``: a thumbs-down.
- ``GET /metrics``: the Prometheus metrics (scrape it; alerts from
  ``python -m pytest_ragdive alert-rules``).

``RAGDIVE_REQUEST_LOG=requests.jsonl`` also writes the request log that
``python -m pytest_ragdive logs-to-suite`` turns into regression cases.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator
from typing import Any

from example_rag import make_bot
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from pytest_ragdive.online import RagMetrics, monitored


def create_app(bot: Any = None, *, log: str | None = None, metrics: RagMetrics | None = None) -> Starlette:
    metrics = metrics or RagMetrics()
    chat_bot = monitored(bot or make_bot(), metrics=metrics, log=log or os.environ.get("RAGDIVE_REQUEST_LOG"))

    async def chat(request: Request) -> Response:
        body = await request.json()
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(messages, list) or not messages:
            return JSONResponse({"error": "expected {'messages': [...]}"}, status_code=422)
        request_id = uuid.uuid4().hex
        # the bot is sync: run it in the thread pool, the monitor never blocks it
        response = await run_in_threadpool(
            chat_bot, messages, request_id=request_id, conversation_id=body.get("conversation_id")
        )
        return JSONResponse({
            "request_id": request_id,
            "answer": response.answer,
            "contexts": [c.model_dump(mode="json") for c in response.contexts],  # what the answer was built from
            "citations": response.citations,
        })

    async def feedback(request: Request) -> Response:
        body = await request.json()
        chat_bot.record_feedback(str(body.get("category", "other")), request_id=body.get("request_id"))
        return Response(status_code=204)

    async def metrics_route(request: Request) -> Response:
        payload, content_type = metrics.exposition()
        return Response(payload, media_type=content_type)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        chat_bot.monitor.close()  # write what is still queued

    app = Starlette(
        routes=[
            Route("/chat", chat, methods=["POST"]),
            Route("/feedback", feedback, methods=["POST"]),
            Route("/metrics", metrics_route),
        ],
        lifespan=lifespan,
    )
    app.state.bot = chat_bot
    app.state.metrics = metrics
    return app
