"""``file://`` references: values, prompts and test files, resolved relative to their file."""

from __future__ import annotations

import csv
import glob
import io
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skilleval.errors import Diagnostic, Location, SuiteError, missing_file
from skilleval.promptfoo.rendering import js_json
from skilleval.suite.yamlio import Document, load_jsonl, load_yaml
from skilleval.userfile import MAX_FILE_BYTES, check_path, display_path, exists, read_text
from skilleval.util import fileref
from skilleval.util.fileref import is_ref
from skilleval.util.frozen import frozen
from skilleval.util.walk import GlobTooLarge, bounded_glob

TypeCheck = Callable[[str], bool]
DATA_SUFFIXES = {".json", ".yaml", ".yml"}
CODE_SUFFIXES = {".py"}


@dataclass
class Reader:
    """Resolves references and remembers every file read (watch mode needs the list)."""

    files: set[Path] = field(default_factory=set)

    def paths(self, ref: str, base: Path, where: Location) -> list[Path]:
        """The files a reference names; a glob may name several, and must name one at least."""
        raw = fileref.parse(ref).path
        target = fileref.resolve(raw, base)
        if glob.has_magic(raw):
            try:
                found = sorted(Path(p) for p in bounded_glob(str(target)))
            except GlobTooLarge as exc:
                raise SuiteError([Diagnostic(where, f"{ref} is too wide a glob: {exc}")]) from None
            if not found:
                raise SuiteError([missing_file(where, f"no file matches {ref}", str(target))])
            self.files.update(p.resolve() for p in found)
            return found
        if not exists(target, where):
            raise SuiteError(
                [
                    missing_file(
                        where,
                        f"file not found: {ref} (looked for {display_path(target)})",
                        str(target),
                    )
                ]
            )
        self.files.add(target.resolve())
        return [target]

    def value(self, ref: str, base: Path, where: Location) -> Any:
        """The content of a referenced value: parsed data for JSON/YAML, text otherwise."""
        found = self.paths(ref, base, where)
        raw = fileref.parse(ref).path
        if raw.endswith(".py"):
            for path in found:
                check_path(path, where)  # imported later: a FIFO or a device would block
            return ref
        contents = [self._content(p, where) for p in found]
        return contents if glob.has_magic(raw) else contents[0]

    def promptfoo_value(self, ref: str, base: Path, where: Location) -> Any:
        """A var's ``file://`` as promptfoo reads it into a prompt: text, never data.

        A ``.json`` file is its own text, a ``.yaml`` file the JSON of what it holds, any other
        file its text; each trimmed of surrounding whitespace. Code (``.py``) is left as the
        reference, as :meth:`value` leaves it.
        """
        raw = fileref.parse(ref).path
        if raw.endswith(".py"):
            return self.value(ref, base, where)
        found = self.paths(ref, base, where)
        contents = []
        for path in found:
            if path.suffix.lower() in {".yaml", ".yml"}:
                contents.append(js_json(load_yaml(path, where=where).data))
            else:
                contents.append(read_text(path, where=where).strip())
        return contents if glob.has_magic(raw) else contents[0]

    def _content(self, path: Path, where: Location) -> Any:
        if path.suffix.lower() in DATA_SUFFIXES:
            return load_yaml(path, where=where).data
        return read_text(path, where=where)

    def resolve(self, value: Any, base: Path, doc: Document, at: list[str | int]) -> Any:
        """Replace every ``file://`` string inside ``value`` by the file's content."""
        if is_ref(value):
            return self.value(value, base, doc.at(at))
        if isinstance(value, list):
            return [self.resolve(v, base, doc, [*at, i]) for i, v in enumerate(value)]
        if isinstance(value, dict):
            return {k: self.resolve(v, base, doc, [*at, k]) for k, v in value.items()}
        return value


@frozen
class RawTest:
    """One test as written, with the document that locates its parts."""

    doc: Document
    base_dir: Path


