"""The chat-template family fixtures, built once and kept in a folder keyed by their inputs."""

from __future__ import annotations

import importlib.util
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from family_fixtures import BY_NAME, build_fixture, fixture_key

FIXTURE_ROOT = Path(tempfile.gettempdir()) / "skilleval-family-fixtures"
"""Where fixtures are kept between sessions; each lives under the key of its inputs, so a
changed template, renaming, builder or embedded model gives a new file, never a stale one."""


@pytest.fixture(scope="session")
def family_model() -> Callable[[str], Path]:
    """The GGUF fixture of a family, by name: built on first use, reused while its inputs hold."""
    from skilleval.engine.embedded import default_model_path

    # The dev extra brings gguf; without it the fixtures cannot be built. As for the model
    # itself (tests/conftest.py), CI's SKILLEVAL_REQUIRE_MODEL=1 turns the skip into a failure.
    if (
        importlib.util.find_spec("gguf") is None
        and os.environ.get("SKILLEVAL_REQUIRE_MODEL") != "1"
    ):
        pytest.skip("the gguf package is not installed (pip install -e '.[dev]')")
    source = default_model_path()
    built: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in built:
            family = BY_NAME[name]
            target = FIXTURE_ROOT / fixture_key(family, source) / f"{family.name}.gguf"
            if not target.is_file():
                build_fixture(family, source, target)
            built[name] = target
        return built[name]

    return get
