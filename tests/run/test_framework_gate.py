"""A LangChain chain and a LlamaIndex engine as the ``ragdive_target``, end to end
through the gate, offline (the libraries' own fake LLMs and embeddings): the healthy
bot records a baseline and passes, the bot whose retriever returns the wrong
documents fails."""

from __future__ import annotations

import json
import textwrap

import pytest
from conftest import CONVS, SINGLE

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")

DOCS = """
import os

DOCS = {"sky": "The sky is blue on a clear day.", "grass": "Grass is green in spring.", "snow": "Snow is white and cold."}
# broken: the retriever finds documents of another corpus
CORPUS = {("old-" + d if os.environ.get("RAG_BROKEN") else d): t for d, t in DOCS.items()}
"""

LANGCHAIN = DOCS + textwrap.dedent(
    """
    import pytest
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
    from langchain_core.runnables import RunnablePassthrough
    from langchain_core.vectorstores import InMemoryVectorStore

    @pytest.fixture(scope="session")
    def ragdive_target():
        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
        store.add_documents([Document(page_content=t, metadata={"source": d}) for d, t in CORPUS.items()])
        retriever = store.as_retriever(search_kwargs={"k": 3})
        prompt = ChatPromptTemplate.from_messages(
            [("system", "Answer from: {context}"), MessagesPlaceholder("chat_history"), ("human", "{input}")]
        )
        llm = FakeListChatModel(responses=["It is white, blue or green, and snow is cold."])
        # a retrieval chain: {"input", "chat_history"} -> {"answer", "context"}
        return RunnablePassthrough.assign(context=(lambda x: x["input"]) | retriever).assign(
            answer=prompt | llm | StrOutputParser()
        )
    """
)

LLAMAINDEX = DOCS + textwrap.dedent(
    """
    import pytest
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.llms import MockLLM

    @pytest.fixture(scope="session")
    def ragdive_target():
        docs = [Document(text=t, doc_id=d) for d, t in CORPUS.items()]
        index = VectorStoreIndex.from_documents(docs, embed_model=MockEmbedding(embed_dim=8))
        return index.as_chat_engine(chat_mode="context", llm=MockLLM(max_tokens=6), similarity_top_k=3)
    """
)

PYPROJECT = """
[tool.ragdive]
report_dir = "report"
[tool.ragdive.gate]
recall_at_k = 0.0
correctness = 0.05
[tool.ragdive.suites.core]
single_turn = ["data/single.jsonl"]
conversations = ["data/convs.yaml"]
"""


def _gate_healthy_then_broken(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, conftest: str) -> None:
    monkeypatch.delenv("RAG_BROKEN", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    pytester.makeconftest(conftest)
    data = pytester.mkdir("data")
    (data / "single.jsonl").write_text("\n".join(json.dumps(r) for r in SINGLE) + "\n")
    (data / "convs.yaml").write_text(CONVS)
    pytester.makefile(".toml", pyproject=PYPROJECT)
    pytester.runpytest("--ragdive-baseline=b.json", "--ragdive-update-baseline").assert_outcomes(passed=5)
    out = json.loads((pytester.path / "report" / "results.json").read_text())
    turn = next(c for c in out["conversations"] if c["id"] == "c-colours")["turns"][1]
    assert sorted(c["doc_id"] for c in turn["contexts"]) == ["grass", "sky", "snow"]  # the retrieved documents
    assert turn["answer"] and turn["scores"]["recall_at_k"] == 1.0
    ok = pytester.runpytest("--ragdive-baseline=b.json")
    assert ok.ret == 0
    ok.stdout.fnmatch_lines(["*ragdive gate passed*"])
    monkeypatch.setenv("RAG_BROKEN", "1")
    bad = pytester.runpytest("--ragdive-baseline=b.json")
    assert bad.ret == 1
    bad.stdout.fnmatch_lines(["*recall_at_k*REGRESSION*"])


def test_a_langchain_retrieval_chain_passes_the_gate_and_fails_when_its_retriever_is_wrong(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _gate_healthy_then_broken(pytester, monkeypatch, LANGCHAIN)


def test_a_llamaindex_chat_engine_passes_the_gate_and_fails_when_its_retriever_is_wrong(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _gate_healthy_then_broken(pytester, monkeypatch, LLAMAINDEX)
