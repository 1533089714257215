"""What the promptfoo compatibility tests share: a config with its models swapped for echo.

Import it as ``from promptfoo_support import with_echo`` (``tests/`` is on the path).
"""

from __future__ import annotations

import re


def with_echo(text: str) -> str:
    """The config's text with its ``providers:`` (or ``targets:``) block as ``[echo]``."""
    lines, skipping = [], False
    for line in text.splitlines():
        if re.match(r"^(providers|targets):", line):
            lines.append("providers: [echo]")
            skipping = True
            continue
        if skipping and (not line.strip() or line[0] in " \t#-"):
            continue
        skipping = False
        lines.append(line)
    return "\n".join(lines) + "\n"
