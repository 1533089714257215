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

import io
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from skilleval.cases.collect import Case
from skilleval.cases.overlap import Flag
from skilleval.cases.paths import Rebase
from skilleval.errors import (
    UsageError,
)
from skilleval.suite.checked_write import save_if_it_loads
from skilleval.suite.yamldoc import Document

SCHEMA_COMMENT = re.compile(r"(?m)^(#\s*yaml-language-server:\s*\$schema=)(\S+)")
"""The editor's schema comment, whose relative path moves with the file too."""

DROPPED = ("tests", "scenarios", "outputPath")
"""Top-level keys of the source suite that the written suite does not keep."""


def case_comment(case: Case, flags: Sequence[Flag]) -> str:
    """The lines written above a case."""
    lines = [f"From {case.origin} ({case.source_at}): {case.why}."]
    if case.also:
        shown = ", ".join(
            f"{o.arm}/{o.trial}" if o.test == case.origin.test else str(o) for o in case.also[:8]
        )
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
        body = Rebase(case.base_dir, target_dir).walk(_plain_copy(case.test), ("tests", i))
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
    suite: Document,
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
    if suite.file is None:
        raise UsageError(f"{suite.display} is not a file; -o cannot copy its settings")
    suite_file = suite.file
    rebase = Rebase(suite_file.parent, target.parent)
    text = SCHEMA_COMMENT.sub(
        lambda m: m.group(1) + (m.group(2) if ":" in m.group(2) else rebase.path(m.group(2))),
        without_tests(suite),
    )
    try:
        data = yaml.load(text)
    except YAMLError as exc:
        raise UsageError(f"cannot read {suite.display} to copy its settings: {exc}") from None
    if not isinstance(data, CommentedMap):
        raise UsageError(f"{suite.display} is not a mapping of settings; -o cannot copy them")
    dropped = [k for k in DROPPED[1:] if k in data]
    for key in DROPPED:
        if key in data:
            del data[key]
    rebase.walk(data)
    lines = [header]
    if dropped:
        lines.append("Left out of the source suite: " + ", ".join(f"`{k}:`" for k in dropped) + ".")
    data["tests"] = case_list(cases, flags, target.parent)
    data.yaml_set_comment_before_after_key("tests", before="\n".join(lines))
    return _dump(data)


def without_tests(doc: Document) -> str:
    """The suite's text with its block-style ``tests:`` cut out, so that the slow round-trip
    reader reads only the settings (a suite of thousands of tests would take seconds). The
    text is kept whole when the cut is not plainly safe: a flow-style or JSON suite, or an
    anchor inside the tests that a setting uses."""
    text = doc.text
    at = doc.keys.get(("tests",))
    if not isinstance(doc.data, dict) or at is None or at.col != 1:
        return text
    if any(a[:1] != ("tests",) and b[:1] == ("tests",) for a, b in doc.aliases.items()):
        return text
    later = [loc.line for key, loc in doc.keys.items() if len(key) == 1 and loc.line > at.line]
    if any(loc.col != 1 for key, loc in doc.keys.items() if len(key) == 1):
        return text
    lines = text.splitlines(keepends=True)
    end = min(later, default=len(lines) + 1) - 1
    while end > at.line and lines[end - 1].startswith("#"):
        end -= 1  # the next key's own comment stays with it
    return "".join(lines[: at.line - 1] + lines[end:])


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

    Raises:
        SuiteError: What was written does not load (nothing is left behind); each problem is
            reported at ``target``'s name.
        UsageError: The folder cannot be written.
    """
    return len(save_if_it_loads(text, target).suite.tests)
