"""The ``skilleval`` command line. Each command parses options and calls one function.

``run_cli(argv)`` runs in-process and returns the exit code (tests call it); ``main()`` is the
console script. This is the one place where errors become exit codes: a user's mistake is
printed as ``file:line:col: error: …`` with no traceback; anything else is a bug and keeps it.
"""

from __future__ import annotations

import contextlib
import faulthandler
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

import click

from skilleval.errors import (
    DiagnosticsError,
    InstallationError,
    InvalidInputError,
    ProviderError,
    SkillevalError,
    UsageError,
)
from skilleval.exitcodes import ExitCode
from skilleval.util.collector import paused
from skilleval.util.scrub import printable
from skilleval.version import __version__

COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("run_cmd", "run"),
    "validate": ("validate_cmd", "validate"),
    "plugins": ("plugins_cmd", "plugins"),
    "judge-check": ("judge_check_cmd", "judge_check"),
    "router-check": ("router_check_cmd", "router_check"),
    "report": ("report_cmd", "report"),
    "compare": ("compare_cmd", "compare"),
    "cache": ("cache_cmd", "cache"),
    "lint": ("lint_cmd", "lint"),
    "overfit": ("overfit_cmd", "overfit"),
    "power": ("power_cmd", "power"),
    "history": ("history_cmd", "history"),
    "watch": ("watch_cmd", "watch"),
    "import": ("import_cmd", "import_group"),
    "doctor": ("doctor_cmd", "doctor"),
    "merge": ("merge_cmd", "merge"),
    "cases": ("cases_cmd", "cases"),
    "improve": ("improve_cmd", "improve_cmd"),
}
"""Each command by name: the module of ``skilleval.cli`` that defines it, and its function."""


class _LazyGroup(click.Group):
    """A group that imports a command's module only when that command is asked for.

    ``--version`` then imports no command at all, and ``run`` only what a run needs.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = self.commands.get(cmd_name)
        if found is None and cmd_name in COMMANDS:
            module, attr = COMMANDS[cmd_name]
            with paused():  # its modules live as long as the process: see util/collector.py
                command: click.Command = getattr(
                    importlib.import_module(f"skilleval.cli.{module}"), attr
                )
            self.add_command(command, cmd_name)
            found = command
        return found


@click.group(
    cls=_LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="skilleval")
def cli() -> None:
    """Test agent skills and prompts with YAML suites, on a local model."""


EXIT_CODES: tuple[tuple[type[BaseException], ExitCode], ...] = (
    (DiagnosticsError, ExitCode.INVALID),
    (InvalidInputError, ExitCode.INVALID),
    (UsageError, ExitCode.USAGE),
    (InstallationError, ExitCode.CONFIG),
    (ProviderError, ExitCode.RUNTIME),
    (SkillevalError, ExitCode.RUNTIME),
    (OSError, ExitCode.RUNTIME),
)
"""The error boundary: the first row whose type matches an exception gives its exit code.

The rule the README's table states: a command line that is wrong, including a path it names
that is missing, unreadable or of the wrong kind, or an output that cannot be written, is 2;
a file that was read and is invalid (a suite, a tests file, a skill, a plugin, a results
file) is 4; a failure while running (a model, a full disk) is 3; an installation that cannot
run on this machine (a llama.cpp build that crashes on this CPU) is 6. Any other exception is a
bug in skilleval and keeps its traceback.
"""


def exit_code_for(exc: BaseException) -> ExitCode | None:
    """The exit code for an exception a user can cause; None for a bug."""
    return next((code for kind, code in EXIT_CODES if isinstance(exc, kind)), None)


def _message(exc: BaseException) -> str:
    if isinstance(exc, DiagnosticsError):
        n = len(exc.diagnostics)
        return f"{exc}\n{n} error{'s' if n != 1 else ''}"
    if isinstance(exc, OSError) and not isinstance(exc, SkillevalError):
        where = f": {exc.filename}" if exc.filename else ""
        return f"error: {exc.strerror or exc}{where}"
    return f"error: {exc}"


def run_cli(argv: Sequence[str]) -> int:
    """Run the CLI in-process and return its exit code."""
    try:
        code = cli.main(
            list(argv), "skilleval", auto_envvar_prefix="SKILLEVAL", standalone_mode=False
        )
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("interrupted", err=True)
        return ExitCode.INTERRUPTED
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        return ExitCode.USAGE
    except Exception as exc:
        mapped = exit_code_for(exc)
        if mapped is None:
            raise
        click.echo(printable(_message(exc)), err=True)
        return mapped
    return int(code or 0)


def main() -> NoReturn:
    """Console-script entry point.

    A crash in native code (llama.cpp) prints the Python frames that led to it on stderr,
    rather than a bare "Segmentation fault".
    """
    # Not possible without a real stderr (pythonw, a closed descriptor); nothing to name then.
    with contextlib.suppress(RuntimeError, ValueError, OSError):
        faulthandler.enable()
    sys.exit(run_cli(sys.argv[1:]))
