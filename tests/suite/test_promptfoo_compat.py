"""promptfoo's public example configs: their tests and assertions load unchanged.

The configs live in the shared reference folder beside the repository. Each is loaded with
its `providers:` block swapped for `model: echo` (skilleval runs one model per suite). What
may still fail is only what skilleval deliberately does not do, each with a clear message:
prompt files that the examples do not ship. (JavaScript assertions and transforms load.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from skilleval.errors import DiagnosticsError
from skilleval.suite.load import Overrides, load_suite

EXAMPLES = Path(__file__).resolve().parents[3] / "shared" / "reference" / "promptfoo-examples"
CONFIGS = sorted(EXAMPLES.glob("*.yaml")) if EXAMPLES.is_dir() else []
EXPECTED = ("file not found: file://prompt",)


def without_providers(text: str) -> str:
    lines, skipping = [], False
    for line in text.splitlines():
        if re.match(r"^(providers|targets):", line):
            skipping = True
            continue
        if skipping and (not line.strip() or line[0] in " \t"):
            continue
        skipping = False
        lines.append(line)
    return "model: echo\n" + "\n".join(lines) + "\n"


@pytest.mark.skipif(not CONFIGS, reason="promptfoo example configs not found beside the repo")
@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name.split("__")[1])
def test_promptfoo_tests_and_asserts_load(config: Path, tmp_path: Path) -> None:
    suite = tmp_path / "promptfooconfig.yaml"
    suite.write_text(without_providers(config.read_text(encoding="utf-8")), encoding="utf-8")
    try:
        loaded, _ = load_suite(suite, Overrides(entry_points=False))
    except DiagnosticsError as exc:
        unexpected = [d for d in exc.diagnostics if not any(e in d.message for e in EXPECTED)]
        assert not unexpected, "\n".join(str(d) for d in unexpected)
        return
    assert loaded.tests


def test_a_hosted_provider_without_its_key_is_a_clear_error(tmp_path: Path) -> None:
    suite = tmp_path / "promptfooconfig.yaml"
    suite.write_text(
        "providers: [openai:gpt-4.1]\nprompts: [hi]\ntests:\n  - vars: {a: 1}\n",
        encoding="utf-8",
    )
    with pytest.raises(DiagnosticsError, match="OPENAI_API_KEY is not set") as caught:
        load_suite(suite, Overrides(entry_points=False))
    assert str(caught.value.diagnostics[0].where).endswith("promptfooconfig.yaml:1:13")
