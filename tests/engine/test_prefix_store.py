"""The store of evaluated prompt prefixes kept between runs (engine/prefix_store.py)."""

from __future__ import annotations

import os
from pathlib import Path

from skilleval.engine.prefix_store import PrefixStore, store_folder


def test_the_entry_sharing_the_longest_start_wins(tmp_path: Path) -> None:
    store = PrefixStore(tmp_path)
    store.write(range(40), b"a" * 10)
    store.write([*range(20), 99, 98], b"b" * 10)
    entry, length = PrefixStore(tmp_path).best([*range(30), 7])
    assert entry is not None
    assert entry.tokens == tuple(range(40))
    assert length == 30
    assert PrefixStore(tmp_path).best([5, 6]) == (None, 0)


def test_bytes_come_back_as_written_and_damage_is_a_miss(tmp_path: Path) -> None:
    store = PrefixStore(tmp_path)
    store.write(range(40), b"cells")
    entry, _ = store.best(range(40))
    assert entry is not None
    assert store.read(entry) == b"cells"
    (tmp_path / f"{entry.name}.kv").write_bytes(b"cellz")
    assert store.read(entry) is None
    assert not list(tmp_path.glob("*.kv"))
    assert not PrefixStore(tmp_path).has(range(40))


def test_the_least_recently_used_entries_go_past_the_limit(tmp_path: Path) -> None:
    store = PrefixStore(tmp_path, limit=250)
    for i in range(3):
        store.write([i] * 40, bytes(100))
        os.utime(tmp_path / f"{store.best([i] * 40)[0].name}.kv", (i, i))  # type: ignore[union-attr]
    store.write([9] * 40, bytes(100))
    kept = PrefixStore(tmp_path)
    assert [kept.has([i] * 40) for i in (0, 1, 2, 9)] == [False, False, True, True]


def test_a_half_written_entry_is_no_entry(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{not json")
    (tmp_path / "y.json").write_text('{"tokens": [1, 2]}')
    assert PrefixStore(tmp_path).best([1, 2]) == (None, 0)


def test_an_unwritable_folder_only_stores_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    store = PrefixStore(blocker / "kv")
    store.write(range(40), b"x")
    assert store.saved == 0
    assert store.best(range(40)) == (None, 0)


def test_the_folder_changes_with_anything_that_shapes_the_bytes(tmp_path: Path) -> None:
    a = store_folder(tmp_path, "gguf:abc", "llama-cpp-python=0.3", "type_k=1")
    assert a == store_folder(tmp_path, "gguf:abc", "llama-cpp-python=0.3", "type_k=1")
    assert a != store_folder(tmp_path, "gguf:abd", "llama-cpp-python=0.3", "type_k=1")
    assert a != store_folder(tmp_path, "gguf:abc", "llama-cpp-python=0.4", "type_k=1")
    assert a.parent == tmp_path / "kv"
