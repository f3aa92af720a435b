"""A small retrieval-augmented chatbot for the help centre of Lumio (a fictional
smart-camera company): the target the bundled ragdive example tests."""

from .bot import BotConfig, HelpCentreBot, make_bot
from .chunking import Chunk, chunk_corpus, chunk_document
from .corpus import DEFAULT_CORPUS, load_corpus
from .history import POLICIES, Query, build_query
from .reader import ABSTAIN, ExtractiveReader
from .retrieval import BM25Retriever

__all__ = [
    "ABSTAIN",
    "BM25Retriever",
    "BotConfig",
    "Chunk",
    "DEFAULT_CORPUS",
    "ExtractiveReader",
    "HelpCentreBot",
    "POLICIES",
    "Query",
    "build_query",
    "chunk_corpus",
    "chunk_document",
    "load_corpus",
    "make_bot",
]
