"""``platform.platform(terse=True)``, remembered under the home.

On Linux the standard library answers it by running ``uname -p`` in a child process and
reading the interpreter's binary for its C library version: about 5 ms, on every run, for a
string that changes only with the system or the interpreter. The answer is kept in
``<home>/platform.json`` under everything it depends on (``os.uname()``, the interpreter's
path, size and modification time, and its version), so another system, kernel or interpreter
asks again.
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

from skilleval.util.memo import read_memo, remember

MEMO_FILE = "platform.json"


def platform_name(home: Path) -> str:
    """``platform.platform(terse=True)``, from the memo under ``home`` when it has it."""
    try:
        binary = os.stat(sys.executable)
        key = "|".join(
            [*os.uname(), sys.executable, str(binary.st_size), str(binary.st_mtime_ns), sys.version]
        )
    except OSError:
        return platform.platform(terse=True)
    memo = home / MEMO_FILE
    known = read_memo(memo).get(key)
    if isinstance(known, str):
        return known
    name = platform.platform(terse=True)
    if home.is_dir():
        remember(memo, key, name)
    return name
