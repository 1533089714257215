"""The prefix store on the embedded model: a token list edited beside its KV bytes is never
restored (engine/prefix_store.py, util/homefile.py)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tests.engine.test_llama_batch import RULES, evaluated, key, rules_asks, run_in

pytestmark = pytest.mark.model


def _name(tokens: list[int]) -> str:
    """The file name the store gives a token list."""
    return hashlib.sha256(json.dumps(tokens).encode("ascii")).hexdigest()[:32]


def _edit_token_lists(home: Path, *, rename: bool) -> int:
    """Append out-of-range tokens to every stored list (renamed to the edited list's name
    when ``rename``); return how many lists were edited."""
    metas = sorted(home.glob("kv/*/*.json"))
    for meta in metas:
        raw = json.loads(meta.read_text())
        raw["tokens"] = [*raw["tokens"], 2**40, *range(600)]
        target = meta
        if rename:
            target = meta.with_name(f"{_name(raw['tokens'])}.json")
            meta.with_suffix(".kv").rename(target.with_suffix(".kv"))
            meta.unlink()
        target.write_text(json.dumps(raw))
    return len(metas)


@pytest.mark.parametrize(("parallel", "rename"), [(1, False), (2, False), (1, True), (2, True)])
def test_an_edited_token_list_is_a_miss_with_one_warning(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], parallel: int, rename: bool
) -> None:
    home = tmp_path / "home"
    run_in(home, rules_asks(RULES), parallel)
    # The clean run decodes as the home's runs do (the same probe verdicts, so the same lanes).
    clean = tmp_path / "clean"
    clean.mkdir()
    for memo in ("kernel-probe.json", "lane-probe.json"):
        if (home / memo).exists():
            shutil.copy(home / memo, clean / memo)
    fresh, _ = run_in(clean, rules_asks(RULES), parallel)
    assert _edit_token_lists(home, rename=rename) >= 1
    capfd.readouterr()
    again, loaded = run_in(home, rules_asks(RULES), parallel)
    assert loaded == 0
    assert [key(a) for a in again] == [key(a) for a in fresh]
    assert evaluated(again) == evaluated(fresh)
    err = capfd.readouterr().err
    assert "Traceback" not in err
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1
    assert "a stored prompt prefix in" in warnings[0]
    assert "is damaged and was not used; the prompt is evaluated again" in warnings[0]
