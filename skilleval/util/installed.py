"""What is installed, remembered between runs: plugin entry points and package versions.

Asking :mod:`importlib.metadata` imports it and reads installed packages' metadata, which
costs about a tenth of a second on every start. Its answers change only when packages are
installed, removed or upgraded, so they are kept in ``<home>/installed.json`` with a
fingerprint of everything such a scan reads: each folder on ``sys.path``, its modification
time, the name of each package's metadata folder in it and the modification time of that
package's ``entry_points.txt``. Installing, removing or upgrading a package changes its
folder's listing and modification time, so the fingerprint, and the memo is not used.

Two answers are kept: that no package names an entry point in skilleval's groups (a scan
that finds some is never skipped, so an installed plugin always loads as before), and a
package's version. The memo is used only in a home that exists already, and only when the
standard path finder is the only source of installed packages.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from skilleval.util.memo import read_memo, remember

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

MEMO_NAME = "installed.json"
"""The memo's file name under the home."""
_NO_ENTRY_POINTS = "no-entry-points"
"""The entry holding the fingerprint of the last scan that found no entry points."""
_METADATA_SUFFIXES = (".dist-info", ".egg-info")


def entry_points_in(groups: Sequence[str], home: Path | None) -> list[EntryPoint]:
    """Every entry point of ``groups``, group by group, each group sorted by name.

    ``home``: the folder that may hold the memo (None: scan, remember nothing).
    """
    memo = _memo(home)
    fingerprint = path_fingerprint() if memo is not None else None
    if fingerprint is not None and memo is not None:
        found_none = read_memo(memo).get(_NO_ENTRY_POINTS) == fingerprint
        if found_none:
            return []
    from importlib.metadata import entry_points  # lazy: start-up time

    found = [
        ep for group in groups for ep in sorted(entry_points(group=group), key=lambda e: e.name)
    ]
    if memo is not None and fingerprint is not None:
        wanted = None if found else fingerprint
        if read_memo(memo).get(_NO_ENTRY_POINTS) != wanted:
            remember(memo, _NO_ENTRY_POINTS, wanted)
    return found


def version_of(distribution: str, home: Path | None) -> str | None:
    """The installed version of ``distribution``; None when it is not installed.

    ``home``: the folder that may hold the memo (None: look it up, remember nothing).
    """
    memo = _memo(home)
    fingerprint = path_fingerprint() if memo is not None else None
    key = f"version:{distribution}"
    if memo is not None and fingerprint is not None:
        kept = read_memo(memo).get(key)
        if isinstance(kept, list) and len(kept) == 2 and kept[0] == fingerprint:
            return kept[1] if isinstance(kept[1], str) else None
    from importlib import metadata  # lazy: start-up time

    try:
        version: str | None = metadata.version(distribution)
    except metadata.PackageNotFoundError:
        version = None
    if memo is not None and fingerprint is not None:
        remember(memo, key, [fingerprint, version])
    return version


def _memo(home: Path | None) -> Path | None:
    return home / MEMO_NAME if home is not None and home.is_dir() else None


def path_fingerprint() -> str | None:
    """A digest of what a scan of installed packages reads; None when it cannot be known.

    Another finder on ``sys.meta_path`` that lists distributions (a frozen application's, an
    import hook's) may find packages that no folder shows, so then there is no fingerprint.
    """
    for finder in sys.meta_path:
        if finder is not importlib.machinery.PathFinder and hasattr(finder, "find_distributions"):
            return None
    digest = hashlib.sha256()
    for entry in sys.path:
        folder = entry or os.getcwd()  # "" is the current folder
        digest.update(f"{folder}\0".encode("utf-8", "surrogateescape"))
        try:
            digest.update(str(os.stat(folder).st_mtime_ns).encode())
            names = sorted(os.listdir(folder))
        except OSError:
            # Missing, unreadable, or a file: a zip's contents change its time.
            digest.update(b"-\n")
            continue
        for name in names:
            if name.endswith(_METADATA_SUFFIXES):
                digest.update(f"\0{name}\0".encode("utf-8", "surrogateescape"))
                try:
                    stamp = os.stat(os.path.join(folder, name, "entry_points.txt")).st_mtime_ns
                except OSError:
                    stamp = -1
                digest.update(str(stamp).encode())
        digest.update(b"\n")
    return digest.hexdigest()
