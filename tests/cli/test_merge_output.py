"""merge's own work beyond the statistics: the parts' record texts copied into results.json
only where they hold the same data, and sampled routing kept whole across shards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_shard_merge import (
    assert_same_run,
    cli,
    make_suite,
    run_dir,
    scripted_suite,
    whole_and_shards,
)


@pytest.fixture
def three_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[Path]]:
    suite = make_suite(tmp_path / "repo", scripted_suite(9))
    parts = []
    for k in (1, 2, 3):
        home = tmp_path / f"s{k}"
        assert cli(["run", str(suite), "--shard", f"{k}/3", "-q"], home, monkeypatch) in (0, 1)
        parts.append(run_dir(home))
    return suite, parts


def test_merged_results_json_is_what_the_writer_writes_whatever_a_part_says(
    three_parts, tmp_path: Path, monkeypatch
) -> None:
    """merge copies each record's text from its part's results.json only where it holds the
    same data as the part's results.jsonl: an edited results.json is not believed."""
    from skilleval.results.load import load_run
    from skilleval.results.write import dumps_run

    _suite, parts = three_parts
    edited = parts[1] / "results.json"
    text = edited.read_text(encoding="utf-8")
    assert '"output": "TIDY a"' in text
    edited.write_text(text.replace('"output": "TIDY a"', '"output": "EDITED"', 1), "utf-8")
    merged = tmp_path / "merged"
    assert cli(
        ["merge", *map(str, parts), "-o", str(merged), "-q"], tmp_path / "m", monkeypatch
    ) in (
        0,
        1,
    )
    written = (merged / "results.json").read_text(encoding="utf-8")
    assert "EDITED" not in written
    assert written == dumps_run(load_run(merged))
    lines = (merged / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(written)["records"] == [json.loads(line) for line in lines]


def test_sampled_routing_merges_into_the_whole_run(tmp_path: Path, monkeypatch) -> None:
    """With skill-creator's rule each test's routing runs stay in its shard, and the merged
    trigger block (rule, runs and rates) is the whole run's."""
    text = scripted_suite(12).replace("decoding:", "trigger: {runs: 3, rate: 0.5}\ndecoding:")
    suite = make_suite(tmp_path / "repo", text)
    whole_code, whole, _, parts = whole_and_shards(tmp_path, monkeypatch, suite, 2)
    merged = tmp_path / "merged"
    code = cli(["merge", *map(str, parts), "-o", str(merged), "-q"], tmp_path / "m", monkeypatch)
    assert code == whole_code
    assert_same_run(whole, merged)
    block = json.loads((merged / "results.json").read_text())["trigger"]
    assert block["rule"] == "sampled 3 runs, rate >= 0.5"
    assert all(len(t["runs"]) == 3 for t in block["tests"])


SIDE_BY_SIDE = """\
version: 1
type: capability
skill: skill/SKILL.md
model:
  provider: scripted
  responses:
    - match: "ANSWER A:"
      output: '{"reason": "A comes first.", "better": "A"}'
    - {arm: on, output: TIDY a b}
    - {arm: off, output: messy}
  default: messy
gate: {side_by_side_fitness: ">= 0.6"}
tests:
  - {id: one, prompt: "Tidy: b, a", assert: [{type: side-by-side, value: Sorted}]}
  - {id: two, prompt: "Tidy: d, c", assert: [{type: side-by-side, value: Sorted}]}
"""


def test_the_side_by_side_judges_fitness_and_its_gate_survive_a_merge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = make_suite(tmp_path / "repo", SIDE_BY_SIDE)
    whole_code, whole, _, parts = whole_and_shards(tmp_path, monkeypatch, suite, 2)
    assert whole_code == 1  # a judge that favours a position fails the gate
    merged = tmp_path / "merged"
    code = cli(["merge", *map(str, parts), "-o", str(merged), "-q"], tmp_path / "m", monkeypatch)
    assert code == whole_code
    a = json.loads((whole / "results.json").read_text(encoding="utf-8"))
    doc = json.loads((merged / "results.json").read_text(encoding="utf-8"))
    # Each machine measures the judges once: only when and how long it took differ.
    for run in (a, doc):
        for block in ("fitness", "side_by_side"):
            run["judge"][block].pop("seconds")
            run["judge"][block].pop("measured_at")
    assert a["judge"] == doc["judge"]
    assert a["gate"] == doc["gate"]
    assert a["records"] == doc["records"]
    assert doc["judge"]["side_by_side"]["status"] == "unqualified"
    (check,) = [c for c in doc["gate"]["checks"] if c["name"] == "side_by_side_fitness"]
    assert check["passed"] is False


def test_a_part_whose_results_json_is_damaged_inside_a_record_still_merges(
    three_parts, tmp_path: Path, monkeypatch, capsys
) -> None:
    """A record's text that is not JSON any more is not believed: the record is written as
    the writer writes it, and the merge says nothing of a traceback."""
    from skilleval.results.load import load_run
    from skilleval.results.write import dumps_run

    _suite, parts = three_parts
    edited = parts[0] / "results.json"
    text = edited.read_text(encoding="utf-8")
    assert '"output": "TIDY a"' in text
    edited.write_text(text.replace('"output": "TIDY a"', '"output": "TIDY a', 1), "utf-8")
    merged = tmp_path / "merged"
    code = cli(["merge", *map(str, parts), "-o", str(merged), "-q"], tmp_path / "m", monkeypatch)
    assert code in (0, 1)
    assert "Traceback" not in capsys.readouterr().err
    written = (merged / "results.json").read_text(encoding="utf-8")
    assert written == dumps_run(load_run(merged))


def test_a_piece_read_back_is_used_only_while_it_is_the_piece_that_was_checked(
    tmp_path: Path,
) -> None:
    from skilleval.runner.merge_records import PartFiles

    path = tmp_path / "part.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n')
    with PartFiles() as files:
        source = files.add(path)
        piece = (source, 9, 9, hash(b'{"b": 2}\n'))
        assert files.read(piece) == b'{"b": 2}\n'
        with path.open("r+b") as fh:
            fh.seek(15)
            fh.write(b"3")
        assert files.read(piece) is None


def test_every_record_text_of_a_part_is_found_where_the_writer_put_it(three_parts) -> None:
    """merge finds each record's text in its part's results.json, so it copies them all
    rather than encoding any again (the layout it reads is the one the writer writes)."""
    from skilleval.results.load import load_run
    from skilleval.results.write import record_text
    from skilleval.runner.merge_records import _record_spans

    _suite, parts = three_parts
    for part in parts:
        run = load_run(part / "results.json")
        whole, spans = _record_spans(part / "results.json")
        assert len(spans) == len(run.records) > 0
        for record, (start, stop) in zip(run.records, spans, strict=True):
            assert whole[start:stop].decode("utf-8") == record_text(record)


def test_a_part_whose_lines_are_in_another_order_merges_the_same(
    three_parts, tmp_path: Path, monkeypatch
) -> None:
    """A part run with several jobs writes its lines as they finish: merge still finds each
    record's own text, and the merged run is the one the parts in order give."""
    _suite, parts = three_parts
    first = tmp_path / "first"
    assert cli(
        ["merge", *map(str, parts), "-o", str(first), "-q"], tmp_path / "m", monkeypatch
    ) in (
        0,
        1,
    )
    jsonl = parts[2] / "results.jsonl"
    lines = jsonl.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(lines) > 2
    jsonl.write_text("".join(reversed(lines)), encoding="utf-8")
    second = tmp_path / "second"
    assert cli(
        ["merge", *map(str, parts), "-o", str(second), "-q"], tmp_path / "m", monkeypatch
    ) in (0, 1)
    for name in ("results.jsonl",):
        assert (first / name).read_bytes() == (second / name).read_bytes()
    a = json.loads((first / "results.json").read_text(encoding="utf-8"))
    b = json.loads((second / "results.json").read_text(encoding="utf-8"))
    assert a["records"] == b["records"]
    assert a["summary"] == b["summary"]
