"""The cases as YAML: a ``tests:`` list to paste, or a complete suite that runs on its own.

Both are written with ruamel's round-trip writer, as ``skilleval import`` writes: each case
has a comment naming the record it came from, what went wrong and every overlap flag. The
complete suite is the source suite's own YAML, loaded round-trip so that its comments stay,
with its tests replaced by the cases: every setting (model, skill, prompts, defaultTest,
judge, …) is kept, and each relative path is rewritten for the folder the new file is in.
``scenarios:`` (they make tests) and ``outputPath:`` (running the cases would overwrite the
suite's own outputs) are left out, and the header says so.
"""

from __future__ import annotations

import glob
import io
import os
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from skilleval.cases.collect import Case
from skilleval.cases.overlap import Flag
from skilleval.errors import (
    Diagnostic,
    DiagnosticsError,
    Location,
    SuiteError,
    UsageError,
)
from skilleval.suite.load import Overrides, load_suite
from skilleval.userfile import display_path
from skilleval.util.fileref import PREFIX, is_ref, parse

DROPPED = ("tests", "scenarios", "outputPath")
"""Top-level keys of the source suite that the written suite does not keep."""

PATH_KEYS = frozenset(
    {"skill", "skills", "plugins", "path", "src", "prompts", "model", "judge", "models", "id"}
)
"""Keys whose plain string values may be paths (rewritten only when the path exists)."""


class Rebase:
    """Relative paths written from folder ``old``, rewritten to be read from folder ``new``."""

    def __init__(self, old: Path, new: Path) -> None:
        self.old, self.new = old.resolve(), new.resolve()
        self.same = self.old == self.new

    def path(self, written: str) -> str:
        """``written`` for the new folder: relative, or absolute when the two folders share
        nothing but the root (a path climbing to ``/`` and down again says nothing)."""
        if self.same or not written or Path(written).is_absolute():
            return written
        if Path(os.path.commonpath([self.old, self.new])) == Path(self.old.anchor):
            return (self.old / written).as_posix()
        return Path(os.path.relpath(self.old / written, self.new)).as_posix()

    def ref(self, written: str) -> str:
        """A ``file://`` reference, its ``:function`` kept."""
        found = parse(written)
        moved = self.path(found.path)
        return f"{PREFIX}{moved}" + (f":{found.function}" if found.function else "")

    def maybe(self, written: str) -> str:
        """A plain string that is a path when a file or folder is there (``llama:`` kept)."""
        if self.same or "\n" in written or "://" in written or len(written) > 1024:
            return written
        head, sep, rest = written.partition(":")
        prefix, target = (f"{head}:", rest) if sep and head == "llama" else ("", written)
        if not target or Path(target).is_absolute():
            return written
        exists = (self.old / target).exists()
        if not exists and any(c in target for c in "*?["):
            exists = bool(glob.glob(glob.escape(str(self.old)) + "/" + target, recursive=True))
        return prefix + self.path(target) if exists else written

    def walk(self, node: Any, key: str | None = None) -> Any:
        """``node`` with its paths rewritten, in place for ruamel's containers."""
        if isinstance(node, dict):
            for k in list(node):
                node[k] = self.walk(node[k], str(k))
            return node
        if isinstance(node, list):
            for i, value in enumerate(node):
                node[i] = self.walk(value, key)
            return node
        if not isinstance(node, str):
            return node
        if is_ref(node):
            moved = self.ref(node)
        elif key in PATH_KEYS:
            moved = self.maybe(node)
        else:
            return node
        if moved == node:
            return node
        # A quoted scalar keeps its quotes: ruamel's string classes take the new text.
        return moved if type(node) is str else type(node)(moved)


def case_comment(case: Case, flags: Sequence[Flag]) -> str:
    """The lines written above a case."""
    lines = [f"From {case.origin} ({case.source_at}): {case.why}."]
    if case.also:
        shown = ", ".join(f"{o.arm}/{o.trial}" for o in case.also[:8])
        more = f" and {len(case.also) - 8} more" if len(case.also) > 8 else ""
        lines.append(f"Also in {shown}{more}.")
    lines += [f"Check: {f.message}." for f in flags]
    return "\n".join(lines)


def _node(value: Any) -> Any:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq  # lazy: start-up time
    from ruamel.yaml.scalarstring import LiteralScalarString  # lazy: start-up time

    if isinstance(value, Mapping):
        out = CommentedMap()
        for k, v in value.items():
            out[k] = _node(v)
        return out
    if isinstance(value, list):
        seq = CommentedSeq(_node(v) for v in value)
        if _flat(value):
            seq.fa.set_flow_style()
        return seq
    if isinstance(value, str) and "\n" in value.rstrip("\n") and _literal_safe(value):
        return LiteralScalarString(value)
    return value


