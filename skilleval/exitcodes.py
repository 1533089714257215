"""Exit codes, one meaning each, shared by every command."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """What ``skilleval`` exited with."""

    OK = 0
    """Everything ran and every gate passed."""
    GATE_FAILED = 1
    """The run finished, and a gate (pass rate, lift, trigger accuracy …) failed."""
    USAGE = 2
    """The command line was wrong."""
    RUNTIME = 3
    """A model or runtime failure: some results are errors, so the gates cannot be trusted."""
    INVALID = 4
    """The suite, a test file, a skill or a plugin is invalid; nothing ran."""
    NO_TESTS = 5
    """The filters selected no tests."""
    INTERRUPTED = 130
    """Stopped by Ctrl-C; finished results were kept."""
