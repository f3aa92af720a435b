"""The bundled example chatbot (example_project/example_rag): chunking, BM25
retrieval, history policies, the extractive reader and the environment knobs,
checked on the real help-centre corpus and real retrieved ids."""

from __future__ import annotations

import asyncio
import sys
import types
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "example_project"
if str(EXAMPLE) not in sys.path:
    sys.path.insert(0, str(EXAMPLE))

from example_rag import (  # noqa: E402
    ABSTAIN,
    BotConfig,
    HelpCentreBot,
    build_query,
    chunk_corpus,
    chunk_document,
    load_corpus,
    make_bot,
)

from pytest_ragdive import Document, TargetResponse  # noqa: E402
from pytest_ragdive.run.target import as_async  # noqa: E402
from pytest_ragdive.sources.golden import load_corpus as golden_load_corpus  # noqa: E402

ENV_KNOBS = (
    "EXAMPLE_RAG_HISTORY",
    "EXAMPLE_RAG_HISTORY_K",
    "EXAMPLE_RAG_TOP_K",
    "EXAMPLE_RAG_CHUNK_SIZE",
    "EXAMPLE_RAG_CHUNK_OVERLAP",
    "EXAMPLE_RAG_MODEL",
    "EXAMPLE_RAG_API_BASE",
    "EXAMPLE_RAG_CORPUS",
)


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, str]:
    return {"role": "assistant", "content": text}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_KNOBS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def bot() -> HelpCentreBot:
    return HelpCentreBot(BotConfig())


# -- corpus ------------------------------------------------------------------


def test_corpus_loads_with_the_golden_loader() -> None:
    docs = golden_load_corpus(EXAMPLE / "corpus" / "helpcentre.jsonl")
    assert len(docs) >= 30
    assert len({d.id for d in docs}) == len(docs)
    for d in docs:
        assert 80 <= len(d.text.split()) <= 250, d.id
        assert d.title
    assert [d.id for d in docs] == [d.id for d in load_corpus()]
    # near-duplicates: outdated versions of current articles stay in the corpus
    titles = {d.id: d.title for d in docs}
    assert "(archived)" in titles["plans-and-pricing-2023"]
    assert "(archived)" in titles["refund-policy-2023"]


# -- chunking ----------------------------------------------------------------


def _synthetic(sentences: int = 10, words: int = 10) -> Document:
    text = " ".join(
        f"Start{s} " + " ".join(f"w{s}x{i}" for i in range(words - 2)) + f" end{s}." for s in range(sentences)
    )
    return Document(id="doc", title="Synthetic", text=text)


@pytest.mark.parametrize(
    ("size", "overlap", "expected"),
    [
        (30, 10, 5),  # 3 sentences a chunk, each chunk repeats the last sentence of the one before
        (30, 0, 4),  # 3 + 3 + 3 + 1 sentences
        (25, 10, 9),  # 2 sentences a chunk, one shared: a window sliding by one sentence
        (100, 20, 1),  # the whole document fits
        (5, 0, 10),  # a sentence longer than the chunk size is a chunk of its own
    ],
)
def test_chunk_counts(size: int, overlap: int, expected: int) -> None:
    chunks = chunk_document(_synthetic(), size=size, overlap=overlap)
    assert len(chunks) == expected
    assert [c.id for c in chunks] == [f"doc#{n}" for n in range(expected)]
    assert all(c.doc_id == "doc" for c in chunks)


def test_chunks_overlap_by_whole_sentences() -> None:
    chunks = chunk_document(_synthetic(), size=30, overlap=10)
    for a, b in zip(chunks, chunks[1:], strict=False):
        last = a.text.split(". ")[-1]
        assert b.text.startswith(last.rstrip(".")), (a.text, b.text)
    no_overlap = chunk_document(_synthetic(), size=30, overlap=0)
    assert " ".join(c.text for c in no_overlap) == _synthetic().text


