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
import shutil
from pathlib import Path
from typing import Any

import pytest
from promptfoo_support import with_echo

from skilleval.cli import run_cli
from skilleval.errors import DiagnosticsError
from skilleval.suite.load import Overrides, load_suite

DATA = Path(__file__).resolve().parents[1] / "data" / "promptfoo"
EXAMPLES = sorted(p.parent.name for p in DATA.glob("*/promptfooconfig.yaml"))

NOT_YET: dict[str, str] = {}
"""Examples that cannot load yet, and why."""
VERDICTS_NOT_YET: dict[str, str] = {
    "structured-outputs-config": "its prompts set `response_format`: skilleval's echo answers"
    " a schema-held request with the smallest JSON that fits it, promptfoo's with the prompt,"
    " so the two outputs differ",
}
"""Examples whose verdicts differ from promptfoo's, and why."""


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
        position[r["test_id"]]: [(a["type"], a["status"]) for a in r["asserts"]] for r in records
    }
    want = {(row["test_index"], row["prompt_index"]): row for row in expected["results"]}
    assert set(got) == set(want)
    for key, ours in got.items():
        assert _agree(ours, want[key]), (key, ours, want[key])


def _agree(ours: list[tuple[str, str]], theirs: dict[str, Any]) -> bool:
    """Whether skilleval's verdicts on a test agree with promptfoo's.

    Two differences of form are read as agreement. promptfoo records no assertion at all
    when the test's transform throws; skilleval records each assertion as an ``error``. And
    promptfoo lists the results a JavaScript check returns (``componentResults``) after it,
    under the same assertion; skilleval keeps the check's own verdict, so those are skipped.
    """
    if not theirs["asserts"] and theirs["error"]:
        return bool(ours) and all(status == "error" for _, status in ours)
    pending = list(theirs["asserts"])
    for n, (kind, status) in enumerate(ours):
        match = next((i for i, item in enumerate(pending) if item["type"] == kind), None)
        if match is None or (status == "pass") != bool(pending[match]["pass"]):
            return False
        del pending[: match + 1]
        more_of_kind = any(k == kind for k, _ in ours[n + 1 :])
        if kind == "javascript" and not more_of_kind:
            # What the check returned as its own results follows it: not verdicts of ours.
            pending = [item for item in pending if item["type"] != kind]
    return not pending


def _first_index(suite: Any) -> Any:
    order = [t.prompt.label for t in suite.tests]
    return order.index
