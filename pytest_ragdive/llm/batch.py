"""``judge_mode = "batch"``: judge requests sent through OpenAI's batch API.

:class:`BatchSender` collects the judge requests that miss the cache; once no
new one has come for ``window_s`` (or ``max_lines`` are waiting) it uploads
them as one JSONL file (``POST /files``, purpose ``batch``), creates a batch
(``POST /batches``, endpoint ``/v1/chat/completions``), polls it every
``poll_s`` for at most ``max_wait_s``, downloads the output file and answers
each request with its line. The client stores every answer in the cache
under the same key as a direct call, so a rerun is free and
``record_mode = none`` replays it. Tokens are priced at the batch rate.

A batch that fails, expires, is cancelled or is still running after
``max_wait_s`` (the batch is then cancelled), and a line the output lacks,
raise :class:`~pytest_ragdive.errors.BatchUnavailable` for the requests
concerned: the client sends those as normal requests and says so once.
Only OpenAI-compatible endpoints (``openai/`` models, ``api_base``).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import BatchUnavailable
from .keys import CachedResponse
from .prices import PriceMap
from .transport import OPENAI_DEFAULT_BASE, Request, api_model_name

DONE = ("completed", "failed", "expired", "cancelled")


@dataclass
class _Pending:
    custom_id: str
    model: str
    body: dict[str, Any]
    future: asyncio.Future[CachedResponse]


@dataclass
class BatchSender:
    """Collects requests on the running loop and sends them as batches."""

    api_base: str | None
    poll_s: float = 10.0
    max_wait_s: float = 3600.0
    window_s: float = 0.5
    max_lines: int = 50_000
    prices: PriceMap = field(default_factory=PriceMap)
    batches: int = 0  # batches submitted
    answered: int = 0  # requests answered by a batch
    _pending: list[_Pending] = field(default_factory=list)
    _timer: asyncio.TimerHandle | None = None
    _ids: int = 0
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def base(self) -> str:
        base = self.api_base or os.environ.get("OPENAI_API_BASE") or os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE
        return base.rstrip("/")

    async def send(self, model: str, req: Request, api_key: str | None) -> CachedResponse:
        """The answer of one request, from the batch it joins."""
        loop = asyncio.get_running_loop()
        self._ids += 1
        name = api_model_name(model)
        item = _Pending(f"r{self._ids}", model, {"model": name, "messages": req.messages, **req.params},
                        loop.create_future())
        self._pending.append(item)
        if self._timer is not None:
            self._timer.cancel()
        if len(self._pending) >= self.max_lines:
            self._flush(api_key)
        else:
            self._timer = loop.call_later(self.window_s, self._flush, api_key)
        return await item.future

    def _flush(self, api_key: str | None) -> None:
        items, self._pending, self._timer = self._pending, [], None
        if items:
            task = asyncio.get_running_loop().create_task(self._run(items, api_key))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _run(self, items: list[_Pending], api_key: str | None) -> None:
        try:
            answers = await self._submit_and_wait(items, api_key)
        except BatchUnavailable as e:
            answers, why = {}, str(e)
        except asyncio.CancelledError:
            for it in items:
                if not it.future.done():
                    it.future.cancel()
            raise
        except Exception as e:  # noqa: BLE001 - any failure of the batch path falls back
            answers, why = {}, f"batch API error: {type(e).__name__}: {e}"
        else:
            why = "the batch output has no line for this request"
        for it in items:
            if it.future.done():
                continue
            resp = answers.get(it.custom_id)
            if resp is None:
                it.future.set_exception(BatchUnavailable(why))
            else:
                self.answered += 1
                it.future.set_result(resp)

    async def _submit_and_wait(self, items: list[_Pending], api_key: str | None) -> dict[str, CachedResponse]:
        import aiohttp

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        lines = "\n".join(json.dumps({"custom_id": it.custom_id, "method": "POST", "url": "/v1/chat/completions",
                                      "body": it.body}) for it in items) + "\n"
        models = {it.custom_id: it.model for it in items}
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120), trust_env=True) as s:
            form = aiohttp.FormData()
            form.add_field("purpose", "batch")
            form.add_field("file", lines.encode(), filename="ragdive-judge.jsonl", content_type="application/jsonl")
            up = await _json(await s.post(f"{self.base}/files", data=form, headers=headers), "upload")
            batch = await _json(await s.post(f"{self.base}/batches", json={
                "input_file_id": up["id"], "endpoint": "/v1/chat/completions", "completion_window": "24h",
                "metadata": {"source": "pytest-ragdive"}}, headers=headers), "create")
            self.batches += 1
            deadline = time.monotonic() + self.max_wait_s
            while batch.get("status") not in DONE:
                if time.monotonic() >= deadline:
                    try:
                        await s.post(f"{self.base}/batches/{batch['id']}/cancel", headers=headers)
                    except aiohttp.ClientError:
                        pass
                    raise BatchUnavailable(f"batch {batch['id']} still {batch.get('status')} after "
                                           f"{self.max_wait_s:g} s (batch_max_wait_s)")
                await asyncio.sleep(min(self.poll_s, max(0.0, deadline - time.monotonic())))
                batch = await _json(await s.get(f"{self.base}/batches/{batch['id']}", headers=headers), "poll")
            status = batch.get("status")
            if status in ("failed", "cancelled") or not batch.get("output_file_id"):
                errors = ((batch.get("errors") or {}).get("data") or [{}])[0]
                detail = errors.get("message") or errors.get("code") or ""
                raise BatchUnavailable(f"batch {batch['id']} {status}" + (f": {detail}" if detail else ""))
            r = await s.get(f"{self.base}/files/{batch['output_file_id']}/content", headers=headers)
            if r.status >= 400:
                raise BatchUnavailable(f"batch output download failed: HTTP {r.status}")
            text = (await r.read()).decode("utf-8")
        out: dict[str, CachedResponse] = {}
        for line in text.splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            resp = (row.get("response") or {})
            if resp.get("status_code") != 200 or row.get("custom_id") not in models:
                continue
            data = resp.get("body") or {}
            choice = (data.get("choices") or [{}])[0]
            content = (choice.get("message") or {}).get("content") or ""
            usage = data.get("usage") or {}
            pt, ct = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
            model = models[row["custom_id"]]
            out[row["custom_id"]] = CachedResponse(
                content=content if isinstance(content, str) else json.dumps(content),
                model=data.get("model") or api_model_name(model), prompt_tokens=pt, completion_tokens=ct,
                finish_reason=choice.get("finish_reason"), cost_usd=self.prices.cost(model, pt, ct, batch=True),
                created=time.time(),
            )
        return out

    async def aclose(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        for it in self._pending:
            if not it.future.done():
                it.future.cancel()
        self._pending = []


async def _json(r: Any, what: str) -> dict[str, Any]:
    async with r:
        raw = await r.read()
        if r.status >= 400:
            raise BatchUnavailable(f"batch {what} refused: HTTP {r.status}: {raw[:200].decode('utf-8', 'replace')}")
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise BatchUnavailable(f"batch {what}: unexpected reply")
    return data
