"""The store of evaluated prompt prefixes kept between runs (engine/prefix_store.py)."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from skilleval.engine.prefix_store import (
    STATE_MAGIC,
    PrefixStore,
    prefix_name,
    state_cells,
    store_folder,
    with_streams,
)


def state(cells: int, body: bytes = b"cells", streams: int = 1) -> bytes:
    """Bytes laid out as llama.cpp serializes one sequence holding ``cells`` cells."""
    head = struct.pack("<IiI", STATE_MAGIC, 0, streams)
    return head + struct.pack("<I", 0) * (streams - 1) + struct.pack("<I", cells) + body


def test_the_entry_sharing_the_longest_start_wins(tmp_path: Path) -> None:
    store = PrefixStore(tmp_path)
    store.write(range(40), state(40, b"a" * 10))
    store.write([*range(20), 99, 98], state(22, b"b" * 10))
    entry, length = PrefixStore(tmp_path).best([*range(30), 7])
    assert entry is not None
    assert entry.tokens == tuple(range(40))
    assert length == 30
    assert PrefixStore(tmp_path).best([5, 6]) == (None, 0)


def test_bytes_come_back_as_written_and_damage_is_a_miss(tmp_path: Path) -> None:
    store = PrefixStore(tmp_path)
    store.write(range(40), state(40))
    entry, _ = store.best(range(40))
    assert entry is not None
    assert store.read(entry) == state(40)
    (tmp_path / f"{entry.name}.kv").write_bytes(state(40, b"cellz"))
    assert store.read(entry) is None
    assert not list(tmp_path.glob("*.kv"))
    assert not PrefixStore(tmp_path).has(range(40))


def test_the_least_recently_used_entries_go_past_the_limit(tmp_path: Path) -> None:
    store = PrefixStore(tmp_path, limit=250)
    for i in range(3):
        store.write([i] * 40, state(40, bytes(88)))
        os.utime(tmp_path / f"{store.best([i] * 40)[0].name}.kv", (i, i))  # type: ignore[union-attr]
    store.write([9] * 40, state(40, bytes(88)))
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
    store.write(range(40), state(40))
    assert store.saved == 0
    assert store.best(range(40)) == (None, 0)


def test_the_folder_changes_with_anything_that_shapes_the_bytes(tmp_path: Path) -> None:
    a = store_folder(tmp_path, "gguf:abc", "llama-cpp-python=0.3", "type_k=1")
    assert a == store_folder(tmp_path, "gguf:abc", "llama-cpp-python=0.3", "type_k=1")
    assert a != store_folder(tmp_path, "gguf:abd", "llama-cpp-python=0.3", "type_k=1")
    assert a != store_folder(tmp_path, "gguf:abc", "llama-cpp-python=0.4", "type_k=1")
    assert a.parent == tmp_path / "kv"


def test_an_edited_token_list_is_a_miss_with_one_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The digest covers the tokens with the bytes: a list edited beside intact bytes (once
    under its own name, once renamed to match) never reaches llama.cpp."""
    store = PrefixStore(tmp_path)
    store.write(range(40), state(40))
    meta = next(tmp_path.glob("*.json"))
    raw = json.loads(meta.read_text())
    raw["tokens"][5] = 7
    meta.write_text(json.dumps(raw))
    assert PrefixStore(tmp_path).best(range(40)) == (None, 0)
    assert not list(tmp_path.glob("*"))
    # The same edit, with both files renamed to the name the edited tokens give: the digest,
    # over tokens and bytes together, no longer matches.
    PrefixStore(tmp_path).write(range(40), state(40))
    meta = next(tmp_path.glob("*.json"))
    raw = json.loads(meta.read_text())
    raw["tokens"][5] = 7
    name = prefix_name(tuple(raw["tokens"]))
    (tmp_path / f"{name}.json").write_text(json.dumps(raw))
    meta.with_suffix(".kv").rename(tmp_path / f"{name}.kv")
    meta.unlink()
    fresh = PrefixStore(tmp_path)
    found, length = fresh.best(raw["tokens"])
    assert found is not None
    assert length == 40
    assert fresh.read(found) is None
    assert not list(tmp_path.glob("*"))
    err = capsys.readouterr().err
    assert err.count("warning: a stored prompt prefix in") == 1  # one per folder
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "raw",
    [
        {"tokens": [2**40] * 40, "sha256": "0" * 64},
        {"tokens": [-1] * 40, "sha256": "0" * 64},
        {"tokens": [1.5] * 40, "sha256": "0" * 64},
        {"tokens": "abc", "sha256": "0" * 64},
        [1, 2],
    ],
)
def test_a_token_list_that_is_not_token_ids_is_no_entry(tmp_path: Path, raw: object) -> None:
    (tmp_path / "x.json").write_text(json.dumps(raw))
    (tmp_path / "x.kv").write_bytes(state(40))
    assert PrefixStore(tmp_path).best([1] * 40) == (None, 0)
    assert not list(tmp_path.glob("*"))


def test_deeply_nested_token_list_is_no_entry(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("[" * 50_000 + "]" * 50_000)
    assert PrefixStore(tmp_path).best([1] * 40) == (None, 0)


def test_a_state_that_is_not_one_cell_per_token_is_refused(tmp_path: Path) -> None:
    store = PrefixStore(tmp_path)
    store.write(range(40), state(39))  # never kept
    assert store.saved == 0
    store.write(range(40), state(40))
    entry, _ = store.best(range(40))
    assert entry is not None
    (tmp_path / f"{entry.name}.kv").write_bytes(state(41))
    assert PrefixStore(tmp_path).read(entry) is None


def test_a_state_is_laid_out_again_for_another_stream_count() -> None:
    kept = state(80, b"k" * 9, streams=3)  # the third of three streams holds the cells
    alone = with_streams(kept, 1)
    assert alone == state(80, b"k" * 9, streams=1)
    head = struct.pack("<IiI", STATE_MAGIC, 0, 3)
    cells = struct.pack("<I", 80) + b"k" * 9
    assert with_streams(alone or b"", 3) == head + cells + struct.pack("<I", 0) * 2
    assert with_streams(head + cells + struct.pack("<I", 0) * 2, 1) == alone
    assert state_cells(with_streams(kept, 5) or b"") == 80
    assert with_streams(kept, 3) is kept
    assert with_streams(state(0, b"", streams=2), 1) == state(0, b"", streams=1)
    # Not a sequence state, or another count after the stream holding the cells: refused.
    assert with_streams(b"cells", 1) is None
    assert with_streams(head + cells + struct.pack("<I", 0) + struct.pack("<I", 7), 1) is None
    assert with_streams(kept, 0) is None


def test_state_cells_reads_llama_cpps_layout() -> None:
    assert state_cells(state(80, streams=3)) == 80
    assert state_cells(state(0)) == 0
    assert state_cells(b"cells") is None
    assert state_cells(b"\0" * 64) is None
