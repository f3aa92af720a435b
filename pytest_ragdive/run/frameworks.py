"""Targets for the frameworks RAG bots are built with: LangChain and LlamaIndex.

Return a LangChain runnable (a chain, an LCEL pipeline, a retrieval chain) or a
LlamaIndex chat or query engine from the ``ragdive_target`` fixture (or name one
with ``target = "module:attribute"``): the session wraps it with
:func:`langchain_target` or :func:`llamaindex_target`, which the conftest may
also call itself to set the keys. Each turn gets the answer and, as its
contexts, the documents the bot retrieved, with their document ids from the
metadata (``doc_id``, ``document_id``, ``source``, ``id``; LlamaIndex: the node's
``ref_doc_id`` first). The history is mapped both ways: the plugin's messages
become LangChain messages or LlamaIndex ``ChatMessage``s
(:func:`to_langchain_messages`, :func:`to_llamaindex_messages`) and back
(:func:`from_langchain_messages`, :func:`from_llamaindex_messages`).

Neither library is imported here until a target of that kind is wrapped: the
kind is read from the names of the object's classes (``pip install
'pytest-ragdive[langchain]'`` or ``[llamaindex]`` for the libraries).

An OpenAI-compatible ``/v1/chat/completions`` bot is an HTTP target:
:func:`~pytest_ragdive.run.http_target.openai_target`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.errors import TargetError
from ..core.records import Context, TargetResponse

History = list[dict[str, str]]  # as in .target (which imports this module)

__all__ = [
    "LangChainTarget",
    "LlamaIndexTarget",
    "adapt",
    "framework_of",
    "from_langchain_messages",
    "from_llamaindex_messages",
    "langchain_target",
    "llamaindex_target",
    "to_langchain_messages",
    "to_llamaindex_messages",
]

# the metadata keys a document id is read from, in this order
DOC_ID_KEYS = ("doc_id", "document_id", "source", "id")
# where a chain's dict output holds the answer and the retrieved documents
ANSWER_KEYS = ("answer", "output", "result", "response", "text")
CONTEXT_KEYS = ("context", "source_documents", "documents", "contexts", "docs")
QUESTION_KEYS = ("input", "question", "query")
HISTORY_KEYS = ("chat_history", "history", "messages")
_ROLES_LC = {"user": "human", "assistant": "ai", "system": "system"}
_ROLES_BACK = {"human": "user", "ai": "assistant", "system": "system", "user": "user", "assistant": "assistant"}


def _class_modules(obj: Any) -> list[str]:
    return [f"{c.__module__}.{c.__qualname__}" for c in type(obj).__mro__]


def framework_of(obj: Any) -> str | None:
    """``"langchain"``, ``"llamaindex"`` or None, from the names of the object's classes
    (no import of either library)."""
    names = _class_modules(obj)
    if any(n.startswith("langchain_core.runnables.base.Runnable") for n in names):
        return "langchain"
    if any(n.startswith(("llama_index.core.base.base_query_engine.", "llama_index.core.chat_engine.types.BaseChatEngine")) for n in names):
        return "llamaindex"
    return None


def adapt(target: Any) -> Any:
    """The target the runner calls: a LangChain runnable or a LlamaIndex engine wrapped,
    anything else unchanged."""
    kind = framework_of(target)
    if kind == "langchain":
        return langchain_target(target)
    if kind == "llamaindex":
        return llamaindex_target(target)
    return target


def _question(messages: History) -> str:
    if not messages or messages[-1].get("role") != "user":
        raise TargetError("the last message of the history is not the user's")
    return messages[-1].get("content", "")


def _doc_id(metadata: Mapping[str, Any] | None, key: str | None, fallback: Any = None) -> str | None:
    meta = metadata or {}
    for k in (key,) if key else DOC_ID_KEYS:
        value = meta.get(k)
        if value not in (None, ""):
            return str(value)
    return None if fallback in (None, "") else str(fallback)


def _score(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


# -- LangChain -------------------------------------------------------------------


def to_langchain_messages(messages: History) -> list[Any]:
    """The plugin's messages as LangChain ``HumanMessage`` / ``AIMessage`` / ``SystemMessage``."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    kinds: dict[str, Any] = {"user": HumanMessage, "assistant": AIMessage, "system": SystemMessage}
    out = []
    for m in messages:
        role = m.get("role", "user")
        if role not in kinds:
            raise TargetError(f"a message of role {role!r} has no LangChain message type")
        out.append(kinds[role](content=m.get("content", "")))
    return out


def from_langchain_messages(messages: Sequence[Any]) -> History:
    """LangChain messages as the plugin's ``{"role", "content"}`` dicts."""
    out: History = []
    for m in messages:
        kind = getattr(m, "type", None) or getattr(m, "role", None)
        role = _ROLES_BACK.get(str(kind))
        if role is None:
            raise TargetError(f"a LangChain message of type {kind!r} has no plugin role (human, ai or system)")
        out.append({"role": role, "content": _text(getattr(m, "content", ""))})
    return out


