"""``skilleval import FORMAT``: another tool's eval file written as an editable suite.

The suite is the one reading the file directly gives (the same tree, :mod:`.tree`), written
as YAML with a header that names the file, the format and variant read, and every place
where the tool's meaning is not kept, and a comment on each test and check naming the line
it came from. Paths are rewritten for the folder the suite is written to.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skilleval.suite.formats import Translated
from skilleval.suite.formats.tree import At
from skilleval.util.frozen import frozen


@frozen
class Imported:
    """The suite's YAML, and what was read to write it."""

    text: str
    detected: tuple[str, ...]
    warnings: tuple[str, ...]


def write_suite(translated: Translated, target: Path, command: str) -> Imported:
    """The YAML of ``translated`` as a suite to be saved at ``target``."""
    from ruamel.yaml import YAML  # lazy: start-up time

    rebase = _Rebase(translated.base, target.resolve().parent)
    data = _convert(translated.tree, (), rebase)
    header = [f"Imported by `{command}`."]
    header += [f"Read {line}" for line in translated.detected]
    warnings = [str(n) for n in translated.notes if n.severity == "warning"]
    header += [f"Not kept as written: {_short(w)}" for w in warnings]
    header.append(
        "Each test and check names the line it came from. Decoding is greedy with seed 0 "
        "and at most 256 new tokens unless `decoding:` says otherwise."
    )
    data.yaml_set_start_comment("\n".join(header))
    yaml = YAML(typ="rt")
    yaml.width = 4096
    buffer = io.StringIO()
    yaml.dump(data, buffer)
    return Imported(buffer.getvalue(), tuple(translated.detected), tuple(warnings))


def _short(warning: str) -> str:
    """A warning with its position shortened to the file's name."""
    where, _, rest = warning.partition(": warning: ")
    path, _, line_col = where.partition(":")
    return f"{Path(path).name}:{line_col}: {rest}" if rest else warning


class _Rebase:
    """Paths relative to the folder read, rewritten relative to the suite's folder."""

    def __init__(self, old: Path, new: Path) -> None:
        self.old, self.new = old.resolve(), new

    def __call__(self, rel: str) -> str:
        return Path(os.path.relpath(self.old / rel, self.new)).as_posix()


def _convert(node: Any, path: tuple[str | int, ...], rebase: _Rebase) -> Any:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq  # lazy: start-up time

    source = ""
    if isinstance(node, At):
        source, node = node.source, node.value
    if isinstance(node, Mapping):
        out = CommentedMap()
        for key, value in node.items():
            out[key] = _convert(value, (*path, key), rebase)
        _paths(out, path, rebase)
        if source and out:
            out.yaml_add_eol_comment(source, next(iter(out)))
        return out
    if isinstance(node, list):
        seq = CommentedSeq(_convert(v, (*path, i), rebase) for i, v in enumerate(node))
        if path[-1:] in (("commands",), ("command",)) or _flat(node):
            seq.fa.set_flow_style()
        return seq
    return node


def _flat(node: list[Any]) -> bool:
    return len(node) <= 6 and all(isinstance(v, (str, int, float, bool)) for v in node)


def _paths(out: Any, path: tuple[str | int, ...], rebase: _Rebase) -> None:
    """Rewrite the path-valued keys of the mapping at ``path``."""
    if path == () and isinstance(out.get("skill"), str):
        out["skill"] = rebase(out["skill"])
    if len(path) >= 2 and path[-2] == "files" and isinstance(out.get("src"), str):
        out["src"] = rebase(out["src"])