def test_chunk_size_changes_the_number_of_corpus_chunks() -> None:
    docs = load_corpus()
    small, default, large = (len(chunk_corpus(docs, s, min(20, s // 4))) for s in (64, 80, 96))
    assert small > default > large > len(docs) / 2
    for c in chunk_corpus(docs, 80, 20):
        sentences = c.text.split(". ")
        assert len(c.text.split()) <= 80 or len(sentences) == 1


def test_chunking_rejects_bad_sizes() -> None:
    with pytest.raises(ValueError):
        chunk_document(_synthetic(), size=20, overlap=20)
    with pytest.raises(ValueError):
        chunk_document(_synthetic(), size=0, overlap=0)


# -- retrieval ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "doc_id"),
    [
        ("Can I get a refund on an annual subscription?", "refund-policy"),
        ("How many days do I have to return hardware for a full refund?", "refund-policy"),
        ("What is the API rate limit on the Pro plan?", "api-rate-limits"),
        ("How do I turn on two-factor authentication?", "two-factor-authentication"),
        ("How long is the password reset link valid?", "password-and-login"),
        ("Where is the data of EU customers stored?", "data-retention"),
        ("Do you ship to PO boxes?", "shipping-options"),
    ],
)
def test_question_retrieves_its_article_at_rank_one(bot: HelpCentreBot, question: str, doc_id: str) -> None:
    contexts = bot.retrieve([user(question)])
    assert contexts[0].doc_id == doc_id


def test_contexts_are_ranked_chunks(bot: HelpCentreBot) -> None:
    contexts = bot([user("What is the API rate limit on the Pro plan?")]).contexts
    assert len(contexts) == bot.config.top_k == 5
    chunk_ids = {c.id for c in bot.chunks}
    for ctx in contexts:
        assert ctx.id in chunk_ids
        assert ctx.id.split("#")[0] == ctx.doc_id == ctx.source_id
        assert ctx.text and ctx.score is not None and ctx.score > 0
    scores = [c.score for c in contexts]
    assert scores == sorted(scores, reverse=True)


def test_cross_document_question_needs_more_than_one_context() -> None:
    question = [
        user("Which error do I get when I exceed the Pro plan's API limit, and how do I know how long to wait?")
    ]
    relevant = {"api-rate-limits", "api-error-codes"}
    wide = {c.doc_id for c in HelpCentreBot(BotConfig(top_k=5)).retrieve(question)}
    narrow = {c.doc_id for c in HelpCentreBot(BotConfig(top_k=1)).retrieve(question)}
    assert relevant <= wide
    assert len(narrow) == 1 and len(narrow & relevant) == 1


# -- history policies --------------------------------------------------------

CONVERSATION = [
    user("What is the API rate limit on the Pro plan?"),
    assistant("The Pro plan allows 60 requests per minute."),
    user("What happens if I go over it?"),
    assistant("The API rejects further requests with error E429."),
    user("Does that count video downloads?"),
    assistant("Video clip downloads do not count towards the limit."),
    user("What about the Business plan?"),
]


def test_history_policies_choose_the_turns() -> None:
    t1, t2, t3, new = (m["content"] for m in CONVERSATION if m["role"] == "user")
    assert build_query(CONVERSATION, "none").previous == ()
    assert build_query(CONVERSATION, "first").previous == (t1,)
    assert build_query(CONVERSATION, "last_k", k=3).previous == (t2, t3)
    assert build_query(CONVERSATION, "last_k", k=1).previous == ()
    assert build_query(CONVERSATION, "full").previous == (t1, t2, t3)
    for policy in ("none", "first", "last_k", "full"):
        assert build_query(CONVERSATION, policy).current == new
    full = build_query(CONVERSATION, "full")
    assert full.text == f"{t1} {t2} {t3} {new}"
    assert full.answers[-1] == "Video clip downloads do not count towards the limit."
    weights = [w for _, w in full.weighted(0.6)]
    assert weights[0] == 1.0 and weights == sorted(weights, reverse=True)
    with pytest.raises(ValueError):
        build_query(CONVERSATION, "everything")


def test_follow_up_needs_the_history() -> None:
    messages = [
        user("What is the API rate limit on the Pro plan?"),
        assistant("The Pro plan allows 60 requests per minute."),
        user("What about the Business plan?"),
    ]
    full = HelpCentreBot(BotConfig(history="full"))
    none = HelpCentreBot(BotConfig(history="none"))
    assert full.query(messages).text != none.query(messages).text
    with_history, forgetful = full(messages), none(messages)
    assert with_history.contexts[0].doc_id == "api-rate-limits"
    assert "api-rate-limits" not in {c.doc_id for c in forgetful.contexts}
    assert "600 requests per minute" in with_history.answer
    assert "600 requests per minute" not in forgetful.answer
    # the stand-alone question works without any history
    standalone = none([user("What is the API rate limit on the Business plan?")])
    assert "600 requests per minute" in standalone.answer


def test_correction_replaces_the_plan() -> None:
    bot = HelpCentreBot(BotConfig())
    answer = bot(
        [
            user("How much does the Pro plan cost?"),
            assistant("The Pro plan costs $12 per month per site."),
            user("No, I meant the Business plan."),
        ]
    ).answer
    assert "$39" in answer and "$12" not in answer


def test_last_k_forgets_what_is_older_than_k_turns() -> None:
    messages = [
        user("How long does standard shipping to Australia take?"),
        user("How much extra time does customs add?"),
        user("What if I refuse the package because of the charges?"),
        user("Can I get express shipping there?"),
    ]
    full = HelpCentreBot(BotConfig(history="full"))(messages).answer
    short = HelpCentreBot(BotConfig(history="last_k", history_k=3))(messages).answer
    assert "not available to Australia" in full
    assert "not available to Australia" not in short


# -- the reader --------------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    ["What is the capital of France?", "Can you recommend a good pizza recipe?", "Who won the football match?"],
)
def test_reader_abstains_off_topic(bot: HelpCentreBot, question: str) -> None:
    response = bot([user(question)])
    assert response.answer == ABSTAIN
    assert response.citations == []


def test_reader_answers_from_the_retrieved_chunks(bot: HelpCentreBot) -> None:
    response = bot([user("What does error H204 mean?")])
    assert "H204" in response.answer
    sentences = [s for s in response.answer.split(". ") if s]
    assert 1 <= len(sentences) <= 3
    retrieved = " ".join(c.text for c in response.contexts)
    assert all(s.rstrip(".") in retrieved for s in sentences)
    assert response.citations and set(response.citations) <= {c.doc_id for c in response.contexts}


def test_reader_prefers_the_current_article_over_the_archived_one(bot: HelpCentreBot) -> None:
    response = bot([user("How much does the Pro plan cost?")])
    assert "plans-and-pricing-2023" in {c.doc_id for c in bot.retrieve([user("What did the Pro plan cost in 2023?")])}
    assert "$12 per month" in response.answer
    assert "$9" not in response.answer


# -- configuration from the environment --------------------------------------


def test_defaults_are_the_healthy_configuration() -> None:
    cfg = make_bot().config
    assert (cfg.history, cfg.history_k, cfg.top_k, cfg.chunk_size, cfg.chunk_overlap, cfg.model) == (
        "full",
        3,
        5,
        80,
        20,
        None,
    )


def test_env_knobs_are_read_when_the_bot_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXAMPLE_RAG_HISTORY", "last_k")
    monkeypatch.setenv("EXAMPLE_RAG_HISTORY_K", "2")
    monkeypatch.setenv("EXAMPLE_RAG_TOP_K", "1")
    monkeypatch.setenv("EXAMPLE_RAG_CHUNK_SIZE", "64")
    bot = make_bot()
    assert (bot.config.history, bot.config.history_k, bot.config.top_k) == ("last_k", 2, 1)
    assert (bot.config.chunk_size, bot.config.chunk_overlap) == (64, 16)
    assert len(bot([user("What is the API rate limit on the Pro plan?")]).contexts) == 1
    assert len(bot.chunks) > len(HelpCentreBot(BotConfig()).chunks)
    monkeypatch.setenv("EXAMPLE_RAG_HISTORY", "none")
    assert make_bot().config.history == "none"
    assert make_bot(top_k=3).config.top_k == 3


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("EXAMPLE_RAG_HISTORY", "sometimes"),
        ("EXAMPLE_RAG_TOP_K", "0"),
        ("EXAMPLE_RAG_TOP_K", "four"),
        ("EXAMPLE_RAG_CHUNK_SIZE", "5"),
        ("EXAMPLE_RAG_CHUNK_OVERLAP", "90"),
    ],
)
def test_bad_env_values_are_refused(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=name):
        make_bot()


