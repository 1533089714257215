"""Exit codes, one meaning each, shared by every command.

``skilleval.cli.EXIT_CODES`` maps each kind of error to one of these; the README's table
states the rule.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """What ``skilleval`` exited with."""

    OK = 0
    """Everything ran and every gate passed."""
    GATE_FAILED = 1
    """The run finished, and a gate (pass rate, lift, trigger accuracy …) failed; or
    ``compare`` found a regression."""
    USAGE = 2
    """The command line was wrong: an option, a value, a path that is missing or of the wrong
    kind, or an output that cannot be written."""
    RUNTIME = 3
    """A model or runtime failure: some results are errors, so the gates cannot be trusted."""
    INVALID = 4
    """A file that was read is invalid: the suite, a test file, a skill or a plugin (nothing
    ran), or a results file given to ``report``, ``compare`` or ``power``."""
    NO_TESTS = 5
    """The filters selected no tests."""
    CONFIG = 6
    """The installation cannot run here: the llama.cpp build crashed on this CPU in its
    canary (a build for another CPU, or AMX the OS has not enabled). Nothing ran; the message
    says how to rebuild it."""
    INTERRUPTED = 130
    """Stopped by Ctrl-C; finished results were kept."""
