"""The fake server's replies to ``draft-golden``'s drafter (the ``GoldenDraft`` schema):
valid drafts built from the documents in the prompt, so that the command runs end to
end offline. Each case asks about a document's title and takes its ground truths from
the document's sentences; the out-of-scope case asks what no document covers and
expects a refusal; a conversation's later turns refer back with "it"."""

from __future__ import annotations

import re
from typing import Any

_DOC = re.compile(r"Document id: (?P<id>[^\n]+)\nTitle: (?P<title>[^\n]*)\n<<<BEGIN DOCUMENT \w+>>>\n(?P<text>.*?)\n<<<END DOCUMENT",
                  re.S)
_KIND = re.compile(r"prompt id: draft_(\w+)")
_TURNS = re.compile(r"Write one conversation of (\d+) turns")


def _sentences(text: str) -> list[str]:
    body = " ".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    out = [s.strip() for s in re.split(r"(?<=[.!?])\s+", body) if len(s.strip()) > 3]
    return out or [body.strip() or "No details."]


def draft_reply(body: dict[str, Any]) -> dict[str, Any]:
    msgs = body.get("messages") or []
    system = next((m.get("content", "") for m in msgs if m.get("role") == "system"), "")
    user = msgs[-1].get("content", "") if msgs else ""
    kind = (m.group(1) if (m := _KIND.search(system)) else "simple")
    docs = [(m["id"].strip(), m["title"].strip() or m["id"].strip(), m["text"]) for m in _DOC.finditer(user)]
    if not docs:
        docs = [("doc", "the product", "No details.")]
    did, title, text = docs[0]
    first = _sentences(text)
    topic = title.lower()

    def turn(q: str, gt: str, ids: list[str], qtype: str = "Initial", standalone: str | None = None) -> dict[str, Any]:
        return {"rag_input": q, "standalone_question": standalone if standalone is not None else q,
                "ground_truth": gt, "question_type": qtype, "relevant_doc_ids": ids}

    if kind == "out_of_scope":
        return {"turns": [turn("Can I pay for my order with seashells?",
                               "I don't know: the help centre does not cover that.", [])]}
    if kind == "multi_document" and len(docs) > 1:
        did2, title2, text2 = docs[1]
        return {"turns": [turn(f"What should I know about {topic} and {title2.lower()}?",
                               f"{first[0]} {_sentences(text2)[0]}", [did, did2])]}
    if kind == "distracting" and len(docs) > 1:
        return {"turns": [turn(f"Unlike {docs[1][1].lower()}, how does {topic} work?", first[0], [did])]}
    if kind == "conversation":
        n = int(m.group(1)) if (m := _TURNS.search(system)) else 3
        turns = [turn(f"How does {topic} work?", first[0], [did])]
        for i in range(1, n):
            gt = first[i] if i < len(first) else first[-1]
            turns.append(turn(f"And what else should I know about it (point {i + 1})?", gt, [did], "Follow-up",
                              f"What else should I know about {topic} (point {i + 1})?"))
        return {"turns": turns}
    return {"turns": [turn(f"How does {topic} work?", first[0], [did])]}