def test_model_answers_with_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict] = []

    def completion(**kwargs: object) -> object:
        calls.append(kwargs)
        message = types.SimpleNamespace(content=" The Business plan allows 600 requests per minute. ")
        return types.SimpleNamespace(choices=[types.SimpleNamespace(message=message)])

    monkeypatch.setitem(sys.modules, "litellm", types.SimpleNamespace(completion=completion))
    monkeypatch.setenv("EXAMPLE_RAG_MODEL", "openai/test-model")
    monkeypatch.setenv("EXAMPLE_RAG_API_BASE", "http://127.0.0.1:9/v1")
    bot = make_bot()
    messages = [
        user("What is the API rate limit on the Pro plan?"),
        assistant("The Pro plan allows 60 requests per minute."),
        user("What about the Business plan?"),
    ]
    response = bot(messages)
    assert response.answer == "The Business plan allows 600 requests per minute."
    assert response.contexts[0].doc_id == "api-rate-limits"
    (call,) = calls
    assert call["model"] == "openai/test-model" and call["api_base"] == "http://127.0.0.1:9/v1"
    system, *history = call["messages"]
    assert system["role"] == "system" and "[api-rate-limits]" in system["content"]
    assert history == messages
    # the history policy decides what the model sees, too
    monkeypatch.setenv("EXAMPLE_RAG_HISTORY", "none")
    make_bot()(messages)
    assert calls[-1]["messages"][1:] == [messages[-1]]


def test_bot_works_as_a_ragdive_target(bot: HelpCentreBot) -> None:
    target = as_async(bot)
    response = asyncio.run(target([user("How long does standard shipping take?")]))
    assert isinstance(response, TargetResponse)
    assert "3-5 business days" in response.answer