def _text(content: Any) -> str:
    """A message's content as text (a list of content blocks: their text parts joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [c if isinstance(c, str) else str(c.get("text", "")) for c in content if isinstance(c, (str, dict))]
        return "".join(parts)
    return str(content)


class LangChainTarget:
    """A LangChain runnable as a target (build it with :func:`langchain_target`)."""

    def __init__(
        self,
        runnable: Any,
        *,
        input_key: str | None = None,
        history_key: str | None = None,
        answer_key: str | None = None,
        context_key: str | None = None,
        doc_id_key: str | None = None,
    ) -> None:
        if not hasattr(runnable, "invoke"):
            raise TargetError(f"{type(runnable).__name__} is not a LangChain runnable (it has no invoke())")
        self.runnable = runnable
        self.answer_key, self.context_key, self.doc_id_key = answer_key, context_key, doc_id_key
        self.input_key, self.history_key = input_key, history_key
        if input_key is None:  # read the runnable's input schema: a dict with a question key, or a string
            props = _input_properties(runnable)
            self.input_key = next((k for k in QUESTION_KEYS if k in props), None)
            if self.input_key is not None and history_key is None:
                self.history_key = next((k for k in HISTORY_KEYS if k in props), None)

    def __repr__(self) -> str:
        return f"LangChainTarget({type(self.runnable).__name__})"

    def __call__(self, messages: History) -> TargetResponse:
        question = _question(messages)
        value: Any = question
        if self.input_key is not None:
            value = {self.input_key: question}
            if self.history_key is not None:
                value[self.history_key] = to_langchain_messages(messages[:-1])
        retrieved: list[Any] = []
        out = self.runnable.invoke(value, config={"callbacks": [_retriever_handler(retrieved)]})
        answer, docs = self._answer_and_docs(out)
        if docs is None:  # not in the output: what the chain's retrievers returned on the way
            docs = retrieved
        return TargetResponse(answer=answer, contexts=self._contexts(docs))

    def _answer_and_docs(self, out: Any) -> tuple[str, list[Any] | None]:
        if isinstance(out, str):
            return out, None
        if isinstance(out, Mapping):
            keys = (self.answer_key,) if self.answer_key else ANSWER_KEYS
            key = next((k for k in keys if k in out), None)
            if key is None:
                raise TargetError(
                    f"the chain's output has no answer under {', '.join(keys)} (keys: {', '.join(sorted(map(str, out))[:12])}): "
                    "pass answer_key= to pytest_ragdive.langchain_target"
                )
            answer, _ = self._answer_and_docs(out[key])
            ckeys = (self.context_key,) if self.context_key else CONTEXT_KEYS
            ckey = next((k for k in ckeys if k in out), None)
            docs = out.get(ckey) if ckey is not None else None
            return answer, list(docs) if isinstance(docs, (list, tuple)) else None
        if hasattr(out, "content"):  # an AIMessage
            return _text(out.content), None
        raise TargetError(f"the chain returned a {type(out).__name__}, expected a string, a message or a dict with an answer")

    def _contexts(self, docs: Sequence[Any]) -> list[Context]:
        out = []
        for i, d in enumerate(docs):
            if isinstance(d, str):
                out.append(Context(id=str(i), text=d))
                continue
            meta = getattr(d, "metadata", None) or {}
            doc_id = _doc_id(meta, self.doc_id_key, getattr(d, "id", None))
            text = getattr(d, "page_content", None)
            if not isinstance(text, str):
                raise TargetError(f"retrieved item {i} is a {type(d).__name__}, expected a LangChain Document")
            cid = str(meta.get("chunk_id") or getattr(d, "id", None) or doc_id or i)
            out.append(Context(id=cid, text=text, doc_id=doc_id, score=_score(meta.get("score"))))
        return out


def _input_properties(runnable: Any) -> set[str]:
    try:
        schema = runnable.get_input_jsonschema()
    except Exception:  # noqa: BLE001 - a runnable without a schema takes the question as it is
        return set()
    props = schema.get("properties") if isinstance(schema, dict) else None
    return set(props) if isinstance(props, dict) else set()


def _retriever_handler(sink: list[Any]) -> Any:
    """A LangChain callback handler that keeps the documents every retriever of one call returns."""
    from langchain_core.callbacks import BaseCallbackHandler

    class Retrieved(BaseCallbackHandler):
        def on_retriever_end(self, documents: Sequence[Any], **kwargs: Any) -> None:
            sink.extend(documents)

    return Retrieved()


def langchain_target(
    runnable: Any,
    *,
    input_key: str | None = None,
    history_key: str | None = None,
    answer_key: str | None = None,
    context_key: str | None = None,
    doc_id_key: str | None = None,
) -> LangChainTarget:
    """A LangChain runnable as the chatbot under test.

    - input: a runnable whose input schema has ``input``, ``question`` or ``query`` is
      given a dict with the question under that key and the earlier messages (as
      LangChain messages) under ``chat_history``, ``history`` or ``messages`` when it
      has one; any other runnable gets the question string (``input_key`` /
      ``history_key`` name the keys yourself);
    - output: a string, a message, or a dict with the answer under ``answer``
      (``output``, ``result``, ``response``, ``text``; ``answer_key``) and the retrieved
      Documents under ``context`` (``source_documents``, ``documents``, ``contexts``;
      ``context_key``); without them, the documents the chain's retrievers returned
      during the call (a callback) are the contexts;
    - a document's id: its metadata ``doc_id``, ``document_id``, ``source`` or ``id``
      (``doc_id_key``), else the Document's own id.
    """
    return LangChainTarget(
        runnable, input_key=input_key, history_key=history_key, answer_key=answer_key, context_key=context_key, doc_id_key=doc_id_key
    )


# -- LlamaIndex ------------------------------------------------------------------


def to_llamaindex_messages(messages: History) -> list[Any]:
    """The plugin's messages as LlamaIndex ``ChatMessage``s."""
    from llama_index.core.llms import ChatMessage

    return [ChatMessage(role=m.get("role", "user"), content=m.get("content", "")) for m in messages]


