"""The one rule for what is read back from the home (util/homefile.py) and the memos that
follow it (util/memo.py)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from skilleval.util.homefile import read_sealed, seal, unseal, write_sealed
from skilleval.util.memo import read_memo, remember


def test_a_sealed_payload_comes_back_only_intact_and_under_its_context() -> None:
    sealed = seal(b"payload", b"key")
    assert unseal(sealed, b"key") == b"payload"
    assert unseal(sealed, b"other key") is None
    assert unseal(sealed[:-1], b"key") is None
    assert unseal(b"payload", b"key") is None
    rng = random.Random(7)
    for _ in range(200):
        data = bytearray(sealed)
        at = rng.randrange(len(data))
        data[at] ^= 1 << rng.randrange(8)
        assert unseal(bytes(data), b"key") is None


def test_a_damaged_file_is_absent_removed_and_said_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "x.bin"
    assert write_sealed(target, b"abc")
    assert read_sealed(target, "a thing") == b"abc"
    target.write_bytes(target.read_bytes()[:-1] + b"d")
    assert read_sealed(target, "a thing") is None
    assert not target.exists()
    target.write_bytes(b"junk")
    assert read_sealed(target, "a thing") is None
    err = capsys.readouterr().err
    assert (
        err == f"warning: a thing in {target} is damaged and was not used; it is computed again\n"
    )


def test_memos_round_trip_and_refuse_damage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    memo = tmp_path / "judge-fitness.json"
    remember(memo, "k", {"status": "qualified", "agreement": 0.9})
    assert read_memo(memo) == {"k": {"status": "qualified", "agreement": 0.9}}
    text = memo.read_text()
    for damaged in (
        text.replace("0.9", "0.1"),  # a changed value, valid JSON
        text.replace("0.9", "NaN"),
        "[" * 50_000 + "]" * 50_000,
        text[: len(text) // 2],
    ):
        memo.write_text(damaged)
        assert read_memo(memo) == {}
    assert capsys.readouterr().err.count("warning: a memo in") == 1
    memo.write_text(json.dumps({"k": 1}))  # written before memos carried a digest
    assert read_memo(memo) == {}
    remember(memo, "n", float("nan"))  # not JSON: not stored
    assert "n" not in read_memo(memo)
