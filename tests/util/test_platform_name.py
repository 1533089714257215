"""The platform's name is the standard library's, asked once per system and interpreter."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from skilleval.util.memo import read_memo
from skilleval.util.platform_name import MEMO_FILE, platform_name


def test_the_name_is_platforms_and_is_asked_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = platform.platform(terse=True)
    assert platform_name(tmp_path) == expected
    assert list(read_memo(tmp_path / MEMO_FILE).values()) == [expected]

    def asked(**_: object) -> str:
        raise AssertionError("asked again")

    monkeypatch.setattr(platform, "platform", asked)
    assert platform_name(tmp_path) == expected


def test_another_system_asks_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    platform_name(tmp_path)
    monkeypatch.setattr(platform, "platform", lambda **_: "Elsewhere-1")
    monkeypatch.setattr("sys.version", "another interpreter")
    assert platform_name(tmp_path) == "Elsewhere-1"


def test_a_home_that_does_not_exist_is_not_made(tmp_path: Path) -> None:
    assert platform_name(tmp_path / "missing") == platform.platform(terse=True)
    assert not (tmp_path / "missing").exists()
