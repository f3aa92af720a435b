"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``):
open a page at a window size, evaluate JavaScript in it, take a screenshot. No network,
no profile kept, no package beyond the standard library; the browser and its children
are stopped whatever happens."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)


class Browser:
    """One headless Chromium with one page; use as a context manager."""

    def __init__(self, width: int = 1280, height: int = 800, timeout: float = 60) -> None:
        self.width, self.height, self.timeout = width, height, timeout
        self._id = 0
        self._buf = b""
        self._events: list[dict[str, Any]] = []

    def __enter__(self) -> Browser:
        self._profile = tempfile.mkdtemp(prefix="ragdive-chromium-")
        to_chrome_r, self._w = os.pipe()
        self._r, from_chrome_w = os.pipe()
        cmd = [
            CHROMIUM or "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
            "--hide-scrollbars", "--remote-debugging-pipe", f"--user-data-dir={self._profile}",
            f"--window-size={self.width},{self.height}", "about:blank",
        ]

        def fds() -> None:  # the protocol's pipe ends are fds 3 (commands in) and 4 (replies out)
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)  # (either may be 3 or 4 already)
            os.dup2(a, 3)
            os.dup2(b, 4)

        # pass_fds: fds 3 and 4 stay open in the child after preexec_fn set them
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=fds,
                                     pass_fds=(3, 4), start_new_session=True)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        targets = self._send("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self._session = self._send("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"]
        self.call("Page.enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False})
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        os.close(self._w)
        os.close(self._r)
        shutil.rmtree(self._profile, ignore_errors=True)

    # -- the protocol ---------------------------------------------------------
    def _read(self) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buf:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def _send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._events.append(reply)

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self._send(method, params, self._session)

    def _wait_event(self, name: str) -> None:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            for i, ev in enumerate(self._events):
                if ev.get("method") == name:
                    del self._events[: i + 1]
                    return
            self._events.append(self._read())
        raise TimeoutError(f"no {name}")

    # -- what a test does -------------------------------------------------------
    def open(self, url: str) -> None:
        self._events.clear()
        self.call("Page.navigate", {"url": url})
        self._wait_event("Page.loadEventFired")

    def js(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        res = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in res:
            raise RuntimeError(f"{expression[:80]}: {res['exceptionDetails'].get('text')}")
        return res["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        """The window as it is now (``width`` x ``height``), as a PNG."""
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))
        return path