def from_llamaindex_messages(messages: Sequence[Any]) -> History:
    """LlamaIndex ``ChatMessage``s as the plugin's ``{"role", "content"}`` dicts."""
    out: History = []
    for m in messages:
        role = getattr(getattr(m, "role", None), "value", getattr(m, "role", None))
        if role not in ("user", "assistant", "system"):
            raise TargetError(f"a LlamaIndex message of role {role!r} has no plugin role (user, assistant or system)")
        out.append({"role": str(role), "content": _text(getattr(m, "content", None) or "")})
    return out


class LlamaIndexTarget:
    """A LlamaIndex chat or query engine as a target (build it with :func:`llamaindex_target`)."""

    def __init__(self, engine: Any, *, doc_id_key: str | None = None) -> None:
        self.engine = engine
        self.doc_id_key = doc_id_key
        self.chat = hasattr(engine, "chat")
        if not self.chat and not hasattr(engine, "query"):
            raise TargetError(f"{type(engine).__name__} is neither a LlamaIndex chat engine (chat()) nor a query engine (query())")
        # a chat engine keeps its memory in itself: one call at a time, each given its own history
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LlamaIndexTarget({type(self.engine).__name__})"

    def __call__(self, messages: History) -> TargetResponse:
        question = _question(messages)
        if self.chat:
            history = to_llamaindex_messages(messages[:-1])
            with self._lock:
                resp = self.engine.chat(question, chat_history=history)
        else:  # a query engine is stateless: it sees the latest question only
            resp = self.engine.query(question)
        answer = getattr(resp, "response", None)
        if answer is None:
            answer = "" if resp is None else str(resp)
        return TargetResponse(answer=str(answer), contexts=self._contexts(getattr(resp, "source_nodes", None) or []))

    def _contexts(self, nodes: Sequence[Any]) -> list[Context]:
        out = []
        for i, scored in enumerate(nodes):
            node = getattr(scored, "node", scored)
            meta = getattr(node, "metadata", None) or {}
            ref = None if self.doc_id_key else getattr(node, "ref_doc_id", None)
            doc_id = _doc_id({"doc_id": ref} if ref else meta, self.doc_id_key if not ref else None)
            get_text = getattr(node, "get_content", None)
            text = get_text() if callable(get_text) else getattr(node, "text", None)
            if not isinstance(text, str):
                raise TargetError(f"source node {i} has no text")
            cid = str(getattr(node, "node_id", None) or doc_id or i)
            out.append(Context(id=cid, text=text, doc_id=doc_id, score=_score(getattr(scored, "score", None))))
        return out


def llamaindex_target(engine: Any, *, doc_id_key: str | None = None) -> LlamaIndexTarget:
    """A LlamaIndex engine as the chatbot under test.

    A chat engine (``chat()``) is called with the question and the earlier messages as
    ``chat_history`` (LlamaIndex ``ChatMessage``s), one call at a time since the engine
    keeps its memory in itself; a query engine (``query()``) sees the latest question
    only. The answer is the response's text, the contexts its ``source_nodes`` with
    their scores; a node's document id is its ``ref_doc_id``, else its metadata
    ``doc_id``, ``document_id``, ``source`` or ``id`` (``doc_id_key``: that metadata key).
    """
    return LlamaIndexTarget(engine, doc_id_key=doc_id_key)
