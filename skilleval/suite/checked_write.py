"""Save a suite's text only once it loads: the writers of ``skilleval import``.

The text is written beside its target under a temporary name, so that its relative paths
resolve as they will, loaded and validated there, and moved into place only when it loads.
A suite that does not load leaves nothing behind; its diagnostics name the target.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from skilleval.errors import Diagnostic, DiagnosticsError, Location, SuiteError, UsageError
from skilleval.suite.load import Overrides, load_suite
from skilleval.suite.model import Suite
from skilleval.userfile import display_path


@dataclass(frozen=True)
class Saved:
    """A suite that loaded and was saved: the suite, and its notes naming the target."""

    suite: Suite
    notes: tuple[str, ...]
    display: str


def save_if_it_loads(text: str, target: Path, overrides: Overrides | None = None) -> Saved:
    """Write ``text`` at ``target`` once it loads as a suite there.

    Raises:
        SuiteError: The text does not load as a suite; nothing is written. Each problem in
            the text itself is reported at ``target``'s name.
        UsageError: The folder cannot be written.
    """
    if not target.parent.is_dir():
        why = "is a file" if target.parent.exists() else "does not exist (create it first)"
        raise UsageError(f"cannot write {target}: the folder {target.parent} {why}")
    partial = target.with_name(f".{target.stem}.{secrets.token_hex(4)}.partial{target.suffix}")
    try:
        partial.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None
    shown, real = display_path(partial), display_path(target)
    try:
        try:
            suite, _ = load_suite(partial, overrides or Overrides())
        except DiagnosticsError as exc:
            raise SuiteError(
                [
                    Diagnostic(
                        Location(real, d.where.line, d.where.col)
                        if d.where.path == shown
                        else d.where,
                        d.message.replace(shown, real),
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
    notes = tuple(note.replace(shown, real) for note in suite.notes)
    return Saved(suite, notes, suite.display.replace(shown, real))
