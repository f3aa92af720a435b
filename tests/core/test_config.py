

def test_recall_k_defaults_to_seed_001s_5_and_is_validated() -> None:
    import factories
    import pytest as _pytest

    from pytest_ragdive.core.errors import ConfigError

    assert factories.config().recall_k == 5
    assert factories.config(recall_k=3).recall_k == 3
    with _pytest.raises((ConfigError, ValueError)):
        factories.config(recall_k=0)
