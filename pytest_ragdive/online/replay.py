"""A request log read back as conversations, each turn with its signals and feedback.

The target is stateless (it gets the whole history every call), so a log holds
one request per user turn, each repeating the turns before. A request *continues*
another of the same ``conversation_id`` (or both without one) when its history starts
with the other's history plus the other's answer;
a conversation is a request that no later request continues (a leaf), and its
turns are the user messages of that request's history. Each turn is matched with
the request that answered it, for its signals and its negative feedback (matched by
``request_id``). Conversations keep the leaf's ``conversation_id`` when the app set
one (made unique with ``-2``, ``-3``... on branches), else ``prod-`` and the first
12 characters of the leaf's request id.
"""

from __future__ import annotations

from collections import defaultdict

from pydantic import BaseModel, ConfigDict, Field

from ..metrics.lexical import citation_markers
from .logs import LogFile, RequestEvent
from .signals import RequestSignals, request_signals

__all__ = ["LoggedConversation", "LoggedTurn", "conversations", "event_signals"]

_Key = tuple[tuple[str, str], ...]


class LoggedTurn(BaseModel):
    """One user turn of a logged conversation and, when the log has it, the request that answered it."""

    model_config = ConfigDict(extra="forbid")

    rag_input: str
    answer: str | None = None
    cited: list[str] = Field(default_factory=list)
    request_id: str | None = None
    error: str | None = None
    signals: RequestSignals | None = None
    feedback: list[str] = Field(default_factory=list)


class LoggedConversation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    turns: list[LoggedTurn]


def event_signals(event: RequestEvent) -> RequestSignals | None:
    """The signals of one logged request (None when the target raised)."""
    if event.response is None:
        return None
    t = event.timings
    return request_signals(
        [m.model_dump() for m in event.messages],
        event.response,
        retrieval_s=t.retrieval_s,
        generation_s=t.generation_s,
        total_s=t.total_s,
    )


def _key(event: RequestEvent) -> _Key:
    return tuple((m.role, m.content) for m in event.messages if m.role != "system")


def _answering(reqs: list[RequestEvent], candidates: list[int], leaf: int) -> int | None:
    """The request that answered an earlier turn of the leaf: among the requests with that
    history logged before the leaf, the last of the leaf's conversation id, else the last."""
    before = [j for j in candidates if j < leaf]
    same = [j for j in before if reqs[j].conversation_id == reqs[leaf].conversation_id]
    pick = same or before
    return pick[-1] if pick else None


def conversations(log: LogFile) -> list[LoggedConversation]:
    """The log's conversations, in the order their last request was logged."""
    reqs = log.requests
    keys = [_key(r) for r in reqs]
    # (conversation id, prefix of some request's history) -> index of the last request having it
    last_with_prefix: dict[tuple[str | None, _Key], int] = {}
    for i, (r, k) in enumerate(zip(reqs, keys, strict=True)):
        for n in range(1, len(k) + 1):
            last_with_prefix[(r.conversation_id, k[:n])] = i
    by_history: dict[_Key, list[int]] = defaultdict(list)
    for i, k in enumerate(keys):
        by_history[k].append(i)
    feedback: dict[str, list[str]] = defaultdict(list)
    for f in log.feedback:
        if f.request_id:
            feedback[f.request_id].append(f.category)

    out: list[LoggedConversation] = []
    used_ids: dict[str, int] = {}
    for i, (req, key) in enumerate(zip(reqs, keys, strict=True)):
        cid = req.conversation_id
        if req.response is not None:
            continued = (cid, key + (("assistant", req.response.answer),)) in last_with_prefix
        else:  # a failed call is superseded by a later retry of the same history
            continued = last_with_prefix.get((cid, key), i) > i
        if continued or not key or key[-1][0] != "user":
            continue
        turns: list[LoggedTurn] = []
        for n, (role, content) in enumerate(key):
            if role != "user":
                continue
            j = i if n == len(key) - 1 else _answering(reqs, by_history.get(key[: n + 1], []), i)
            turn = LoggedTurn(rag_input=content)
            if j is not None:
                ev = reqs[j]
                turn.request_id = ev.request_id
                turn.error = ev.error
                turn.signals = event_signals(ev)
                turn.feedback = feedback.get(ev.request_id, [])
                if ev.response is not None:
                    turn.answer = ev.response.answer
                    turn.cited = list(dict.fromkeys(list(ev.response.citations) + citation_markers(ev.response.answer)))
            if turn.answer is None and n + 1 < len(key) and key[n + 1][0] == "assistant":
                turn.answer = key[n + 1][1]  # the answer as the client sent it back
            turns.append(turn)
        base = cid or f"prod-{req.request_id[:12]}"
        used_ids[base] = used_ids.get(base, 0) + 1
        out.append(LoggedConversation(id=base if used_ids[base] == 1 else f"{base}-{used_ids[base]}", turns=turns))
    return out
