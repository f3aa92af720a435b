"""The RAG-DIVE Conversation Generator (CG): planning and document windows.

The conversation itself (the simulator proposing turns, the validator
checking them) is :class:`pytest_ragdive.users.simulator.SimulatorUser`; the
runner sends its turns to the target.

An LLM (client role ``simulator``) plays a user who has read one document of
the chatbot's knowledge base and talks with the chatbot in a given role
(persona). One chat per conversation: the first message carries the role and
the document (a long document: a window of chunks of at most
``window_chars``, stated in the prompt); each later message carries the
chatbot's actual last answer, so a wrong answer can draw a Correction turn and
a changed answer makes the rest of the conversation diverge.

Each turn is validated (:mod:`.validator`) before it is sent; an invalid turn
is regenerated in the same chat with the validator's reason, up to
``max_regenerations``; a turn still invalid is dropped (the generator is
asked for a different next turn; the turn budget counts slots, so the
conversation ends with fewer turns) or kept with the ``invalid`` flag,
per ``on_invalid``.

Determinism: documents are sampled with ``random.Random(settings.seed)`` and
roles assigned round robin (:func:`plan_generated`); every LLM call of one
conversation in run ``r`` uses ``seed = spec.seed + RUN_SEED_STRIDE * r``
(``spec.seed = settings.seed + i``), so runs differ and every call is a
cache key of its own: a rerun against an unchanged chatbot replays from the
cache with no LLM call.
"""

from __future__ import annotations

import random
import re

from ..core.config_models import GeneratedConfig
from ..core.errors import GenerationError
from ..core.records import Document, GeneratedSpec
from .validator import UNANSWERABLE, GeneratedTurn

__all__ = [
    "RUN_SEED_STRIDE",
    "UNANSWERABLE",
    "GeneratedSpec",
    "GeneratedTurn",
    "GenerationError",
    "conversation_seed",
    "document_window",
    "plan_generated",
    "window_note",
]

RUN_SEED_STRIDE = 1000


def _id_part(value: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", value).strip("_") or "doc"


def plan_generated(settings: GeneratedConfig, corpus: list[Document], suite: str) -> list[GeneratedSpec]:
    """Plan ``settings.conversations`` conversations: seeded document sampling, roles round robin.

    Documents are drawn without replacement (a seeded shuffle of the corpus;
    when more conversations than documents are asked for, further shuffles
    follow). Documents with blank text are skipped. The plan depends only on
    the settings and the corpus order, never on the run.
    """
    docs = [d for d in corpus if d.text.strip()]
    if not docs:
        raise GenerationError(f"generated part of suite {suite!r}: the corpus has no document with text")
    if not settings.roles:
        raise GenerationError(f"generated part of suite {suite!r}: no roles selected")
    rng = random.Random(settings.seed)
    order: list[int] = []
    while len(order) < settings.conversations:
        perm = list(range(len(docs)))
        rng.shuffle(perm)
        order.extend(perm)
    specs: list[GeneratedSpec] = []
    for i in range(settings.conversations):
        doc = docs[order[i]]
        role = settings.roles[i % len(settings.roles)]
        specs.append(
            GeneratedSpec(
                id=f"gen-{i:03d}-{_id_part(doc.id)}-{role}",
                suite=suite,
                document_id=doc.id,
                role=role,
                turns=settings.turns,
                seed=settings.seed + i,
            )
        )
    return specs


def conversation_seed(spec: GeneratedSpec, run: int) -> int:
    """The seed of every LLM call of this conversation in this run."""
    return spec.seed + RUN_SEED_STRIDE * run


# --------------------------------------------------------------------------
# document windows


def _chunk_spans(text: str, chunk_max: int) -> list[tuple[int, int]]:
    """(start, end) spans of paragraphs, split at sentences, then at spaces, to at most chunk_max chars."""
    spans: list[tuple[int, int]] = []
    for para in re.finditer(r"\S(?:.*?\S)?(?=\s*\n\s*\n|\s*$)", text, re.DOTALL):
        pieces = [(para.start(), para.end())]
        if para.end() - para.start() > chunk_max:
            pieces = []
            for sent in re.finditer(r"\S.*?(?:[.!?](?=\s)|$)", text[para.start() : para.end()], re.DOTALL):
                pieces.append((para.start() + sent.start(), para.start() + sent.end()))
        for a, b in pieces:
            while b - a > chunk_max:
                cut = text.rfind(" ", a + 1, a + chunk_max)
                if cut <= a:
                    cut = a + chunk_max
                spans.append((a, cut))
                a = cut
                while a < b and text[a].isspace():
                    a += 1
            if b > a:
                spans.append((a, b))
    return spans


def document_window(text: str, max_chars: int, seed: int) -> tuple[int, int]:
    """(start, end) of the part of the document the generator sees.

    A document of at most ``max_chars`` is seen whole. A longer one is cut
    into chunks (paragraphs, sentences, at most ``max_chars // 4`` each) and
    a window of consecutive chunks of at most ``max_chars`` characters is
    chosen: the first chunk at a seeded random position, extended forward,
    then backward. The same seed gives the same window (runs of one planned
    conversation share it).
    """
    if len(text) <= max_chars:
        return 0, len(text)
    spans = _chunk_spans(text, max(50, max_chars // 4))
    if not spans:
        return 0, min(len(text), max_chars)
    rng = random.Random(seed)
    i = j = rng.randrange(len(spans))
    while j + 1 < len(spans) and spans[j + 1][1] - spans[i][0] <= max_chars:
        j += 1
    while i > 0 and spans[j][1] - spans[i - 1][0] <= max_chars:
        i -= 1
    return spans[i][0], spans[j][1]


def window_note(start: int, end: int, total: int) -> str:
    """The prompt's note on an excerpt (empty for a whole document)."""
    if start == 0 and end == total:
        return ""
    return (
        f" (an excerpt: characters {start}-{end} of a {total}-character document; "
        "ask only about what this excerpt says)"
    )
