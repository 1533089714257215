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
- On ordinary patterns it was about as fast as ``re`` (5-75 µs on 1 KB of text, faster
  than ``re`` on three of the four measured).

One cost ``regex`` adds: it compiles a fixed repeat by writing it out, so ``a{1000000}``
took 1-5 s to compile, depending on load, and ``((a{100}){100}){300}`` 17 s and 865 MB,
where ``re`` takes well under a millisecond; no timeout covers compiling. So every pattern
is first parsed by ``re``'s own parser, which also keeps ``re``'s syntax and error messages,
and refused when the repeats it must write out exceed :data:`MAX_EXPANDED` (``a{100000}``
compiles in about 0.1 s).
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Iterator
from typing import Any, Final

import regex

from skilleval.errors import RegexError, RegexTimeoutError

__all__ = [
    "MULTILINE",
    "TIMEOUT_S",
    "Match",
    "Pattern",
    "compile",
    "from_javascript",
    "search",
]

TIMEOUT_S: float = 1.0
"""Longest one search may take, in seconds, before it becomes an error (see above)."""

MAX_EXPANDED: Final = 100_000
"""The most nodes one pattern may hold once its fixed repeats are written out (see above)."""

MULTILINE: Final = regex.MULTILINE
"""``^`` and ``$`` match at every line, as ``re.MULTILINE``."""

Pattern = regex.Pattern
Match = regex.Match


def compile(pattern: str, flags: int = 0, *, javascript: bool = False) -> regex.Pattern[str]:
    """Compile ``pattern`` (Python ``re`` syntax); raises RegexError saying why it cannot.

    ``javascript``: also read JavaScript's spellings, as promptfoo's ``regex`` assertions
    write them: named groups ``(?<name>…)`` with ``\\k<name>`` (:func:`from_javascript`) and
    Unicode properties ``\\p{L}``, ``\\P{L}`` (the ``regex`` package's meaning).
    """
    if javascript:
        return _compiled(from_javascript(pattern), flags, True)
    return _compiled(pattern, flags, False)


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str, flags: int, properties: bool) -> regex.Pattern[str]:
    try:
        with warnings.catch_warnings():
            # re warns that "[[" may one day start a nested set; that is not the user's error.
            warnings.simplefilter("ignore", FutureWarning)
            measured = _without_properties(pattern) if properties else pattern
            parsed = _RE_PARSER.parse(measured, _re_flags(flags))
        size = _expanded(parsed)
        if size > MAX_EXPANDED:
            raise RegexError(
                f"the pattern's repeats write out {size:,} items, over the limit of"
                f" {MAX_EXPANDED:,}; use a smaller count, or + or * instead of {{n}}"
            )
        return regex.compile(pattern, flags)
    except (re.error, regex.error) as exc:
        raise RegexError(str(exc)) from None
    except RecursionError:
        raise RegexError("the pattern nests groups too deeply") from None


def _escapes(pattern: str) -> Iterator[tuple[int, str]]:
    """Each position of ``pattern`` with its token: an escape (``\\x``) or one character."""
    i = 0
    while i < len(pattern):
        token = pattern[i : i + 2] if pattern[i] == "\\" else pattern[i]
        yield i, token
        i += len(token)


def _without_properties(pattern: str) -> str:
    """``pattern`` with each Unicode property (``\\p{L}``, ``\\P{Lu}``, ``\\pL``) as one
    letter: ``regex`` reads them, ``re``'s parser (which only measures) does not."""
    if "\\p" not in pattern and "\\P" not in pattern:
        return pattern
    out: list[str] = []
    skip_to = 0
    for i, token in _escapes(pattern):
        if i < skip_to:
            continue
        if token in ("\\p", "\\P"):
            rest = pattern[i + 2 :]
            close = rest.find("}") if rest.startswith("{") else -1
            skip_to = i + 2 + (close + 1 if close >= 0 else min(1, len(rest)))
            out.append("x")
        else:
            out.append(token)
    return "".join(out)


def from_javascript(pattern: str) -> str:
    """A JavaScript pattern's named groups in Python's spelling: ``(?<name>…)`` as
    ``(?P<name>…)`` and ``\\k<name>`` as ``(?P=name)``. Everything else is left as written."""
    if "(?<" not in pattern and "\\k<" not in pattern:
        return pattern
    out: list[str] = []
    skip_to = 0
    for i, token in _escapes(pattern):
        if i < skip_to:
            continue
        if token == "\\k" and pattern.startswith("<", i + 2) and ">" in pattern[i + 3 :]:
            end = pattern.index(">", i + 3)
            out.append(f"(?P={pattern[i + 3 : end]})")
            skip_to = end + 1
        elif (
            token == "("
            and pattern.startswith("?<", i + 1)
            and pattern[i + 3 : i + 4]
            not in (
                "=",
                "!",
            )
        ):
            out.append("(?P<")
            skip_to = i + 3
        else:
            out.append(token)
    return "".join(out)


# re's own parser: the reference for re's syntax. It is private, so it is used only to read
# patterns, and its opcodes are told apart by name.
_RE_PARSER: Any = re._parser

_REPEATS: Final = frozenset({"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"})

# The flags whose meaning re shares; regex numbers ASCII differently.
_SHARED_FLAGS: Final = (
    (regex.IGNORECASE, re.IGNORECASE),
    (regex.MULTILINE, re.MULTILINE),
    (regex.DOTALL, re.DOTALL),
    (regex.VERBOSE, re.VERBOSE),
    (regex.ASCII, re.ASCII),
)


def _re_flags(flags: int) -> int:
    return sum(re_flag for regex_flag, re_flag in _SHARED_FLAGS if flags & regex_flag)


def _expanded(items: Any) -> int:
    """How many nodes the parsed pattern holds once every fixed repeat is written out.

    A node counts one plus what it holds (a group, a lookaround, an alternation); a repeat
    counts its minimum count, at least once, times what it repeats, at least one node, so an
    empty group repeated a million times is refused too. The count multiplies rather than
    writes out, so it takes time in proportion to the pattern's length.
    """
    total = 0
    for op, arg in items:
        inner = sum(_expanded(sub) for sub in _subpatterns(arg))
        if str(op) in _REPEATS:
            total += max(int(arg[0]), 1) * max(inner, 1)
        else:
            total += 1 + inner
    return total


def _subpatterns(arg: Any) -> Iterator[Any]:
    """The parsed subpatterns inside one node's argument, at any depth of tuples and lists."""
    if isinstance(arg, _RE_PARSER.SubPattern):
        yield arg
    elif isinstance(arg, tuple | list):
        for part in arg:
            yield from _subpatterns(part)


def search(
    pattern: str | regex.Pattern[str],
    text: str,
    flags: int = 0,
    *,
    timeout: float | None = None,
    javascript: bool = False,
) -> regex.Match[str] | None:
    """The first match of ``pattern`` in ``text``, or None.

    Raises:
        RegexError: ``pattern`` does not compile.
        RegexTimeoutError: the search ran past ``timeout`` seconds (default :data:`TIMEOUT_S`).
    """
    if isinstance(pattern, str):
        compiled = compile(pattern, flags, javascript=javascript)
    else:
        compiled = pattern
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
