"""serve_bot: the bot under test started from the conftest on a free port, one server per
pytest-xdist worker (the documented fixture of docs/your-bot.md, run here with -n 2)."""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

import pytest

from pytest_ragdive import serve_bot
from pytest_ragdive.core.errors import TargetError

# a chatbot behind HTTP, stdlib only: the port from $PORT, the answer echoes the question
BOT_SERVER = r'''
import json, os, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Bot(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok")

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        q = body["messages"][-1]["content"]
        out = json.dumps({"answer": "Refunds take 5 days." if "refund" in q.lower() else "I don't know.",
                          "contexts": [{"id": "refunds", "text": "Refunds take 5 days."}],
                          "port": os.environ["PORT"]}).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(out))); self.end_headers()
        self.wfile.write(out)

ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), Bot).serve_forever()
'''


def _post(url: str, question: str) -> dict:
    req = urllib.request.Request(url, data=json.dumps({"messages": [{"role": "user", "content": question}]}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())


def test_serve_bot_starts_on_a_free_port_and_stops(tmp_path: Path) -> None:
    script = tmp_path / "bot_server.py"
    script.write_text(BOT_SERVER)
    with serve_bot(["python", str(script)], ready_path="/") as url, \
            serve_bot([sys.executable, str(script)]) as other:
        assert url != other  # two servers, two ports
        reply = _post(url, "How long do refunds take?")
        assert reply["answer"] == "Refunds take 5 days." and url.endswith(":" + reply["port"])
    with pytest.raises(OSError):
        _post(url, "still there?")


def test_a_server_that_dies_or_never_listens_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match=r"exited with 3 before it was ready; its output:\nno config"), \
            serve_bot([sys.executable, "-c", "import sys; print('no config'); sys.exit(3)"]):
        pass
    with pytest.raises(TargetError, match="did not accept connections"), \
            serve_bot([sys.executable, "-c", "import time; time.sleep(30)"], timeout_s=0.5, grace_s=0.5):
        pass


CONFTEST = '''
import os
import pytest
import pytest_ragdive


@pytest.fixture(scope="session")
def ragdive_target():
    """The bot under test, started here: one server per pytest-xdist worker, each on a free port."""
    with pytest_ragdive.serve_bot(["python", "bot_server.py"], ready_path="/") as url:
        with open(f"ports-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.txt", "w") as fh:
            fh.write(url)
        yield pytest_ragdive.http_target(url + "/chat")
'''

CASES = "\n".join(json.dumps({"question_id": f"q{i}", "question": "How long do refunds take?",
                              "expected_answer": "Refunds take 5 days.", "relevant_doc_ids": ["refunds"]})
                  for i in range(6)) + "\n"


@pytest.mark.slow
def test_the_documented_fixture_under_xdist(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(bot_server=BOT_SERVER)
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".jsonl", cases=CASES)
    pytester.makefile(".toml", pyproject='[tool.ragdive]\n[tool.ragdive.suites.core]\nsingle_turn = ["cases.jsonl"]\n')
    res = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider", "--ragdive-suite=core",
                                      "--ragdive-report-dir=report")
    res.assert_outcomes(passed=6)
    urls = {p.read_text() for p in pytester.path.glob("ports-gw*.txt")}
    assert len(urls) == 2  # one server per worker, on different ports
    data = json.loads((pytester.path / "report" / "results.json").read_text())
    assert all(c["turns"][0]["answer"] == "Refunds take 5 days." for c in data["conversations"])
