"""Errors that users can act on, and where in their files they happened.

Exception tree::

    SkillevalError                 anything a user can fix; printed without a traceback
    ├── SuiteError                 the suite, a test file or a skill is invalid (exit 4)
    ├── PluginError                a plugin folder or entry point is broken (exit 4)
    ├── ProviderError              a model could not be loaded or called (exit 3)
    │   ├── TruncatedError         the reply hit max_tokens before it finished
    │   ├── InvalidReplyError      a constrained reply did not parse or match its schema
    │   │   └── InvalidReply       a judge reply that is not JSON or breaks its schema
    │   ├── JudgeError             the judge gave no usable reply, even after a repair retry
    │   └── CannotEmbed            the model has no way to turn texts into vectors
    ├── InstallationError          the installed llama.cpp cannot run on this machine (exit 6)
    ├── StorageError               a run's file could not be written (disk full …) (exit 3)
    │   └── CacheError             the response cache is damaged or cannot be written
    ├── UsageError                 the command line asks for something impossible (exit 2)
    │   └── NoTestsSelected        the test filters matched no test (exit 5)
    ├── InvalidInputError          a file given to read is damaged or of the wrong kind (exit 4)
    ├── CannotEvaluate             raised by a check: this output cannot be graded (``error``)
    ├── PromptProblem              a ``rubricPrompt`` that cannot be used (``error`` verdict)
    ├── ImpossibleReply            a judge reply that matches its schema but cannot be a grade
    ├── DecodeError                data that does not have the shape of the results model
    ├── ExprError                  an ``expr`` expression (assertion or transform) is wrong
    │   ├── ExprSyntaxError        it does not compile; carries a line and column inside it
    │   └── ExprRuntimeError       it failed or hit a limit while it ran (an ``error`` verdict)
    ├── JavaScriptError            a user's JavaScript did not compile, threw or hit a limit
    ├── RegexError                 a user's regular expression does not compile
    ├── RegexTimeoutError          a user's regular expression ran past its time limit
    ├── PathEscape                 a workspace path that leads outside the workspace
    └── TemplateProblem            a ``{{ }}`` template does not compile, or fails or hits a
                                   limit while it renders (positioned at load, an ``error``
                                   verdict at run time)

Anything else that escapes is a bug in skilleval and keeps its traceback.

Diagnostics carry a :attr:`Diagnostic.code` that code can test (the ``*_FILE`` constants
below for the loader's file problems, lint's check ids for lint findings); nothing decides
what an error means from its message text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

Severity = Literal["error", "warning", "note"]

MISSING_FILE: Final = "missing-file"
"""Code of a diagnostic about a file (or glob) a suite names that is not there."""
UNREADABLE_FILE: Final = "unreadable-file"
"""Code of a diagnostic about a file a suite names that exists but cannot be read as one
(a folder, a FIFO, no permission, a name too long for the system)."""
FILE_CODES: Final = frozenset({MISSING_FILE, UNREADABLE_FILE})


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
    """A stable id for the kind of problem: a lint check's id, or one of :data:`FILE_CODES`."""
    target: str | None = None
    """For a file problem, the path (or glob) that was looked for, as the suite resolved it."""

    def __str__(self) -> str:
        # Lint's check ids are shown, since users write them in `lint.ignore`; the loader's
        # codes are for programs and appear in the JSON form only.
        code = f" [{self.code}]" if self.code and self.code not in FILE_CODES else ""
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
            **({"target": self.target} if self.target is not None else {}),
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


class ModelDownloadError(ProviderError):
    """A model named on a hub (``hf:…``) could not be fetched: no such repository or file, no
    network and no cached copy, or a failed download. A failure of the run, not of the suite."""


class ServerUnreachable(ProviderError):
    """A model server on this machine (``ollama:``, ``lmstudio:``, a loopback ``base_url``)
    accepts no connection: found before the first test, a failure of the run, said once."""


class TruncatedError(ProviderError):
    """The reply stopped at the token limit, so it is incomplete."""

    def __init__(self, message: str, text: str = "", max_tokens: int = 0) -> None:
        super().__init__(message)
        self.text = text
        self.max_tokens = max_tokens


class InvalidReplyError(ProviderError):
    """A reply constrained to a JSON Schema or a set of choices came back outside it."""


class CannotEmbed(ProviderError):
    """The model cannot turn texts into vectors (it has no ``embed``), so embedding types
    (``similar``, ``answer-relevance``) cannot be graded with it: an ``error`` verdict."""


