"""The ``skilleval`` command line. Each command parses options and calls one function.

``run_cli(argv)`` runs in-process and returns the exit code (tests call it); ``main()`` is the
console script. This is the one place where errors become exit codes: a user's mistake is
printed as ``file:line:col: error: …`` with no traceback; anything else is a bug and keeps it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import NoReturn

import click

from skilleval import __version__
from skilleval.errors import DiagnosticsError, ProviderError, SkillevalError, UsageError
from skilleval.exitcodes import ExitCode


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="skilleval")
def cli() -> None:
    """Test agent skills and prompts with YAML suites, on a local model."""


def _register() -> None:
    from skilleval.cli import compare_cmd, plugins_cmd, report_cmd, run_cmd, validate_cmd

    cli.add_command(run_cmd.run)
    cli.add_command(validate_cmd.validate)
    cli.add_command(plugins_cmd.plugins)

    from skilleval.cli import judge_check_cmd, router_check_cmd

    cli.add_command(judge_check_cmd.judge_check)
    cli.add_command(router_check_cmd.router_check)
    cli.add_command(report_cmd.report)
    cli.add_command(compare_cmd.compare)

    from skilleval.cli import cache_cmd

    cli.add_command(cache_cmd.cache)

    from skilleval.cli import lint_cmd, overfit_cmd

    cli.add_command(lint_cmd.lint)
    cli.add_command(overfit_cmd.overfit)

    from skilleval.cli import power_cmd

    cli.add_command(power_cmd.power)

    from skilleval.cli import history_cmd

    cli.add_command(history_cmd.history)

    from skilleval.cli import watch_cmd

    cli.add_command(watch_cmd.watch)


_register()


def run_cli(argv: Sequence[str]) -> int:
    """Run the CLI in-process and return its exit code."""
    try:
        code = cli.main(
            list(argv), "skilleval", auto_envvar_prefix="SKILLEVAL", standalone_mode=False
        )
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        return ExitCode.INTERRUPTED
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        return ExitCode.INTERRUPTED
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        return ExitCode.USAGE
    except DiagnosticsError as exc:
        click.echo(str(exc), err=True)
        n = len(exc.diagnostics)
        click.echo(f"{n} error{'s' if n != 1 else ''}", err=True)
        return ExitCode.INVALID
    except UsageError as exc:
        click.echo(f"error: {exc}", err=True)
        return ExitCode.USAGE
    except ProviderError as exc:
        click.echo(f"error: {exc}", err=True)
        return ExitCode.RUNTIME
    except SkillevalError as exc:
        click.echo(f"error: {exc}", err=True)
        return ExitCode.RUNTIME
    return int(code or 0)


def main() -> NoReturn:
    """Console-script entry point."""
    sys.exit(run_cli(sys.argv[1:]))
