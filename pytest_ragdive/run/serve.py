"""Start the bot under test from the conftest: :func:`serve_bot`.

A fixed port collides as soon as two pytest processes start the bot: ``pytest -n 2``
(pytest-xdist runs a session fixture once per worker process), two CI jobs on one
machine, a developer's own server. :func:`serve_bot` starts the server command on a
free port the operating system gives (``{port}`` in the command, and ``$PORT`` in its
environment), waits until the port accepts connections (and, with ``ready_path``, until
that path answers), yields ``http://127.0.0.1:PORT``, and stops the process (its whole
process group) at the end. A server that exits before it is ready is an error with the
last lines of its output; a port taken between the choice and the server's bind is
retried on another port::

    @pytest.fixture(scope="session")   # once per pytest-xdist worker, each on its own port
    def ragdive_target():
        with pytest_ragdive.serve_bot(["uvicorn", "app:app", "--port", "{port}"]) as url:
            yield pytest_ragdive.http_target(url + "/chat")
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from ..core.errors import TargetError

__all__ = ["free_port", "serve_bot"]


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now (the OS's choice for a bind to port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _accepts(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.2):
        return True
    return False


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1.0):  # noqa: S310 - the local server we started
            return True
    except urllib.error.HTTPError as e:
        return e.code < 500
    except OSError:
        return False


def _stop(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGTERM)
        else:  # pragma: no cover
            proc.terminate()
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if os.name == "posix":
                os.killpg(proc.pid, signal.SIGKILL)
            else:  # pragma: no cover
                proc.kill()
        proc.wait(5)


def _tail(path: Path, lines: int = 12) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


@contextlib.contextmanager
def serve_bot(
    command: Sequence[str],
    *,
    host: str = "127.0.0.1",
    ready_path: str | None = None,
    timeout_s: float = 30.0,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    attempts: int = 3,
    grace_s: float = 5.0,
) -> Iterator[str]:
    """Run ``command`` (``{port}`` and ``{host}`` replaced in each argument; ``PORT`` and
    ``HOST`` set in its environment) until the ``with`` block ends; yields the base URL.
    ``command[0] == "python"`` runs the interpreter running the tests."""
    if not command:
        raise ValueError("serve_bot: an empty command")
    last = ""
    for _ in range(max(1, attempts)):
        port = free_port(host)
        argv = [a.replace("{port}", str(port)).replace("{host}", host) for a in command]
        if argv[0] == "python":
            argv[0] = sys.executable
        full_env = {**os.environ, **(env or {}), "PORT": str(port), "HOST": host}
        with tempfile.TemporaryDirectory(prefix="ragdive-bot-") as tmp:
            log = Path(tmp) / "output.log"
            with log.open("wb") as out:
                proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=full_env, cwd=cwd,
                                        start_new_session=os.name == "posix")
            try:
                url = f"http://{host}:{port}"
                deadline = time.monotonic() + timeout_s
                ready = False
                while time.monotonic() < deadline:
                    if proc.poll() is not None:
                        break
                    if _accepts(host, port) and (ready_path is None or _answers(url + ready_path)):
                        ready = True
                        break
                    time.sleep(0.05)
                if ready:
                    yield url
                    return
                if proc.poll() is None:
                    raise TargetError(f"serve_bot: {' '.join(argv)} did not accept connections on {host}:{port} "
                                      f"within {timeout_s:g} s; its output:\n{_tail(log)}")
                last = f"serve_bot: {' '.join(argv)} exited with {proc.returncode} before it was ready; its output:\n{_tail(log)}"
                if "in use" not in last.lower():  # only a port taken in between is worth another try
                    raise TargetError(last)
            finally:
                _stop(proc, grace_s)
    raise TargetError(last)
