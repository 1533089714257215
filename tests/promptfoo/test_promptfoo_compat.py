"""promptfoo keys that skilleval deliberately does not take are refused with the alternative.

The real example configs are loaded in test_promptfoo_examples.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from skilleval.errors import DiagnosticsError
from skilleval.suite.load import Overrides, load_suite


def test_a_hosted_provider_without_its_key_is_a_clear_error(tmp_path: Path) -> None:
    suite = tmp_path / "promptfooconfig.yaml"
    suite.write_text(
        "providers: [openai:gpt-4.1]\nprompts: [hi]\ntests:\n  - vars: {a: 1}\n",
        encoding="utf-8",
    )
    with pytest.raises(DiagnosticsError, match="OPENAI_API_KEY is not set") as caught:
        load_suite(suite, Overrides(entry_points=False))
    assert str(caught.value.diagnostics[0].where).endswith("promptfooconfig.yaml:1:13")
