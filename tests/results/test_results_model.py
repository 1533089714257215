"""The typed results model: its one writer, its one loader, its generated schema, and the
shape of results.json pinned by a golden file."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from skilleval.cli import run_cli
from skilleval.errors import DecodeError, SkillevalError
from skilleval.results.codec import decode
from skilleval.results.load import load_run, parse_run
from skilleval.results.model import Run
from skilleval.results.schema import results_schema
from skilleval.results.write import dumps_run, run_json
from skilleval.suite.schema import load_schema

ROOT = Path(__file__).resolve().parent.parent.parent
GOLDEN = ROOT / "tests" / "data" / "results" / "quickstart.json"

# Fields that differ between two runs of the same suite on the same model.
VOLATILE = "<volatile>"


def _run_quickstart() -> tuple[dict[str, Any], str]:
    with contextlib.chdir(ROOT):  # the suite's path is recorded as given
        assert run_cli(["run", "examples/quickstart/suite.yaml", "-q"]) == 0
    path = Path(os.environ["SKILLEVAL_HOME"]) / "runs" / "latest" / "results.json"
    text = path.read_text(encoding="utf-8")
    return json.loads(text), text


def normalised(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with what legitimately varies from run to run replaced by a marker."""
    out = copy.deepcopy(doc)
    out["run_id"] = VOLATILE
    out["skilleval"] = VOLATILE
    out["timing"] = {k: VOLATILE for k in out["timing"]}
    env = out["environment"]
    env["python"] = env["platform"] = VOLATILE
    # The registry lists every installed assertion type; it grows with skilleval itself.
    env["registry"] = VOLATILE
    for record in out["records"]:
        for key in ("latency_ms", "tokens_per_s"):
            record["stats"][key] = VOLATILE
    return out


def test_quickstart_results_keep_their_shape(capsys: pytest.CaptureFixture[str]) -> None:
    """results.json of the quickstart suite on the echo model, byte for byte, volatile fields
    aside. Set SKILLEVAL_UPDATE_GOLDENS=1 to rewrite the golden file after a deliberate change."""
    doc, text = _run_quickstart()
    shown = json.dumps(normalised(doc), ensure_ascii=False, indent=2) + "\n"
    if os.environ.get("SKILLEVAL_UPDATE_GOLDENS") == "1":
        GOLDEN.write_text(shown, encoding="utf-8")
    assert shown == GOLDEN.read_text(encoding="utf-8")
    # The file is the writer's own text: indented, UTF-8 as is, newline at the end.
    assert text == dumps_run(decode(Run, doc))


def test_reading_and_writing_back_is_lossless(capsys: pytest.CaptureFixture[str]) -> None:
    doc, text = _run_quickstart()
    run = load_run(Path(os.environ["SKILLEVAL_HOME"]) / "runs" / "latest")
    assert run_json(run) == doc
    assert dumps_run(run) == text


def test_the_schema_on_disk_is_the_generated_one() -> None:
    from jsonschema import Draft202012Validator

    schema = results_schema()
    Draft202012Validator.check_schema(schema)
    assert load_schema("results.schema.json") == schema
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "results_schema.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr


def test_decoding_names_the_field_that_does_not_fit(capsys: pytest.CaptureFixture[str]) -> None:
    doc, _ = _run_quickstart()
    bad = copy.deepcopy(doc)
    bad["records"][1]["asserts"][0]["status"] = "maybe"
    with pytest.raises(DecodeError, match=r"^records/1/asserts/0/status: 'maybe' is not one of"):
        decode(Run, bad)
    bad = copy.deepcopy(doc)
    bad["summary"]["arms"]["default"]["passed"] = "2"
    with pytest.raises(DecodeError, match=r"^summary/arms/default/passed: expected an integer"):
        decode(Run, bad)
    bad = copy.deepcopy(doc)
    bad["environment"]["model"]["size"] = "big"
    with pytest.raises(DecodeError, match=r"^environment/model/size: expected an integer"):
        decode(Run, bad)


def test_a_document_that_drifted_is_refused_with_where_and_why(tmp_path: Path) -> None:
    doc, _ = _run_quickstart()
    doc["records"][0]["score"] = "high"
    del doc["summary"]["errors"]
    with pytest.raises(SkillevalError) as err:
        parse_run(doc, "results.json")
    text = str(err.value)
    assert "results.json is not a valid skilleval results file (2 problems)" in text
    assert "records/0/score: 'high' is not of type 'number'" in text
    assert "summary: 'errors' is a required property" in text


# --------------------------------------------------------------------------- damaged files


