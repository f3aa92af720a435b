"""(a) The bundled example (example_project/example_rag, the Lumio help centre), reused as it
is: the knobs it has are its own settings (``history="none"``, ``top_k=1``, the ``memory``
fault, the ``paraphrase`` reader, a corpus without the current twins of its archived
articles); the ones it lacks act on its reply (the same functions as the other bots')."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_ragdive import TargetResponse

from .common import COURTESY, Knobs, change_numbers, split_sentences, tokens

EXAMPLE_DIR = Path(__file__).resolve().parents[2] / "example_project"


def _outdated_corpus(source: Path) -> Path:
    """The example's corpus without the current article of each archived pair
    (``plans-and-pricing`` when ``plans-and-pricing-2023`` exists): what an index built
    from last year's export would hold."""
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    ids = {r["id"] for r in rows}
    replaced = {i for i in ids for r in rows if "archived" in r.get("title", "").lower() and r["id"].startswith(i + "-")}
    out = Path(tempfile.gettempdir()) / f"zoo-example-outdated-{os.getpid()}.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in rows if r["id"] not in replaced), encoding="utf-8")
    return out


class ExampleBot:
    """The example bot under the zoo's knobs."""

    def __init__(self, knobs: Knobs | None = None) -> None:
        if str(EXAMPLE_DIR) not in sys.path:
            sys.path.insert(0, str(EXAMPLE_DIR))
        from example_rag import DEFAULT_CORPUS, make_bot
        from example_rag.faults import Faults

        self.knobs = Knobs.from_env() if knobs is None else knobs
        overrides: dict[str, object] = {}
        if "drop_history" in self.knobs:
            overrides["history"] = "none"
        if "topk1" in self.knobs:
            overrides["top_k"] = 1
        if "reword" in self.knobs:
            overrides["reader"] = "paraphrase"
        if "invent_fact" in self.knobs:
            overrides["faults"] = Faults(memory_rate=1.0)
        if "outdated_doc" in self.knobs:
            overrides["corpus"] = str(_outdated_corpus(Path(DEFAULT_CORPUS)))
        self.bot = make_bot(**overrides)

    def __call__(self, messages: Sequence[Mapping[str, str]], call_info: Any = None) -> TargetResponse:
        resp = self.bot(messages, call_info)
        answer, citations = resp.answer, list(resp.citations)
        sentences = split_sentences(answer)
        if "wrong_sentence" in self.knobs and resp.contexts and sentences:
            question = str(messages[-1].get("content", "")) if messages else ""
            asked = set(tokens(question))
            top = resp.contexts[0]
            options = [s for s in split_sentences(top.text) if s not in sentences] or split_sentences(top.text)
            if options:
                sentences = [min(options, key=lambda s: (len(asked & set(tokens(s))), options.index(s)))]
                citations = [top.doc_id or top.id]
        if "change_number" in self.knobs:
            sentences = [change_numbers(s) for s in sentences]
        if "reorder" in self.knobs:
            sentences = sentences[::-1]
        answer = " ".join(sentences) if sentences else answer
        if "cite" in self.knobs and citations:
            answer += " " + " ".join(f"[{c}]" for c in citations)
        if "courtesy" in self.knobs:
            answer = COURTESY + answer
        return TargetResponse(answer=answer, contexts=resp.contexts, citations=citations)
