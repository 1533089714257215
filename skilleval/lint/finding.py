"""One lint finding: a check, a position, a message, and whether the suite silenced it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from skilleval.errors import Diagnostic, Location
from skilleval.lint.checks import LintCheck
from skilleval.util.frozen import frozen


@frozen
class Finding:
    """What a check found, at ``path:line:col``."""

    check: LintCheck
    where: Location
    message: str
    silenced: str | None = None
    """The reason from ``lint.ignore`` when the suite silenced this check."""

    @property
    def severity(self) -> str:
        """``error`` or ``warning``; ``note`` once silenced, since it no longer counts."""
        return "note" if self.silenced is not None else self.check.severity

    def silence(self, reason: str) -> Finding:
        return replace(self, silenced=reason)

    def diagnostic(self) -> Diagnostic:
        """As a :class:`~skilleval.errors.Diagnostic` whose ``code`` is the check id."""
        message = self.message
        if self.silenced is not None:
            message = f"{message} (silenced: {self.silenced})"
        severity = "note" if self.silenced is not None else self.check.severity
        return Diagnostic(self.where, message, severity, self.check.id)

    def render(self) -> str:
        """``path:line:col: severity: message [SE101 too-few-tests]``."""
        diag = self.diagnostic()
        return f"{diag.where}: {diag.severity}: {diag.message} [{self.check.id} {self.check.name}]"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.where.path,
            "line": self.where.line,
            "col": self.where.col,
            "severity": self.severity,
            "code": self.check.id,
            "name": self.check.name,
            "message": self.message,
            "silenced": self.silenced,
        }

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.where.path, self.where.line, self.where.col, self.check.id, self.message)
