"""pytest-ragdive: gate CI on the quality of a RAG chatbot."""

from .records import (
    Baseline,
    BaselineMetric,
    Context,
    Conversation,
    Document,
    Message,
    MetricValue,
    SuiteResult,
    TargetResponse,
    Turn,
    Verdict,
)
from .target import Target

__version__ = "0.1.0"

__all__ = [
    "Baseline",
    "BaselineMetric",
    "Context",
    "Conversation",
    "Document",
    "Message",
    "MetricValue",
    "SuiteResult",
    "Target",
    "TargetResponse",
    "Turn",
    "Verdict",
    "__version__",
]