def tests_from_file(path: Path, where: Location, is_type: TypeCheck) -> Iterator[RawTest]:
    """Tests stored in a YAML/JSON list, a JSONL file, or a CSV file."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        yield from _csv_tests(path, where, is_type)
        return
    if suffix == ".jsonl":
        for doc in load_jsonl(path, where=where):
            yield RawTest(doc, path.parent)
        return
    if suffix not in DATA_SUFFIXES:
        raise SuiteError(
            [
                Diagnostic(
                    where, f"tests file must be .yaml, .yml, .json, .jsonl or .csv: {path.name}"
                )
            ]
        )
    doc = load_yaml(path, where=where, strict=False)
    problems = doc.problems
    data = doc.data
    if isinstance(data, dict) and "tests" in data:
        doc, data = doc.sub(["tests"]), data["tests"]
    if not isinstance(data, list):
        raise SuiteError(
            [*problems, Diagnostic(doc.at(), "a tests file must hold a list of tests")]
        )
    for i in range(len(data)):
        yield RawTest(doc.sub([i]), path.parent)
    if problems:
        # Reported after the tests, so that their own mistakes are found in the same pass.
        raise SuiteError(problems)


def _csv_tests(path: Path, where: Location, is_type: TypeCheck) -> Iterator[RawTest]:
    display = display_path(path)
    text = read_text(path, display, where=where)
    # No cell can be longer than the file, which read_text has already capped; the csv
    # module's own default (131,072 characters) would refuse long prompts.
    csv.field_size_limit(max(csv.field_size_limit(), MAX_FILE_BYTES))
    # newline=None reads CR-only, CRLF and LF line endings alike.
    reader = csv.reader(io.StringIO(text, newline=None))
    try:
        header = next(reader)
    except StopIteration:
        raise SuiteError([Diagnostic(Location(display, 1, 1), "CSV tests file is empty")]) from None
    except csv.Error as exc:
        raise SuiteError([Diagnostic(Location(display, 1, 1), f"invalid CSV: {exc}")]) from None
    header = [h.strip() for h in header]
    problems: list[Diagnostic] = []
    start = reader.line_num + 1
    for row in _rows(reader, display, problems):
        line = start
        start = reader.line_num + 1
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            problems.append(
                Diagnostic(
                    Location(display, line, 1),
                    f"row has {len(row)} cells but the header has {len(header)}",
                )
            )
            continue
        try:
            test = csv_row_to_test(dict(zip(header, row, strict=True)), is_type)
        except ValueError as exc:
            problems.append(Diagnostic(Location(display, line, 1), str(exc)))
            continue
        doc = Document(test, display, path, text, {(): Location(display, line, 1)})
        yield RawTest(doc, path.parent)
    if problems:
        raise SuiteError(problems)


def _rows(reader: Any, display: str, problems: list[Diagnostic]) -> Iterator[list[str]]:
    """The rows of a CSV reader; a malformed row ends the file with a positioned diagnostic."""
    while True:
        try:
            row: list[str] = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            problems.append(
                Diagnostic(Location(display, reader.line_num, 1), f"invalid CSV: {exc}")
            )
            return
        yield row


def csv_row_to_test(row: dict[str, str], is_type: TypeCheck) -> dict[str, Any]:
    """promptfoo's CSV convention: columns are vars; ``__expected*`` hold compact assertions."""
    test: dict[str, Any] = {"vars": {}}
    asserts: list[dict[str, Any]] = []
    configs: dict[int, dict[str, float]] = {}
    metric = None
    for column, cell in row.items():
        if not column.startswith("__"):
            test["vars"][column] = cell
            continue
        if not cell.strip():
            continue
        if column.startswith("__expected"):
            asserts.append(parse_expected(cell.strip(), is_type))
        elif column == "__description":
            test["description"] = cell
        elif column == "__id":
            test["id"] = cell.strip()
        elif column == "__should_trigger":
            test["should_trigger"] = _csv_bool(cell)
        elif column == "__threshold":
            test["threshold"] = _csv_number(column, cell)
        elif column == "__metric":
            metric = cell.strip()
        elif column in ("__prefix", "__suffix"):
            test.setdefault("options", {})[column[2:]] = cell
        elif column.startswith("__metadata:"):
            test.setdefault("metadata", {})[column.split(":", 1)[1]] = cell
        elif column.startswith("__config:"):
            index, key = _config_column(column)
            configs.setdefault(index, {})[key] = _csv_number(column, cell)
        else:
            raise ValueError(f"unknown special column '{column}'")
    for index, config in configs.items():
        # As promptfoo: the n-th assertion of the row, and the row's metadata, get the value.
        if index < len(asserts):
            asserts[index] = {**asserts[index], **config}
        test.setdefault("metadata", {}).update(config)
    if asserts:
        # promptfoo's __metric names every assertion of its row.
        test["assert"] = [{**a, "metric": metric} if metric else a for a in asserts]
    return test


