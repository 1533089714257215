"""Errors that users can act on, and where in their files they happened.

Exception tree::

    SkillevalError                 anything a user can fix; printed without a traceback
    ├── SuiteError                 the suite, a test file or a skill is invalid (exit 4)
    ├── PluginError                a plugin folder or entry point is broken (exit 4)
    ├── ProviderError              a model could not be loaded or called (exit 3)
    │   ├── TruncatedError         the reply hit max_tokens before it finished
    │   └── InvalidReplyError      a constrained reply did not parse or match its schema
    ├── UsageError                 the command line asks for something impossible (exit 2)
    ├── ExprError                  an ``expr`` expression (assertion or transform) is wrong
    │   ├── ExprSyntaxError        it does not compile; carries a line and column inside it
    │   └── ExprRuntimeError       it failed or hit a limit while it ran (an ``error`` verdict)
    ├── RegexError                 a user's regular expression does not compile
    ├── RegexTimeoutError          a user's regular expression ran past its time limit
    └── TemplateProblem            a ``{{ }}`` template does not compile, or fails or hits a
                                   limit while it renders (positioned at load, an ``error``
                                   verdict at run time)

Anything else that escapes is a bug in skilleval and keeps its traceback.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning", "note"]


@dataclass(frozen=True, slots=True, order=True)
class Location:
    """A 1-based position in a file, printed as ``path:line:col``."""

    path: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line <= 0:
            return self.path
        return f"{self.path}:{self.line}:{self.col}"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem in a user's file."""

    where: Location
    message: str
    severity: Severity = "error"
    code: str | None = None
    """A stable id for the check that found it (lint uses these)."""

    def __str__(self) -> str:
        code = f" [{self.code}]" if self.code else ""
        return f"{self.where}: {self.severity}: {self.message}{code}"

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.where.path, self.where.line, self.where.col, self.message)

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.where.path,
            "line": self.where.line,
            "col": self.where.col,
            "severity": self.severity,
            "message": self.message,
            "code": self.code,
        }


class SkillevalError(Exception):
    """Base class for every error a user can fix."""


class DiagnosticsError(SkillevalError):
    """An error made of one or more positioned diagnostics, shown in file order."""

    def __init__(self, diagnostics: Iterable[Diagnostic]) -> None:
        # The same mistake reached twice (a defaultTest entry, once per test) is shown once.
        unique = {(str(d.where), d.message): d for d in diagnostics}
        self.diagnostics = sorted(unique.values(), key=Diagnostic.sort_key)
        super().__init__("\n".join(str(d) for d in self.diagnostics))


class SuiteError(DiagnosticsError):
    """The suite, one of its files, or its skill is invalid."""


class PluginError(DiagnosticsError):
    """A plugin could not be imported or declares something invalid."""


class ProviderError(SkillevalError):
    """A model could not be loaded or a call to it failed."""


class TruncatedError(ProviderError):
    """The reply stopped at the token limit, so it is incomplete."""

    def __init__(self, message: str, text: str = "", max_tokens: int = 0) -> None:
        super().__init__(message)
        self.text = text
        self.max_tokens = max_tokens


class InvalidReplyError(ProviderError):
    """A reply constrained to a JSON Schema or a set of choices came back outside it."""


class UsageError(SkillevalError):
    """The command line asks for something that cannot be done."""


class ExprError(SkillevalError):
    """Base class for both ``expr`` errors."""


class ExprSyntaxError(ExprError):
    """An expression could not be compiled.

    Attributes:
        message: What is wrong, without the position.
        line: 1-based line within the expression source.
        col: 1-based column within that line.
    """

    def __init__(self, message: str, line: int = 1, col: int = 1) -> None:
        # All three go to args so the error survives pickling between worker processes.
        super().__init__(message, line, col)
        self.message = message
        self.line = line
        self.col = col

    def __str__(self) -> str:
        where = f"col {self.col}" if self.line == 1 else f"line {self.line}, col {self.col}"
        return f"{self.message} at {where}"


class ExprRuntimeError(ExprError):
    """An expression failed while it was evaluated (``"a" - 1``, ``len(3)``, a size limit)."""


class RegexError(SkillevalError):
    """A regular expression from a suite does not compile; the message says why."""


class RegexTimeoutError(SkillevalError):
    """A regular expression from a suite took longer than its time limit to search a text."""


class TemplateProblem(SkillevalError):
    """A template that does not compile or render; ``line`` is 1-based within the template."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message, line)
        self.message = message
        self.line = line

    def __str__(self) -> str:
        return self.message


class PathEscape(SkillevalError):
    """A workspace path that cannot be used: it leads outside the workspace, or nowhere."""


def suite_error(where: Location, message: str) -> SuiteError:
    """Build a single-diagnostic :class:`SuiteError`."""
    return SuiteError([Diagnostic(where, message)])