def _flat(value: list[Any]) -> bool:
    """A short list of one-line scalars, written on one line as ``import`` writes it."""
    return (
        0 < len(value) <= 6
        and all(isinstance(v, (str, int, float)) for v in value)
        and all("\n" not in str(v) for v in value)
    )


def _literal_safe(text: str) -> bool:
    """A block scalar keeps the text exactly only without trailing spaces or tabs on lines."""
    return all(line == line.rstrip(" \t") for line in text.split("\n")) and "\r" not in text


def case_list(cases: Sequence[Case], flags: Mapping[str, Sequence[Flag]], target_dir: Path) -> Any:
    """The cases as a commented YAML list, paths rewritten for ``target_dir``."""
    from ruamel.yaml.comments import CommentedSeq  # lazy: start-up time

    seq = CommentedSeq()
    for i, case in enumerate(cases):
        body = Rebase(case.base_dir, target_dir).walk(_plain_copy(case.test))
        seq.append(_node(body))
        seq.yaml_set_comment_before_after_key(
            i, before=case_comment(case, flags.get(case.id, ())), indent=2
        )
    return seq


def cases_text(
    cases: Sequence[Case], flags: Mapping[str, Sequence[Flag]], target_dir: Path, header: str
) -> str:
    """A ``tests:`` list to paste into the suite (paths as the suite's folder reads them)."""
    from ruamel.yaml.comments import CommentedMap  # lazy: start-up time

    data = CommentedMap()
    data["tests"] = case_list(cases, flags, target_dir)
    data.yaml_set_start_comment(header)
    return _dump(data)


def suite_text(
    suite_file: Path,
    cases: Sequence[Case],
    flags: Mapping[str, Sequence[Flag]],
    target: Path,
    header: str,
) -> str:
    """The source suite's settings and only ``cases``, to be saved at ``target``.

    Raises:
        UsageError: The suite file cannot be read round-trip, or is not a mapping.
    """
    from ruamel.yaml import YAML  # lazy: start-up time
    from ruamel.yaml.comments import CommentedMap  # lazy: start-up time
    from ruamel.yaml.error import YAMLError  # lazy: start-up time

    yaml = YAML(typ="rt")
    yaml.width = 4096
    yaml.preserve_quotes = True
    try:
        data = yaml.load(suite_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, YAMLError) as exc:
        raise UsageError(f"cannot read {suite_file} to copy its settings: {exc}") from None
    if not isinstance(data, CommentedMap):
        raise UsageError(f"{suite_file} is not a mapping of settings; -o cannot copy them")
    dropped = [k for k in DROPPED[1:] if k in data]
    for key in DROPPED:
        if key in data:
            del data[key]
    Rebase(suite_file.parent, target.parent).walk(data)
    lines = [header]
    if dropped:
        lines.append("Left out of the source suite: " + ", ".join(f"`{k}:`" for k in dropped) + ".")
    data["tests"] = case_list(cases, flags, target.parent)
    data.yaml_set_comment_before_after_key("tests", before="\n".join(lines))
    return _dump(data)


def _dump(data: Any) -> str:
    from ruamel.yaml import YAML  # lazy: start-up time

    yaml = YAML(typ="rt")
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    buffer = io.StringIO()
    yaml.dump(data, buffer)
    return buffer.getvalue()


def _plain_copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_copy(v) for v in value]
    return value


def write_checked(text: str, target: Path) -> int:
    """Save ``text`` at ``target`` once it loads as a suite there; returns its test count.

    The text is written beside ``target`` under a temporary name (so that its relative paths
    mean what they will mean), loaded and validated, and only then moved into place.

    Raises:
        SuiteError: What was written does not load (nothing is left behind); each problem is
            reported at ``target``'s name.
        UsageError: The folder cannot be written.
    """
    partial = target.with_name(f".{target.stem}.{secrets.token_hex(4)}.partial{target.suffix}")
    try:
        partial.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None
    try:
        try:
            suite, _ = load_suite(partial, Overrides())
        except DiagnosticsError as exc:
            shown, real = display_path(partial), display_path(target)
            raise SuiteError(
                [
                    Diagnostic(
                        Location(real, d.where.line, d.where.col)
                        if d.where.path == shown
                        else d.where,
                        d.message,
                        d.severity,
                        d.code,
                    )
                    for d in exc.diagnostics
                ]
            ) from None
        try:
            os.replace(partial, target)
        except OSError as exc:
            raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None
    finally:
        partial.unlink(missing_ok=True)
    return len(suite.tests)
