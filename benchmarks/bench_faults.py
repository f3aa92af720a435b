"""What LLM faults cost a real run: conversations lost, scores lost, wall time.

    python benchmarks/bench_faults.py [--conversations 12] [--turns 2] [--rates 0,0.3,0.6]
                                      [--no-dead] [--json out.json]

Each row is one ``pytest`` session on a toy project whose core suite is
generated (RAG-DIVE simulator and validator) and judged by the LLM, against the
fake OpenAI-compatible server (:class:`pytest_ragdive.testing.FakeLLMServer`,
in this process; pytest runs in a subprocess). Faults are the server's default
mix (429 with Retry-After, 500, a hang past the client's timeout, malformed
JSON, JSON with the wrong fields) at the given rate; the client runs with
``timeout_s = 2`` (the hang lasts 3 s) and its default retries. "rerun" is a
second session with the same cache against the same faulty server: it asks
again only what the first run lost (nothing invalid was cached).

The last row is an endpoint that accepts connections and never answers, with
every client default (``timeout_s``, ``max_retries``, ``breaker_failures``,
``concurrency``, transport): the circuit breaker ends the run.

lost conversations: items whose conversation ended in an error (simulator,
validator or judge calls that failed for good); lost scores: judged values
that are None because a judge's output stayed invalid, among the
conversations that ran.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_ragdive.testing import FakeLLMServer, example_from_schema  # noqa: E402

DOCS = {
    "sky": "The sky is blue on a clear day.",
    "grass": "Grass is green in spring.",
    "snow": "Snow is white and cold.",
    "sea": "The sea is salty and deep.",
}
COLOUR = {"sky": "blue", "grass": "green", "snow": "white", "sea": "salty"}

CONFTEST = textwrap.dedent(
    '''
    import pytest
    from pytest_ragdive import Context, TargetResponse

    DOCS = __DOCS__

    def bot(messages):
        text = " ".join(m["content"].lower() for m in messages if m["role"] == "user")
        hits = [d for d in DOCS if d in text]
        if not hits:
            return TargetResponse(answer="I don't know.")
        doc = hits[-1]
        return TargetResponse(answer=DOCS[doc], contexts=[Context(id=doc + "#0", doc_id=doc, text=DOCS[doc])])

    @pytest.fixture(scope="session")
    def ragdive_target():
        return bot
    '''
).replace("__DOCS__", repr(DOCS))


def handler(body: dict[str, Any]) -> Any:
    """Simulator: a question about its document, then a follow-up; validator: valid;
    judges: a minimal positive verdict."""
    rf = body.get("response_format") or {}
    schema = (rf.get("json_schema") or {}).get("schema") or {}
    title = schema.get("title", "")
    if title == "GeneratedTurn":
        first = [m for m in body["messages"] if m["role"] != "system"][0]["content"]
        doc = next((d for d in DOCS if DOCS[d] in first), "sky")
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if turn == 0:
            q = f"Tell me about the {doc}."
            return {"rag_input": q, "standalone_question": q, "ground_truth": DOCS[doc], "question_type": "Initial"}
        return {
            "rag_input": "What is it like?",
            "standalone_question": f"What is the {doc} like?",
            "ground_truth": COLOUR[doc],
            "question_type": "Follow-up",
        }
    if title == "ValidatorOutput":
        return {"valid": True, "reason": "ok", "failed_checks": []}
    verdicts: dict[str, Any] = {
        "FaithfulnessJudgment": {"claims": [{"claim": "c", "supported": True}]},
        "ContextPrecisionJudgment": {"verdicts": [{"context": 1, "relevant": True}]},
        "ContextRecallJudgment": {"statements": [{"statement": "s", "attributed": True}]},
        "CorrectnessJudgment": {"correct": True, "reason": "judged"},
        "ForgetfulnessJudgment": {"forgetful": False, "reason": "kept it"},
        "ContextRetentionJudgment": {"retained": True, "reason": "judged"},
    }
    return verdicts.get(title) or example_from_schema(schema)


def make_project(root: Path, url: str, conversations: int, turns: int, llm: dict[str, Any]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "conftest.py").write_text(CONFTEST)
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"id": d, "title": d.title(), "text": t}) + "\n" for d, t in DOCS.items())
    )
    llm_lines = "".join(f"{k} = {json.dumps(v)}\n" for k, v in {"api_base": url, **llm}.items())
    (root / "pyproject.toml").write_text(
        f"""
