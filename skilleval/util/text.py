"""Text that can always be written as UTF-8.

A Python ``str`` may hold a lone surrogate (U+D800 to U+DFFF): ``json.loads('"\\ud800"')``
makes one, and so does a YAML ``"\\ud800"`` escape. UTF-8 cannot encode it, so such a string
breaks whatever writes it to a file (the cache, ``results.jsonl``). Text that enters from
outside is scrubbed here once, and the count of what was replaced is kept.
"""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"
"""What a lone surrogate becomes: U+FFFD REPLACEMENT CHARACTER."""

_SURROGATE = re.compile("[\ud800-\udfff]")


def scrub(text: str) -> tuple[str, int]:
    """Replace every lone surrogate in ``text`` with U+FFFD.

    A well-formed ``str`` never holds a surrogate pair (astral characters are single code
    points), so every surrogate found is a lone one.

    Returns:
        The scrubbed text and how many code points were replaced.
    """
    if text.isascii():
        return text, 0
    return _SURROGATE.subn(REPLACEMENT, text)


def scrubbed(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD."""
    return scrub(text)[0]
