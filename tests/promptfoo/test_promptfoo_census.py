"""Every promptfoo config in tests/data/promptfoo/ (its subfolders too), validated unchanged
with every hosted vendor's key set to a dummy: it loads, or it is refused by name, each
refusal at the config's file:line:col and naming something written on that line; never a
traceback, never a message that names nothing."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from skilleval.cli import run_cli
from skilleval.promptfoo.provider_ids import CLOUD

DATA = Path(__file__).resolve().parents[1] / "data" / "promptfoo"
_CONFIG_KEYS = {"prompts", "providers", "targets", "tests"}


def _is_config(path: Path) -> bool:
    data = YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))
    return isinstance(data, dict) and bool(_CONFIG_KEYS & set(data))


CONFIGS = sorted(str(p.relative_to(DATA)) for p in DATA.rglob("*.yaml") if _is_config(p))
# The configs that cannot run here, each for a provider skilleval does not call.
REFUSED = {
    "llama-gpt-comparison/promptfooconfig.yaml": 1,  # replicate
    "mistral-llama-comparison/promptfooconfig.yaml": 3,  # huggingface, replicate twice
    "python-provider/promptfooconfig.yaml": 1,  # `model:` where promptfoo reads `id:`
    "structured-outputs-config/promptfooconfig.yaml": 1,  # azure
}
_ERROR = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): error: (?P<message>.+)$")


def test_the_census_covers_every_example() -> None:
    assert len(CONFIGS) >= 50
    assert set(REFUSED) <= set(CONFIGS)
    assert {c.split("/")[0] for c in CONFIGS} >= {"own-apps", "ollama", "sql"}


@pytest.mark.parametrize("name", CONFIGS)
def test_a_config_loads_unchanged_or_is_refused_by_name(
    name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for vendor in CLOUD.values():
        for variable in (vendor.key_env, *vendor.also):
            monkeypatch.setenv(variable, "dummy-key")
    source = DATA / name
    work = shutil.copytree(source.parent, tmp_path / source.parent.name)
    config = work / source.name
    code = run_cli(["validate", str(config), "--no-entry-points"])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if name not in REFUSED:
        assert code == 0, err
        return
    assert code == 4, err
    errors = [line for line in err.splitlines() if ": error: " in line]
    assert len(errors) == REFUSED[name], err
    lines = config.read_text(encoding="utf-8").splitlines()
    for line in errors:
        found = _ERROR.match(line)
        assert found, line
        assert Path(found["path"]).name == config.name, line
        written = lines[int(found["line"]) - 1]
        named = [part.split(": ")[-1] for part in found["message"].split("`")[1::2]]
        # The message names what is refused, as it is written at that position (a name of
        # some length: `id` or `echo` in an example is not naming the thing).
        assert any(len(part) >= 6 and part in written for part in named), line


def test_a_provider_without_an_id_is_refused_naming_what_it_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        "prompts: ['{{q}}']\nproviders:\n  - label: mine\n    endpoint: local\n"
        "tests:\n  - vars: {q: hi}\n",
        encoding="utf-8",
    )
    assert run_cli(["validate", str(config), "--no-entry-points"]) == 4
    err = capsys.readouterr().err
    assert "promptfooconfig.yaml:3:5: error: this provider has no `id`, and `endpoint`" in err
    assert "Traceback" not in err
