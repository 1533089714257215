"""Real promptfoo configs load unchanged, and give promptfoo's verdicts on the echo model.

tests/data/promptfoo/ holds public example configs of the promptfoo repository, each with
the prompt files it reads, its ``echo.yaml`` (the same config on promptfoo's echo provider,
without the assertions that need a hosted grader, a price or a clock) and
``promptfoo-verdicts.json``, what promptfoo 0.123.1 decided for each assertion on that
config (see its README).

Loading: each config, with its ``providers:`` replaced by ``[echo]`` and nothing else
changed, must load. Verdicts: skilleval runs ``echo.yaml`` and must reach promptfoo's verdict
for every assertion of every test × prompt. What cannot pass yet is marked xfail (strict, so
that it is noticed once it does), with the reason.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from skilleval.cli import run_cli
from skilleval.errors import DiagnosticsError
from skilleval.suite.load import Overrides, load_suite

DATA = Path(__file__).resolve().parents[1] / "data" / "promptfoo"
EXAMPLES = sorted(p.parent.name for p in DATA.glob("*/promptfooconfig.yaml"))

ANTHROPIC = "its prompt file is in Anthropic's message format (content parts), not read"
RESPONSE_FORMAT = "its prompts set `config.response_format`, which is refused"
NOT_YET: dict[str, str] = {
    "claude-vs-gpt": ANTHROPIC,
    "structured-outputs-config": RESPONSE_FORMAT,
}
"""Examples that cannot load yet, and why."""
VERDICTS_NOT_YET: dict[str, str] = {
    **NOT_YET,
    "javascript-assert-external": "promptfoo lists the componentResults a JavaScript check"
    " returns as assertions of their own; skilleval keeps one verdict per assertion",
    "json-output": "when the test's JavaScript transform throws, promptfoo records no"
    " assertion verdicts; skilleval still reports each assertion",
}
"""Examples whose verdicts differ from promptfoo's, and why."""


def with_echo(text: str) -> str:
    """The config with its ``providers:`` (or ``targets:``) block replaced by ``[echo]``."""
    lines, skipping = [], False
    for line in text.splitlines():
        if re.match(r"^(providers|targets):", line):
            lines.append("providers: [echo]")
            skipping = True
            continue
        if skipping and (not line.strip() or line[0] in " \t-"):
            continue
        skipping = False
        lines.append(line)
    return "\n".join(lines) + "\n"


def params(why: dict[str, str]) -> list[Any]:
    return [
        pytest.param(
            name,
            id=name,
            marks=[pytest.mark.xfail(reason=why[name], strict=True)] if name in why else [],
        )
        for name in EXAMPLES
    ]


def copy_example(name: str, tmp_path: Path) -> Path:
    shutil.copytree(DATA / name, tmp_path, dirs_exist_ok=True)
    return tmp_path


def test_the_examples_are_there() -> None:
    assert len(EXAMPLES) >= 10
    assert set(VERDICTS_NOT_YET) <= set(EXAMPLES)


@pytest.mark.parametrize("name", params(NOT_YET))
def test_promptfoo_example_loads_with_echo(name: str, tmp_path: Path) -> None:
    folder = copy_example(name, tmp_path)
    config = folder / "promptfooconfig.yaml"
    config.write_text(with_echo(config.read_text(encoding="utf-8")), encoding="utf-8")
    try:
        loaded, _ = load_suite(config, Overrides(entry_points=False))
    except DiagnosticsError as exc:
        pytest.fail("\n".join(str(d) for d in exc.diagnostics))
    assert loaded.tests
    assert loaded.model.kind == "echo"


@pytest.mark.parametrize("name", params(VERDICTS_NOT_YET))
def test_verdicts_match_promptfoos_on_the_echo_model(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = copy_example(name, tmp_path)
    expected = json.loads((folder / "promptfoo-verdicts.json").read_text(encoding="utf-8"))
    suite, _ = load_suite(folder / "echo.yaml", Overrides(entry_points=False))
    prompts = sorted({t.prompt.label for t in suite.tests}, key=_first_index(suite))
    position = {
        t.id: (i // len(prompts), prompts.index(t.prompt.label)) for i, t in enumerate(suite.tests)
    }
    run_cli(["run", str(folder / "echo.yaml"), "--json", "--no-entry-points"])
    records = json.loads(capsys.readouterr().out)["records"]
    got = {
        position[r["test_id"]]: [(a["type"], a["status"] == "pass") for a in r["asserts"]]
        for r in records
    }
    want = {
        (row["test_index"], row["prompt_index"]): [(a["type"], a["pass"]) for a in row["asserts"]]
        for row in expected["results"]
    }
    assert got == want


def _first_index(suite: Any) -> Any:
    order = [t.prompt.label for t in suite.tests]
    return order.index
