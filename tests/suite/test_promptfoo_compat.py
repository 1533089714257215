"""promptfoo keys that skilleval deliberately does not take are refused with the alternative.

The real example configs are loaded in test_promptfoo_examples.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from skilleval.errors import DiagnosticsError
from skilleval.suite.load import Overrides, load_suite


def test_the_providers_key_itself_is_a_clear_error(tmp_path: Path) -> None:
    suite = tmp_path / "promptfooconfig.yaml"
    suite.write_text("providers: [openai:gpt-4.1]\ntests:\n  - vars: {a: 1}\n", encoding="utf-8")
    with pytest.raises(DiagnosticsError, match="unsupported key 'providers'"):
        load_suite(suite, Overrides(entry_points=False))
