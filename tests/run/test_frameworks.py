"""LangChain runnables, LlamaIndex engines and OpenAI-compatible endpoints as targets,
offline: the libraries' own fake LLMs and embeddings, the fake LLM server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pytest_ragdive.core.errors import TargetError
from pytest_ragdive.run import frameworks as fw
from pytest_ragdive.run.http_target import openai_target
from pytest_ragdive.run.target import as_async
from pytest_ragdive.testing import FakeLLMServer

lc = pytest.importorskip("langchain_core")
li = pytest.importorskip("llama_index.core")

DOCS = {"sky": "The sky is blue on a clear day.", "grass": "Grass is green in spring.", "snow": "Snow is white and cold."}
HISTORY = [
    {"role": "user", "content": "Tell me about snow."},
    {"role": "assistant", "content": "Snow is white."},
    {"role": "user", "content": "What colour is it?"},
]


def lc_retriever(k: int = 1) -> Any:
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents([Document(page_content=t, metadata={"source": d}) for d, t in DOCS.items()])
    return store.as_retriever(search_kwargs={"k": k})


def test_a_retrieval_chain_gives_its_answer_and_context_documents_and_gets_the_history() -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
    from langchain_core.runnables import RunnableLambda, RunnablePassthrough

    seen: list[Any] = []
    prompt = ChatPromptTemplate.from_messages([("system", "{context}"), MessagesPlaceholder("chat_history"), ("human", "{input}")])
    spy = RunnableLambda(lambda p: seen.append(p.to_messages()) or p)
    retriever = lc_retriever()
    chain = RunnablePassthrough.assign(context=(lambda x: x["input"]) | retriever).assign(
        answer=prompt | spy | FakeListChatModel(responses=["white"]) | StrOutputParser()
    )
    assert fw.framework_of(chain) == "langchain" and fw.framework_of(lambda m: "x") is None
    target = fw.adapt(chain)
    resp = target(HISTORY)
    assert resp.answer == "white"
    doc = retriever.invoke("What colour is it?")[0]
    assert [(c.doc_id, c.text) for c in resp.contexts] == [(doc.metadata["source"], doc.page_content)]
    # the history went in as LangChain messages: system, human, ai, human
    assert [m.type for m in seen[0]] == ["system", "human", "ai", "human"]
    assert fw.from_langchain_messages(seen[0][1:]) == HISTORY


def test_an_lcel_chain_taking_the_question_string_gets_its_contexts_from_the_retriever_callback() -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnablePassthrough

    chain = (
        {"context": lc_retriever(k=2), "question": RunnablePassthrough()}
        | ChatPromptTemplate.from_messages([("human", "{context} {question}")])
        | FakeListChatModel(responses=["blue"])
        | StrOutputParser()
    )
    resp = asyncio.run(as_async(chain, 5)(HISTORY[:1]))
    assert resp.answer == "blue"
    assert len(resp.contexts) == 2 and all(c.doc_id in DOCS and c.text == DOCS[c.doc_id] for c in resp.contexts)


def test_langchain_output_that_has_no_answer_is_one_clear_error() -> None:
    from langchain_core.runnables import RunnableLambda

    target = fw.langchain_target(RunnableLambda(lambda q: {"reply": q}))
    with pytest.raises(TargetError, match="no answer under answer, output.*keys: reply.*answer_key="):
        target(HISTORY[:1])
    assert fw.langchain_target(RunnableLambda(lambda q: {"reply": q}), answer_key="reply")(HISTORY[:1]).answer == HISTORY[0]["content"]
    assert fw.to_langchain_messages(HISTORY)[1].type == "ai"


def li_index() -> Any:
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding

    docs = [Document(text=t, doc_id=d) for d, t in DOCS.items()]
    return VectorStoreIndex.from_documents(docs, embed_model=MockEmbedding(embed_dim=8))


def test_a_llamaindex_query_engine_and_chat_engine_give_their_source_nodes() -> None:
    from llama_index.core.llms import MockLLM

    index = li_index()
    query = index.as_query_engine(llm=MockLLM(max_tokens=4), similarity_top_k=3)
    assert fw.framework_of(query) == "llamaindex"
    resp = fw.adapt(query)(HISTORY)
    assert resp.answer == "text text text text"
    assert sorted(c.doc_id for c in resp.contexts) == sorted(DOCS)
    assert all(c.text == DOCS[c.doc_id] and c.score is not None for c in resp.contexts)

    chat = index.as_chat_engine(chat_mode="context", llm=MockLLM(max_tokens=3), similarity_top_k=1)
    resp = asyncio.run(as_async(chat, 5)(HISTORY))
    assert resp.answer == "text text text" and len(resp.contexts) == 1 and resp.contexts[0].doc_id in DOCS
    # the engine's memory now holds the history given (as ChatMessages), the question and its answer
    assert fw.from_llamaindex_messages(chat.chat_history) == [*HISTORY, {"role": "assistant", "content": "text text text"}]
    assert fw.from_llamaindex_messages(fw.to_llamaindex_messages(HISTORY)) == HISTORY


def test_something_else_is_left_as_it_is_and_the_last_message_must_be_the_users() -> None:
    from llama_index.core.llms import MockLLM

    def bot(messages: list[dict[str, str]]) -> str:
        return "ok"

    assert fw.adapt(bot) is bot
    with pytest.raises(TargetError, match="neither a LlamaIndex chat engine"):
        fw.llamaindex_target(object())
    with pytest.raises(TargetError, match="not the user's"):
        fw.llamaindex_target(li_index().as_query_engine(llm=MockLLM()))(HISTORY[:2])


def test_an_openai_compatible_endpoint_is_a_target(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOT_KEY", "sk-bot-secret-1")
    with FakeLLMServer(handler=lambda body: f"{len(body['messages'])} messages, last: {body['messages'][-1]['content']}") as srv:
        target = openai_target(srv.url, "my-bot", api_key_env="BOT_KEY", system="Be brief.", extra={"temperature": 0})
        resp = asyncio.run(as_async(target, 5)(HISTORY))
        assert resp.answer == "4 messages, last: What colour is it?" and resp.contexts == []
        body = srv.requests[0]
        assert body["model"] == "my-bot" and body["temperature"] == 0 and body["messages"][0] == {"role": "system", "content": "Be brief."}
        assert srv.request_headers[0]["authorization"] == "Bearer sk-bot-secret-1"
        assert "sk-bot-secret-1" in target.ragdive_secrets()  # type: ignore[attr-defined]
        assert openai_target(srv.url + "/chat/completions", "m")(HISTORY[:1]).answer == "1 messages, last: Tell me about snow."
