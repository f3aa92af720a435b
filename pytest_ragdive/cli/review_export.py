"""``ragdive export-review RESULTS -o review.csv --sample N``: a sample of
generated turns for people to rate, with the RAG-DIVE study's criteria.

The study (Section 5.3, Table 1) had two people rate 200 generated turns:
at turn level whether the generated ground truth is **correct**, the question
**answerable** from the document, and the question **plausible** for a user;
at dialogue level whether the conversation is **diverse** and **coherent**.
The CSV holds one row per sampled turn and one per conversation those turns
belong to, with empty rating cells; each rater fills a copy (the ``rater``
column, or the file name, says who) and ``ragdive import-review`` reads them
back. Imports no pytest.
"""

from __future__ import annotations

import argparse
import csv
import random
from collections.abc import Sequence
from pathlib import Path

from ..core.errors import ReviewError
from ..core.records import Conversation, Document
from ..reports.csv_inert import inert_cell
from ..reports.result_files import read_conversations
from ..sources.drafting import PROMPT_DOC_CHARS
from ..sources.golden import ScriptedConversation

TURN_CRITERIA = ("correct", "answerable", "plausible")
DIALOGUE_CRITERIA = ("diverse", "coherent")
CRITERIA = TURN_CRITERIA + DIALOGUE_CRITERIA
CRITERIA_HELP = {
    "correct": "the ground truth answers the question correctly, from the document",
    "answerable": "the question can be answered from the document",
    "plausible": "a real user could ask this question at this point of the conversation",
    "diverse": "the conversation's questions are varied, not repetitive",
    "coherent": "the conversation flows naturally from turn to turn",
}
COLUMNS = (
    "item", "level", "suite", "conversation", "run", "role", "document", "turn", "question_type",
    "rag_input", "standalone_question", "ground_truth", "answer", "transcript", "document_text", "validator",
    "rater", *CRITERIA, "comment",
)


def _validator(conv: Conversation, index: int) -> str:
    turn = conv.turns[index]
    if "invalid" in turn.flags:
        return "flagged invalid"
    if "unvalidated" in turn.flags:
        return "unvalidated"
    v = turn.generation.validation if turn.generation is not None else None
    return "" if v is None else ("valid" if v.valid else "invalid")


def _document_text(conv: Conversation, corpus: dict[str, str]) -> str:
    text = corpus.get(conv.document_id or "", "")
    if text and conv.window is not None:
        text = text[conv.window.start : conv.window.end]
    return text


def _transcript(conv: Conversation) -> str:
    return "\n".join(f"Q{t.index + 1}: {t.rag_input}\nA{t.index + 1}: {t.answer or ''}" for t in conv.turns)


def sample_rows(
    convs: list[Conversation], n: int, seed: int = 0, source: str = "generated", corpus: dict[str, str] | None = None
) -> list[dict[str, str]]:
    """``n`` turns drawn without replacement (seeded, stable across machines),
    then one dialogue row per conversation they come from."""
    pool = sorted(
        (c for c in convs if c.error is None and c.turns and (source == "all" or c.source == source)),
        key=lambda c: c.key,
    )
    turns = [(c, i) for c in pool for i in range(len(c.turns))]
    if not turns:
        raise ReviewError(
            f"no {'' if source == 'all' else source + ' '}turns to review in the results "
            "(generated conversations need a model; use --source all to sample scripted turns)"
        )
    picked = sorted(random.Random(seed).sample(range(len(turns)), min(n, len(turns))))
    corpus = corpus or {}
    rows: list[dict[str, str]] = []
    seen: dict[str, Conversation] = {}
    for k in picked:
        c, i = turns[k]
        t = c.turns[i]
        seen.setdefault(c.key, c)
        rows.append({
            "item": f"{c.key}#turn{t.index + 1}", "level": "turn", "suite": c.suite, "conversation": c.id,
            "run": str(c.run), "role": c.role or "", "document": c.document_id or "", "turn": str(t.index + 1),
            "question_type": t.question_type, "rag_input": t.rag_input, "standalone_question": t.standalone_question,
            "ground_truth": t.ground_truth, "answer": t.answer or "", "document_text": _document_text(c, corpus),
            "validator": _validator(c, i),
        })
    for key, c in seen.items():
        rows.append({
            "item": f"{key}#dialogue", "level": "dialogue", "suite": c.suite, "conversation": c.id, "run": str(c.run),
            "role": c.role or "", "document": c.document_id or "", "transcript": _transcript(c),
            "document_text": _document_text(c, corpus),
        })
    return [{col: r.get(col, "") for col in COLUMNS} for r in rows]


