"""skilleval's home: the folder that holds runs, the response cache and the memos."""

from __future__ import annotations

import os
from pathlib import Path


def home_dir() -> Path:
    """skilleval's working directory: ``$SKILLEVAL_HOME`` or ``.skilleval`` here."""
    return Path(os.environ.get("SKILLEVAL_HOME") or ".skilleval")
