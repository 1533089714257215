"""Write a run's results in the format a file's extension asks for (``-o/--output``)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from skilleval.errors import UsageError

SUPPORTED: tuple[str, ...] = (".json", ".jsonl", ".html", ".xml", ".md", ".csv")
"""Extensions :func:`write_output` understands, in the order the docs list them."""


def _json(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"


def _jsonl(doc: Mapping[str, Any]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in doc.get("records") or ())


def _html(doc: Mapping[str, Any]) -> str:
    from skilleval.report.html import render_html

    return render_html(doc)


def _xml(doc: Mapping[str, Any]) -> str:
    from skilleval.report.junit import render_junit

    return render_junit(doc)


def _md(doc: Mapping[str, Any]) -> str:
    from skilleval.report.markdown import render_markdown

    return render_markdown(doc)


def _csv(doc: Mapping[str, Any]) -> str:
    from skilleval.report.csvout import render_csv

    return render_csv(doc)


_RENDERERS: Mapping[str, Callable[[Mapping[str, Any]], str]] = {
    ".json": _json,
    ".jsonl": _jsonl,
    ".html": _html,
    ".xml": _xml,
    ".md": _md,
    ".csv": _csv,
}


def check_output_path(path: Path) -> str:
    """The format for ``path``, or a UsageError naming the supported extensions.

    Call it for every ``-o`` before the run starts, so a typo costs nothing.
    """
    suffix = path.suffix.lower()
    if suffix not in _RENDERERS:
        shown = f"'{path.suffix}'" if path.suffix else "no extension"
        raise UsageError(
            f"cannot write {path}: {shown} is not a supported output format; "
            f"use one of {', '.join(SUPPORTED)}"
        )
    return suffix


def write_output(doc: dict[str, Any], path: Path, jsonl_source: Path | None) -> None:
    """Write ``doc`` to ``path`` in the format its extension names.

    Args:
        doc: The results document.
        path: Where to write; parent folders are created. The file is replaced atomically.
        jsonl_source: The run's streamed results.jsonl. For a ``.jsonl`` output it is copied
            byte for byte when given; otherwise the records are written from ``doc``.

    Raises:
        UsageError: The extension is not one of :data:`SUPPORTED` (a SkillevalError).
    """
    suffix = check_output_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    if suffix == ".jsonl" and jsonl_source is not None and jsonl_source.is_file():
        shutil.copyfile(jsonl_source, tmp)
    else:
        with tmp.open("w", encoding="utf-8", newline="") as fh:
            fh.write(_RENDERERS[suffix](doc))
    os.replace(tmp, path)