class InstallationError(SkillevalError):
    """What is installed cannot run on this machine: a llama.cpp build that crashed on this CPU
    in its canary (``engine/llama_canary.py``). Not a mistake in the suite, and not a failure
    of one call: nothing can run until the library is rebuilt or replaced."""


class StorageError(SkillevalError):
    """A file of the run could not be written or read: the disk is full, a folder is read-only."""


class CacheError(StorageError):
    """The response cache cannot be used.

    Attributes:
        damaged: The file is not a sound SQLite database (delete it); otherwise it only cannot
            be written (read-only, disk full), and a run can go on without it.
    """

    def __init__(self, message: str, *, damaged: bool) -> None:
        super().__init__(message)
        self.damaged = damaged


class UsageError(SkillevalError):
    """The command line asks for something that cannot be done."""


class InvalidInputError(SkillevalError):
    """A file a command was given to read is there, but damaged or not what it reads.

    A results file that is not valid JSON or departs from the results format is one. A path
    that does not exist or cannot be read is a :class:`UsageError` instead.
    """


class NoTestsSelected(UsageError):
    """The ``--filter``/``--test`` selection matched no test; the message lists the filters."""


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


class JavaScriptError(SkillevalError):
    """A user's JavaScript (a formula over metrics …) did not compile, threw or hit a limit."""


class RegexError(SkillevalError):
    """A regular expression from a suite does not compile; the message says why."""


class RegexTimeoutError(SkillevalError):
    """A regular expression from a suite took longer than its time limit to search a text."""


class PathEscape(SkillevalError):
    """A workspace path that cannot be used: it leads outside the workspace, or nowhere."""


class JudgeError(ProviderError):
    """The judge gave no usable reply.

    Attributes:
        kind: ``truncated`` (the reply hit its token budget), ``invalid`` (it did not parse
            or match the schema) or ``provider`` (the model could not be called at all).
        attempts: How many calls were made (2 after a repair retry).
        max_tokens: The budget of the last call.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: Literal["truncated", "invalid", "provider"],
        attempts: int,
        max_tokens: int,
    ) -> None:
        super().__init__(message)
        self.kind: Literal["truncated", "invalid", "provider"] = kind
        self.attempts = attempts
        self.max_tokens = max_tokens


class InvalidReply(InvalidReplyError):
    """A judge reply that does not parse, repeats a key, or does not match its schema."""

    def __init__(self, problem: str, text: str) -> None:
        super().__init__(f"judge reply is invalid: {problem}")
        self.problem = problem
        self.text = text


# The three below also derive from ValueError, which is what callers caught before they
# joined the tree; a plugin that catches ValueError keeps working.


class ImpossibleReply(SkillevalError, ValueError):
    """A judge reply that parses, and may match its schema, but cannot be a grade."""


class PromptProblem(SkillevalError, ValueError):
    """A ``rubricPrompt`` that cannot be used; the message says why."""


class DecodeError(SkillevalError, ValueError):
    """The data does not have the shape of the results model; ``path`` says where."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or '(root)'}: {message}")
        self.path = path


class CannotEvaluate(SkillevalError):
    """Raised by an assertion that cannot grade this output; it becomes an ``error`` verdict.

    An ``error`` is neither a pass nor a fail: the output was not judged at all (a file the
    check needs is missing, a service it calls is down). Returning
    :meth:`Verdict.errored(why) <skilleval.api.Verdict.errored>` means the same.
    """


class TemplateProblem(SkillevalError):
    """A template that does not compile or render; ``line`` is 1-based within the template."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message, line)
        self.message = message
        self.line = line

    def __str__(self) -> str:
        return self.message


def missing_file(where: Location, message: str, target: str) -> Diagnostic:
    """A diagnostic about a file a suite names that is not there (code :data:`MISSING_FILE`)."""
    return Diagnostic(where, message, code=MISSING_FILE, target=target)


def unreadable_file(where: Location, message: str, target: str) -> Diagnostic:
    """A diagnostic about a named file that cannot be read (code :data:`UNREADABLE_FILE`)."""
    return Diagnostic(where, message, code=UNREADABLE_FILE, target=target)


def suite_error(where: Location, message: str) -> SuiteError:
    """Build a single-diagnostic :class:`SuiteError`."""
    return SuiteError([Diagnostic(where, message)])