def write_review(path: Path, rows: list[dict[str, str]], force: bool = False) -> None:
    if path.exists() and not force:
        raise ReviewError(f"{path} exists (it may hold ratings): choose another -o or pass --force to overwrite it")
    from ..core.paths import atomic_open

    with atomic_open(path, newline="") as fh:  # a link at the path is replaced, never written through
        w = csv.DictWriter(fh, fieldnames=list(COLUMNS))
        w.writeheader()
        w.writerows({k: inert_cell(v) for k, v in r.items()} for r in rows)


def add_arguments(parser: argparse.ArgumentParser, command: str = "") -> None:
    parser.add_argument("results", nargs="+", type=Path,
                        help="results.json file(s) of runs with generated conversations, or draft-golden's drafts "
                        "(.yaml: every unreviewed turn, no sampling)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="the CSV to write (review.csv)")
    parser.add_argument("--sample", type=int, default=200, help="turns to sample (default 200, as in the study)")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    parser.add_argument("--source", choices=("generated", "all"), default="generated",
                        help="sample generated turns (default) or every kind")
    parser.add_argument("--corpus", type=Path, help="corpus JSONL (or, for drafts, the documents' directory): "
                        "adds the document (the part the simulator saw) to each row")
    parser.add_argument("--force", action="store_true", help="overwrite an existing CSV")


def review_rows(convs: Sequence[ScriptedConversation], docs: dict[str, Document], suite: str) -> list[dict[str, str]]:
    """The drafts as ``export-review`` rows: one per turn (correct, answerable, plausible)
    and one per multi-turn conversation (diverse, coherent); ``document_text``: the
    documents the turn names (its conversation's, for a refusal)."""
    rows: list[dict[str, str]] = []
    for c in convs:
        for i, t in enumerate(c.turns):
            ids = t.relevant_doc_ids or ([c.document_id] if c.document_id else [])
            rows.append({
                "item": f"{c.id}#turn{i + 1}", "level": "turn", "suite": suite, "conversation": c.id, "run": "0",
                "role": c.category or "", "document": " ".join(ids), "turn": str(i + 1),
                "question_type": t.question_type, "rag_input": t.rag_input,
                "standalone_question": t.standalone_question, "ground_truth": t.ground_truth,
                "document_text": "\n\n".join(docs[d].text[:PROMPT_DOC_CHARS] for d in ids if d in docs),
                "validator": "valid",
            })
        if len(c.turns) > 1:
            rows.append({
                "item": f"{c.id}#dialogue", "level": "dialogue", "suite": suite, "conversation": c.id, "run": "0",
                "role": c.category or "", "document": c.document_id or "",
                "transcript": "\n".join(f"Q{i + 1}: {t.rag_input}\nA{i + 1} (ground truth): {t.ground_truth}"
                                        for i, t in enumerate(c.turns)),
            })
    return [{col: r.get(col, "") for col in COLUMNS} for r in rows]


def _drafts_rows(args: argparse.Namespace) -> list[dict[str, str]]:
    """Every turn of the drafts files given (draft-golden's YAML), as draft-golden lays
    them out: after a fix of rejected drafts, a fresh CSV to rate them again."""
    from ..sources.drafting import load_documents
    from ..sources.golden import each_conversation
    docs = {d.id: d for d in load_documents(args.corpus)} if args.corpus is not None else {}
    rows: list[dict[str, str]] = []
    for path in args.results:
        rows += review_rows([c for c in each_conversation(path) if not c.reviewed], docs, path.stem)
    if not rows:
        raise ReviewError(f"no unreviewed drafts in {', '.join(map(str, args.results))}")
    return rows


def run(args: argparse.Namespace) -> int:
    if args.sample < 1:
        raise ReviewError(f"--sample must be at least 1, got {args.sample}")
    if any(p.suffix in (".yaml", ".yml") for p in args.results):
        rows = _drafts_rows(args)
        write_review(args.output, rows, args.force)
        print(f"wrote {args.output}: every turn of {len({r['conversation'] for r in rows})} draft(s) to rate; then: "
              "ragdive import-review FILE... --accept DRAFTS --into GOLDEN")
        return 0
    convs = [c for p in args.results for c in read_conversations(p)]
    corpus: dict[str, str] = {}
    if args.corpus is not None:
        from ..sources.golden import load_corpus

        corpus = {d.id: d.text for d in load_corpus(args.corpus)}
    rows = sample_rows(convs, args.sample, args.seed, args.source, corpus)
    write_review(args.output, rows, args.force)
    turns = sum(1 for r in rows if r["level"] == "turn")
    print(
        f"wrote {args.output}: {turns} turn(s) and {len(rows) - turns} dialogue(s) to rate "
        f"({', '.join(TURN_CRITERIA)} per turn; {', '.join(DIALOGUE_CRITERIA)} per dialogue; yes/no). "
        "Give each rater a copy, fill the rater column, then: ragdive import-review FILE..."
    )
    return 0
