"""results.json and ``-o x.json`` are written a record at a time, with the same bytes as one
``json.dumps`` of the whole document."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from skilleval.report.outputs import builtin_formats, write_output
from skilleval.results.write import dumps_run, iter_run, record_text, run_json
from tests.report.test_reports import run_doc, skill_doc, typed


def _whole(run: object) -> str:
    return json.dumps(run_json(run), ensure_ascii=False, indent=2) + "\n"  # type: ignore[arg-type]


def test_the_pieces_are_the_document_one_record_each(tmp_path: Path) -> None:
    run = typed(skill_doc(tmp_path, None))
    pieces = list(iter_run(run))
    assert len(pieces) == len(run.records) + 2
    assert "".join(pieces) == _whole(run) == dumps_run(run)
    assert all(piece.startswith('    {\n      "test_id"') for piece in pieces[1:-1])
    assert all(piece.count("\n    }") == 1 for piece in pieces[1:-1])
    empty = dataclasses.replace(run, records=())
    assert "".join(iter_run(empty)) == _whole(empty)


def test_records_given_as_text_write_the_same_document(tmp_path: Path) -> None:
    """What merge does with its parts: the records' texts, given back to the writer, give
    the same document; a record given no text is encoded."""
    run = typed(skill_doc(tmp_path, None))
    whole = _whole(run)
    texts = [record_text(r) for r in run.records]
    assert len(texts) == len(run.records) > 1
    assert "".join(iter_run(run, texts)) == whole
    assert "".join(iter_run(run, [None, *texts[1:]])) == whole
    swapped = [texts[1], texts[0], *texts[2:]]
    assert "".join(iter_run(run, swapped)) != whole


def test_json_output_and_results_json_are_the_streamed_text(tmp_path: Path) -> None:
    doc = run_doc(_suite(tmp_path), None)
    run = typed(doc)
    out = tmp_path / "out.json"
    write_output(run, out, None, builtin_formats())
    assert out.read_text(encoding="utf-8") == _whole(run)
    assert json.loads(out.read_text(encoding="utf-8")) == doc


def _suite(folder: Path) -> Path:
    from tests.report.test_reports import scripted_suite

    return scripted_suite(folder, madrid="Madrid \\udc00 </script>")