_CONFIG_COLUMN = re.compile(r"^__config:__expected(\d*):(\w+)$")


def _config_column(column: str) -> tuple[int, str]:
    """promptfoo's ``__config:__expected[N]:threshold``: the assertion's index in the row
    (``__expected`` and ``__expected1`` are both the first) and the setting."""
    found = _CONFIG_COLUMN.match(column.strip())
    if found is None or (found[1] and int(found[1]) < 1):
        raise ValueError(
            f"'{column}' is not `__config:__expected:threshold` or `__config:__expected<N>:threshold`"
        )
    if found[2] != "threshold":
        raise ValueError(f"'{column}': the one setting a __config column takes is threshold")
    return (int(found[1]) - 1 if found[1] else 0), found[2]


def _csv_number(column: str, cell: str) -> float:
    try:
        return float(cell)
    except ValueError:
        raise ValueError(f"{column} must be a number, not {cell.strip()!r}") from None


def _csv_bool(cell: str) -> bool:
    text = cell.strip().lower()
    if text in ("true", "yes", "1", "y"):
        return True
    if text in ("false", "no", "0", "n"):
        return False
    raise ValueError(f"__should_trigger must be true or false, not {cell!r}")


#: Types whose compact value is a comma-separated list, as promptfoo splits it.
_LISTED = frozenset({"contains-all", "contains-any", "icontains-all", "icontains-any"})

#: The threshold promptfoo gives a compact ``__expected`` of these types that names none.
_CSV_THRESHOLDS = {
    **dict.fromkeys(
        (
            "answer-relevance",
            "classifier",
            "context-faithfulness",
            "context-recall",
            "context-relevance",
            "cost",
            "latency",
            "levenshtein",
            "perplexity",
            "perplexity-score",
            "rouge-n",
        ),
        0.75,
    ),
    "similar": 0.8,
}

#: Compact ``__expected`` prefixes that name a type differently from its registry name.
_ALIASES = {"grade": "llm-rubric", "fn": "javascript"}


def parse_expected(cell: str, is_type: TypeCheck) -> dict[str, Any]:
    """``contains:x``, ``not-regex:y``, ``levenshtein(5):z``, ``is-json``; anything else is ``equals``."""
    if cell.startswith("file://") and (cell.endswith(".py") or ".py:" in cell):
        return {"type": "python", "value": cell}
    if cell.startswith("file://") and (cell.endswith(".js") or ".js:" in cell):
        return {"type": "javascript", "value": cell}
    head, sep, rest = cell.partition(":")
    name, threshold = head.strip(), None
    if name.endswith(")") and "(" in name:
        name, _, arg = name[:-1].partition("(")
        try:
            threshold = float(arg)
        except ValueError:
            return {"type": "equals", "value": cell}
    base = name.removeprefix("not-")
    base = _ALIASES.get(base, base)
    if not is_type(base):
        return {"type": "equals", "value": cell}
    if not sep:
        return {"type": name}
    name = ("not-" if name.startswith("not-") else "") + base
    out: dict[str, Any] = {"type": name, "value": rest.strip() if base != "python" else rest}
    if base in _LISTED:
        out["value"] = [part.strip() for part in rest.split(",")]
    if threshold is None and base in _CSV_THRESHOLDS:
        threshold = _CSV_THRESHOLDS[base]
    if threshold is not None:
        out["threshold"] = threshold
    return out