[tool.ragdive]
corpus = "corpus.jsonl"
report_dir = "report"
model = "openai/fake-model"
[tool.ragdive.llm]
{llm_lines}
[tool.ragdive.suites.core]
generated = {{ conversations = {conversations}, turns = {turns}, seed = 1 }}
"""
    )


def run_session(root: Path, timeout_s: float) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "sk-bench-not-a-key"}
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--ragdive-suite=core"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        rc: int | str = proc.returncode
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
    except subprocess.TimeoutExpired:
        rc, tail = "timeout", []
    wall = time.perf_counter() - t0
    path = root / "report" / "results.json"
    data = json.loads(path.read_text()) if path.is_file() else {}
    convs = data.get("conversations") or []
    lost_convs = sum(1 for c in convs if c.get("error"))
    scores = lost_scores = 0
    for c in convs:
        if c.get("error"):
            continue
        verdicts = [v for t in c.get("turns", []) for v in (t.get("verdicts") or {}).values()]
        verdicts += list((c.get("verdicts") or {}).values())
        scores += len(verdicts)
        lost_scores += sum(1 for v in verdicts if str(v.get("reason", "")).startswith("invalid judge output"))
    cache = ((data.get("llm") or {}).get("cache")) or {}
    return {
        "rc": rc,
        "wall_s": round(wall, 1),
        "conversations": len(convs),
        "lost_conversations": lost_convs,
        "scores": scores,
        "lost_scores": lost_scores,
        "invalid_not_stored": cache.get("rejected", 0),
        "tail": tail,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conversations", type=int, default=12)
    ap.add_argument("--turns", type=int, default=2)
    ap.add_argument("--rates", default="0,0.3,0.6")
    ap.add_argument("--transport", default="openai_http", help="for the fault-rate rows (the dead row uses defaults)")
    ap.add_argument("--no-dead", action="store_true", help="skip the never-answering endpoint")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ragdive-bench-faults-") as tmp:
        for rate in [float(r) for r in args.rates.split(",")]:
            with FakeLLMServer(handler, fault_rate=rate, seed=7, hang_s=3.0, retry_after_s=0.2) as srv:
                root = Path(tmp) / f"rate-{rate}"
                make_project(root, srv.url, args.conversations, args.turns, {"timeout_s": 2, "transport": args.transport})
                first = run_session(root, 900)
                first_requests = srv.request_count
                again = run_session(root, 900)
                rows.append(
                    {"endpoint": f"fault rate {rate:g}", "first": first, "rerun": again,
                     "requests": [first_requests, srv.request_count - first_requests]}
                )  # fmt: skip
        if not args.no_dead:
            with FakeLLMServer(handler, fault_rate=1.0, faults=("timeout",), hang_s=3600) as srv:
                root = Path(tmp) / "dead"
                make_project(root, srv.url, args.conversations, args.turns, {})
                dead = run_session(root, 600)
                rows.append({"endpoint": "never answers (defaults)", "first": dead, "rerun": None,
                             "requests": [srv.request_count, 0]})  # fmt: skip

    head = (
        f"{'endpoint':<26} {'run':<6} {'wall s':>7} {'convs':>6} {'lost convs':>10} "
        f"{'scores':>7} {'lost scores':>11} {'requests':>9} {'exit':>5}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        for label, res, n in (("first", r["first"], r["requests"][0]), ("rerun", r["rerun"], r["requests"][1])):
            if res is None:
                continue
            print(
                f"{r['endpoint']:<26} {label:<6} {res['wall_s']:>7.1f} {res['conversations']:>6} "
                f"{res['lost_conversations']:>10} {res['scores']:>7} {res['lost_scores']:>11} {n:>9} {res['rc']!s:>5}"
            )
    dead_rows = [r for r in rows if r["rerun"] is None]
    for r in dead_rows:
        print(f"\nnever-answering endpoint: {r['first']['tail'][-1] if r['first']['tail'] else ''}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
