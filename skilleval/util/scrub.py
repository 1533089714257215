"""Text that a model wrote, made safe to pass on: no NUL bytes, no lone surrogates.

A NUL byte cannot be part of a command-line argument or an environment variable, and a lone
surrogate (``"\\ud800"``, which a JSON reply may spell as an escape) cannot be encoded as
UTF-8, so either would stop a command from starting or a results file from being written.
:func:`scrub` replaces each with U+FFFD where such text enters, and says what it replaced so
the record can show it.
"""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"
_BAD = re.compile("[\x00\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_surrogates(text: str) -> tuple[str, int]:
    """``text`` with every lone surrogate replaced by U+FFFD, and how many were.

    For text that is only written to files (a model's reply, a results line): a NUL byte is
    kept, since JSON and UTF-8 carry it. A well-formed ``str`` never holds a surrogate pair
    (astral characters are single code points), so every surrogate found is a lone one.
    """
    if text.isascii():
        return text, 0
    return _SURROGATE.subn(REPLACEMENT, text)


def without_surrogates(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD."""
    return replace_surrogates(text)[0]


def scrub_text(text: str) -> tuple[str, str | None]:
    """``text`` with NUL bytes and lone surrogates replaced, and a note of what was (None: nothing)."""
    if _BAD.search(text) is None:
        return text, None
    nuls = text.count("\x00")
    surrogates = len(_BAD.findall(text)) - nuls
    parts = [
        f"{n} {word}{'s' if n != 1 else ''}"
        for n, word in ((nuls, "NUL byte"), (surrogates, "lone surrogate"))
        if n
    ]
    return _BAD.sub(REPLACEMENT, text), " and ".join(parts)


def scrub(value: Any, where: str = "") -> tuple[Any, list[str]]:
    """A JSON value with every string (keys included) scrubbed, and a note per place changed.

    Each note reads ``where: what`` (``arguments.path: 1 NUL byte``), where ``where`` is the
    path of the string inside ``value``, starting from the given prefix.
    """
    notes: list[str] = []
    return _walk(value, where, notes), notes


def _walk(value: Any, where: str, notes: list[str]) -> Any:
    if isinstance(value, str):
        clean, note = scrub_text(value)
        if note is not None:
            notes.append(f"{where or '$'}: {note}")
        return clean
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            clean_key = key
            if isinstance(key, str):
                clean_key, note = scrub_text(key)
                if note is not None:
                    notes.append(f"{where or '$'} (a key): {note}")
            out[clean_key] = _walk(item, f"{where}.{clean_key}" if where else str(clean_key), notes)
        return out
    if isinstance(value, list):
        return [_walk(item, f"{where}[{i}]", notes) for i, item in enumerate(value)]
    return value


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying so and how long it was; as is when shorter.

    For text a user's computation returns (a check's reason, an error message), which is
    written into every results file and report: a reason of 20 million characters in 60
    checks made gigabytes of results.
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [cut: {len(text):,} characters in all]"


_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
"""What a terminal acts on instead of showing: C0 and C1 controls but tab and newline (ESC
starts the sequences that set a window title or write the clipboard), DEL, and the line and
bidirectional-override characters that reorder what is shown."""


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on written as an escape (``\\x1b``).

    For everything printed to a terminal that a model, a suite or a plugin wrote: a reply in
    a check's reason, a test id, a metric name.
    """
    if text.isascii() and text.isprintable():
        return text
    return _UNPRINTABLE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
