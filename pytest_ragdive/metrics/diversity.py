"""Diversity of generated conversations across runs (RAG-DIVE Table 3).

For each turn index, the share of distinct stand-alone questions among the
runs of the same planned conversation: repeated runs tend to converge on the
first turn (the same document invites the same opening question) and diverge
later, as each run reacts to different answers.

The similarity is deterministic: two questions are "the same question" when
the token Jaccard similarity of their SQuAD-normalised forms (lower case, no
punctuation, no articles a/an/the, single spaces) is at least ``threshold``
(0.7). Questions are clustered greedily in order: each joins the first
cluster whose first member is similar enough, else starts a new one.

Per turn index the value is pooled over the groups: ``sum(clusters) /
sum(questions)``, counting only groups with at least two questions at that
index (a lone question is trivially distinct). With five runs the minimum is
0.2 (all five alike) and the maximum 1.0 (all different).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable

from ..core.records import Conversation
from .text import normalize_answer

DEFAULT_THRESHOLD = 0.7


def normalize_question(text: str) -> str:
    """SQuAD normalisation (``metrics.text.normalize_answer``): lower case, no punctuation,
    no articles, single spaces."""
    return normalize_answer(text)


def question_similarity(a: str, b: str) -> float:
    """Token Jaccard similarity of the normalised questions (1.0 for two empty ones)."""
    ta, tb = set(normalize_question(a).split()), set(normalize_question(b).split())
    if not ta and not tb:
        return 1.0
    return len(ta & tb) / len(ta | tb)


def cluster_questions(questions: Iterable[str], threshold: float = DEFAULT_THRESHOLD) -> list[list[str]]:
    """Greedy clustering in order against each cluster's first member."""
    clusters: list[list[str]] = []
    for q in questions:
        for cl in clusters:
            if question_similarity(cl[0], q) >= threshold:
                cl.append(q)
                break
        else:
            clusters.append([q])
    return clusters


def default_group_key(conv: Conversation) -> Hashable:
    """Runs of the same planned conversation: suite, conversation id, document and role."""
    return (conv.suite, conv.id, conv.document_id, conv.role)


def diversity_by_turn(
    convs: Iterable[Conversation],
    threshold: float = DEFAULT_THRESHOLD,
    key: Callable[[Conversation], Hashable] = default_group_key,
) -> dict[int, float]:
    """Turn index (0-based position in the conversation) -> share of distinct questions across runs.

    Conversations are grouped with ``key`` (by default the runs of one
    planned conversation); a turn's question is its stand-alone question
    (rag_input when empty). Indexes where no group has two questions are
    left out.
    """
    groups: dict[Hashable, list[Conversation]] = defaultdict(list)
    for c in convs:
        groups[key(c)].append(c)
    distinct: dict[int, int] = defaultdict(int)
    total: dict[int, int] = defaultdict(int)
    for members in groups.values():
        members = sorted(members, key=lambda c: c.run)
        depth = max((len(c.turns) for c in members), default=0)
        for idx in range(depth):
            qs = [c.turns[idx].question for c in members if idx < len(c.turns)]
            if len(qs) < 2:
                continue
            distinct[idx] += len(cluster_questions(qs, threshold))
            total[idx] += len(qs)
    return {idx: distinct[idx] / total[idx] for idx in sorted(total)}


def mean_diversity(by_turn: dict[int, float]) -> float | None:
    """The unweighted mean over turn indexes (Table 3's "Average" column)."""
    return sum(by_turn.values()) / len(by_turn) if by_turn else None
