"""Reply paths that match nothing are errors naming the path and the keys the reply
has (issue 24). On 9690bde a wrong ``context_fields`` path (``doc_id = "meta.source"``
where the replies carry ``metadata.source``) left doc_id null: recall@k, MRR, nDCG and
context precision read 0 with no note, and the gate passed when they were not gated."""

from __future__ import annotations

import json
from typing import Any

import pytest
import test_http_target
from conftest import CONVS, PYPROJECT, SINGLE
from test_http_target import HISTORY, ok

from pytest_ragdive import http_target as http
from pytest_ragdive.core.errors import TargetError

pytestmark = pytest.mark.slow  # serves HTTP from threads of its own

service = test_http_target.service  # the fixture: a chat service on 127.0.0.1

DOCS = {"sky": "The sky is blue on a clear day.", "grass": "Grass is green in spring.", "snow": "Snow is white and cold."}


def reply_for(body: dict[str, Any], broken: str | None = None) -> Any:
    """The toy bot as a service whose contexts carry their source under metadata.source;
    a question about ``broken`` gets a context without it."""
    users = [m["content"].lower() for m in body["messages"] if m["role"] == "user"]
    hits = [d for d in DOCS if d in users[-1]] or [d for d in DOCS if d in " ".join(users)]
    if not hits:
        return ok({"answer": "I don't know.", "contexts": []})
    doc = hits[-1]
    meta = {"page": 1} if doc == broken else {"source": doc, "page": 1}
    return ok({"answer": DOCS[doc], "contexts": [{"id": f"{doc}#0", "text": DOCS[doc], "metadata": meta}]})


def test_a_context_field_path_that_matches_nothing_names_the_path_and_the_keys(service: Any) -> None:
    svc = service(lambda body, n: reply_for(body))
    wrong = http(svc.url, context_fields={"doc_id": "meta.source"})
    with pytest.raises(TargetError) as e:
        wrong(HISTORY)
    msg = str(e.value)
    assert "context 0 has no doc_id at 'meta.source' (keys: id, metadata, text)" in msg and "\n" not in msg
    assert wrong.first_reply_error is not None and "meta.source" in wrong.first_reply_error
    # one level deeper: the keys found where the path stops matching
    with pytest.raises(TargetError, match=r"no doc_id at 'metadata\.src' \(keys at 'metadata': page, source\)"):
        http(svc.url, context_fields={"doc_id": "metadata.src"})(HISTORY)
    right = http(svc.url, context_fields={"doc_id": "metadata.source"})
    assert right(HISTORY).contexts[0].doc_id == "snow" and right.first_reply_error is None


def test_a_later_reply_that_does_not_fit_fails_that_reply_only(service: Any) -> None:
    svc = service(lambda body, n: reply_for(body, broken="snow"))
    target = http(svc.url, context_fields={"doc_id": "metadata.source"})
    assert target([{"role": "user", "content": "What colour is the sky?"}]).contexts[0].doc_id == "sky"
    with pytest.raises(TargetError, match=r"context 0 has no doc_id at 'metadata\.source' \(keys at 'metadata': page\)"):
        target(HISTORY)
    assert target.first_reply_error is None  # the first reply was fine: not a set-up mistake


def _project(pytester: pytest.Pytester, url: str, doc_id: str) -> None:
    data = pytester.mkdir("data")
    (data / "single.jsonl").write_text("\n".join(json.dumps(r) for r in SINGLE) + "\n")
    (data / "convs.yaml").write_text(CONVS)
    extra = f'concurrency = 1\ntarget = {{ url = "{url}", context_fields = {{ doc_id = "{doc_id}" }} }}'
    pytester.makefile(".toml", pyproject=PYPROJECT.format(extra=extra))


def test_a_wrong_path_in_the_first_reply_stops_the_session_with_one_line(pytester: pytest.Pytester, service: Any) -> None:
    svc = service(lambda body, n: reply_for(body))
    _project(pytester, svc.url, "meta.source")
    res = pytester.runpytest_subprocess("--ragdive-suite=core", "-p", "no:cacheprovider", timeout=90)
    out = res.stdout.str() + res.stderr.str()
    assert res.ret == pytest.ExitCode.USAGE_ERROR, out
    assert out.count("has no doc_id at 'meta.source' (keys: id, metadata, text)") == 1, out
    assert "ragdive setup error" in out and "Traceback" not in out


def test_a_later_reply_without_the_path_fails_its_item(pytester: pytest.Pytester, service: Any) -> None:
    svc = service(lambda body, n: reply_for(body, broken="snow"))
    _project(pytester, svc.url, "metadata.source")
    res = pytester.runpytest_subprocess("--ragdive-suite=core", "-p", "no:cacheprovider", timeout=90)
    res.assert_outcomes(passed=3, failed=2)  # q-snow and c-colours ask about snow
    res.stdout.fnmatch_lines(["*context 0 has no doc_id at 'metadata.source' (keys at 'metadata': page)*"])
    out = json.loads((pytester.path / "report" / "results.json").read_text())
    sky = next(c for c in out["conversations"] if c["id"] == "q-sky")
    assert sky["turns"][0]["contexts"][0]["doc_id"] == "sky" and sky["turns"][0]["scores"]["recall_at_k"] == 1.0