def _mutants(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    """A replacement of another type for every node, and the removal of every key."""
    found: list[tuple[tuple[Any, ...], Any]] = []
    if path:
        if isinstance(doc, str):
            found.append((path, 7))
        elif isinstance(doc, bool) or doc is None:
            found.append((path, "yes"))
        elif isinstance(doc, int | float):
            found.append((path, "many"))
        elif isinstance(doc, list):
            found.append((path, {"not": "a list"}))
        elif isinstance(doc, dict):
            found.append((path, ["not", "an", "object"]))
    if isinstance(doc, dict):
        for key, value in doc.items():
            found.append(((*path, key), KeyError))
            found.extend(_mutants(value, (*path, key)))
    elif isinstance(doc, list) and doc:
        found.extend(_mutants(doc[0], (*path, 0)))
    return found


def _apply(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(doc)
    node = out
    for step in path[:-1]:
        node = node[step]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


def test_report_on_damaged_results_says_what_is_wrong_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc, _ = _run_quickstart()
    doc["environment"]["registry"] = doc["environment"]["registry"][:1]
    capsys.readouterr()
    mutants = _mutants(doc)
    assert len(mutants) > 150
    target = tmp_path / "results.json"
    refused = 0
    for path, value in mutants:
        target.write_text(json.dumps(_apply(doc, path, value)), encoding="utf-8")
        code = run_cli(["report", str(target), "-o", str(tmp_path / "out.md")])
        err = capsys.readouterr().err
        assert "Traceback" not in err, (path, err)
        # A damaged results file is invalid input (4), not a model failure (3).
        assert code in (0, 4), (path, code, err)
        if code == 4:
            refused += 1
            assert "error: " in err, (path, err)
            assert "is not a valid skilleval results file" in err or "results" in err, err
    # Most mutants break the format; the few that do not (a description that became a number
    # is still refused, a removed optional key is not) render.
    assert refused > len(mutants) * 0.8


def test_report_on_truncated_and_non_json_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "results.json"
    for text in ("", "{", "[]", "null", '{"version": 1, "records": "x"}', "[" * 5000):
        target.write_text(text, encoding="utf-8")
        assert run_cli(["report", str(target)]) == 4
        err = capsys.readouterr().err
        assert "Traceback" not in err
        assert err.startswith("error: ")


# --------------------------------------------------------------------------- -o targets


@pytest.mark.parametrize("command", ["run", "report"])
def test_unwritable_outputs_get_one_message_and_exit_2(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a_directory.json").mkdir()
    (tmp_path / "a_file").write_text("x", encoding="utf-8")
    suite = str(ROOT / "examples" / "quickstart" / "suite.yaml")
    runs = Path(os.environ["SKILLEVAL_HOME"]) / "runs"
    if command == "report":
        assert run_cli(["run", suite, "-q"]) == 0
        capsys.readouterr()
    before = set(runs.iterdir()) if runs.is_dir() else set()
    cases = {
        "a_directory.json": "cannot write a_directory.json: it is a folder",
        "a_file/x.md": "cannot write a_file/x.md: a_file is a file, not a folder",
    }
    for target, message in cases.items():
        argv = ["run", suite] if command == "run" else ["report", str(runs / "latest")]
        assert run_cli([*argv, "-o", target]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err
        assert message in err
    # Refused before anything ran: no model was called, no run directory was made.
    assert (set(runs.iterdir()) if runs.is_dir() else set()) == before


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
@pytest.mark.parametrize("command", ["run", "report"])
def test_an_output_that_fails_at_write_time_keeps_the_results(
    command: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # /proc takes no new file, which the check before the run now finds; switched off here,
    # the write fails after the run, as a disk that fills up meanwhile would.
    monkeypatch.setattr("skilleval.report.target.probe_folder", lambda path, folder: None)
    suite = str(ROOT / "examples" / "quickstart" / "suite.yaml")
    latest = Path(os.environ["SKILLEVAL_HOME"]) / "runs" / "latest"
    good = tmp_path / "good.md"
    if command == "run":
        code = run_cli(["run", suite, "-q", "-o", "/proc/x.json", "-o", str(good)])
    else:
        assert run_cli(["run", suite, "-q"]) == 0
        capsys.readouterr()
        code = run_cli(["report", str(latest), "-o", "/proc/x.json", "-o", str(good)])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    assert err.count("error: cannot write /proc/x.json") == 1
    assert good.is_file()
    assert (latest / "results.json").is_file()
    assert load_run(latest).status == "complete"


def test_a_results_json_that_cannot_be_written_is_one_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import errno

    from skilleval.results import write

    def full(path: Path, text: str) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def full_at_results(src: Any, dst: Any) -> None:
        if str(dst).endswith("results.json"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_replace(src, dst)

    real_replace = os.replace
    monkeypatch.setattr(write, "write_atomic", full)
    monkeypatch.setattr("skilleval.runner.rundir.os.replace", full_at_results)
    with contextlib.chdir(ROOT):
        assert run_cli(["run", "examples/quickstart/suite.yaml", "-q"]) == 3
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "no space left on the device" in err
    assert "results.jsonl are kept" in err


def test_the_results_layer_imports_nothing_above_it() -> None:
    import ast

    above = (
        "skilleval.runner",
        "skilleval.report",
        "skilleval.cli",
        "skilleval.watch",
        "skilleval.lint",
    )
    for path in sorted((ROOT / "skilleval" / "results").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for name in names:
                assert not name.startswith(above), f"{path.name} imports {name}"
