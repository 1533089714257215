"""Write a run's results in the format a file's extension asks for (``-o/--output``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from skilleval.errors import UsageError
from skilleval.report.csvout import render_csv
from skilleval.report.junit import render_junit
from skilleval.report.markdown import render_markdown
from skilleval.report.target import check_target, write_target
from skilleval.results.model import Run
from skilleval.results.write import dumps_records, dumps_run

SUPPORTED: tuple[str, ...] = (".json", ".jsonl", ".html", ".xml", ".md", ".csv")
"""Extensions :func:`write_output` understands, in the order the docs list them."""


def render_json(run: Run) -> str:
    return dumps_run(run)


def render_jsonl(run: Run) -> str:
    return dumps_records(run)


def _html(run: Run) -> str:
    from skilleval.report.html import render_html  # lazy: start-up time (jinja2)

    return render_html(run)


_RENDERERS: Mapping[str, Callable[[Run], str]] = {
    ".json": render_json,
    ".jsonl": render_jsonl,
    ".html": _html,
    ".xml": render_junit,
    ".md": render_markdown,
    ".csv": render_csv,
}


def check_output_path(path: Path) -> str:
    """The format for ``path``, or a UsageError naming the supported extensions.

    Call it for every ``-o`` before the run starts, so a typo costs nothing. A path that can
    never be written (a folder, or under a file) is refused here too.
    """
    suffix = path.suffix.lower()
    if suffix not in _RENDERERS:
        shown = f"'{path.suffix}'" if path.suffix else "no extension"
        raise UsageError(
            f"cannot write {path}: {shown} is not a supported output format; "
            f"use one of {', '.join(SUPPORTED)}"
        )
    check_target(path)
    return suffix


def write_output(run: Run, path: Path, jsonl_source: Path | None) -> None:
    """Write ``run`` to ``path`` in the format its extension names.

    Args:
        run: The run's results.
        path: Where to write; parent folders are created. The file is replaced atomically.
        jsonl_source: The run's streamed results.jsonl. For a ``.jsonl`` output it is copied
            byte for byte when given; otherwise the records are written from ``run``.

    Raises:
        UsageError: The extension is not one of :data:`SUPPORTED`, or the file could not be
            written (a SkillevalError; the message names the path and the reason).
    """
    suffix = check_output_path(path)
    if suffix == ".jsonl" and jsonl_source is not None and jsonl_source.is_file():
        try:
            with jsonl_source.open(encoding="utf-8", newline="") as fh:
                text = fh.read()
        except OSError as exc:
            raise UsageError(f"cannot read {jsonl_source}: {exc.strerror or exc}") from None
        write_target(path, text)
        return
    write_target(path, _RENDERERS[suffix](run))


__all__ = ["SUPPORTED", "check_output_path", "render_json", "render_jsonl", "write_output"]
