"""Regular expressions written by users, searched with a time limit.

Every pattern that comes from a suite (the ``regex`` and ``file-matches`` assertions, the
``stdout`` of ``run-command``, ``matches()`` in ``expr``, scripted-model rules) goes through
this module, so a pattern that backtracks catastrophically ends as an error, not a hang.

The engine is the ``regex`` package, chosen over RE2 by measurement (docs/assertions.md,
"Regular expressions"):

- ``regex`` keeps Python's ``re`` syntax and meaning. RE2 rejects lookarounds,
  backreferences and possessive quantifiers, and its ``\\d``, ``\\w`` and ``\\b`` are ASCII
  only, so ``\\bcafé\\b`` silently stops matching. Suites written for ``re`` keep working.
- ``regex`` already finishes ``(a+)+$`` on 50 a's and a b in about 3 ms, where ``re`` takes
  seconds at 24 a's and doubles with each one. Patterns it cannot shortcut, such as
  ``(a|aa)+$``, stop at the timeout. The limit behaves as CPU time: a 1 s limit stopped
  after 0.9 s of CPU, which was 1-2 s of wall time on a quiet machine and 6 s on a 2-core
  machine at load 10. The same work times out whatever else the machine is doing.
- On ordinary patterns it was as fast as ``re`` or faster (3-60 µs on 1 KB of text).
"""

from __future__ import annotations

import functools
from typing import Final

import regex

from skilleval.errors import RegexError, RegexTimeoutError

__all__ = ["MULTILINE", "TIMEOUT_S", "Match", "Pattern", "compile", "search"]

TIMEOUT_S: float = 1.0
"""Longest one search may take, in seconds, before it becomes an error (see above)."""

MULTILINE: Final = regex.MULTILINE
"""``^`` and ``$`` match at every line, as ``re.MULTILINE``."""

Pattern = regex.Pattern
Match = regex.Match


def compile(pattern: str, flags: int = 0) -> regex.Pattern[str]:
    """Compile ``pattern`` (Python ``re`` syntax); raises RegexError saying why it cannot."""
    try:
        return _compiled(pattern, flags)
    except regex.error as exc:
        raise RegexError(str(exc)) from None


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str, flags: int) -> regex.Pattern[str]:
    return regex.compile(pattern, flags)


def search(
    pattern: str | regex.Pattern[str], text: str, flags: int = 0, *, timeout: float | None = None
) -> regex.Match[str] | None:
    """The first match of ``pattern`` in ``text``, or None.

    Raises:
        RegexError: ``pattern`` does not compile.
        RegexTimeoutError: the search ran past ``timeout`` seconds (default :data:`TIMEOUT_S`).
    """
    compiled = compile(pattern, flags) if isinstance(pattern, str) else pattern
    limit = TIMEOUT_S if timeout is None else timeout
    try:
        return compiled.search(text, timeout=limit)
    except TimeoutError:
        raise RegexTimeoutError(
            f"the regex /{_clip(compiled.pattern)}/ took longer than {limit:g} s on"
            f" {len(text):,} characters of text; it backtracks too much (nested repeats"
            " such as (a|aa)+ are the usual cause)"
        ) from None


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
