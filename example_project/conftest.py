import pytest
from example_rag import make_bot


@pytest.fixture(scope="session")
def ragdive_target():
    """The chatbot under test: ragdive sends it every conversation of the suite."""
    return make_bot()
