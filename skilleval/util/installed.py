"""What is installed, remembered between runs: plugin entry points and package versions.

Asking :mod:`importlib.metadata` imports it and reads installed packages' metadata, which
costs about a tenth of a second on every start. Its answers change only when packages are
installed, removed or upgraded, so they are kept in ``<home>/installed.json`` under a
fingerprint of what such a scan reads (:func:`path_fingerprint`): the folders on
``sys.path``, the names of the packages' metadata folders in each, and the modification
times of those folders and of the files in them that hold entry points and versions.
Installing, removing or upgrading a package changes the fingerprint, and the memo then no
longer answers.

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
from typing import TYPE_CHECKING, Any

from skilleval.util.memo import read_memo, remember

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

MEMO_NAME = "installed.json"
"""The memo's file name under the home."""
_NO_ENTRY_POINTS = "no-entry-points"
"""The entry holding the fingerprints of the scans that found no entry points."""
_METADATA_SUFFIXES = (".dist-info", ".egg-info")
_METADATA_FILES = ("entry_points.txt", "METADATA", "PKG-INFO")
"""The files in a metadata folder whose change can change an answer."""
_KEEP = 8
"""How many fingerprints each answer is kept for."""
_pending: list[tuple[str, str, Any]] = []
"""Answers found while the home did not exist yet: (entry, fingerprint, answer)."""


def entry_points_in(groups: Sequence[str], home: Path | None) -> list[EntryPoint]:
    """Every entry point of ``groups``, group by group, each group sorted by name.

    ``home``: the folder that may hold the memo (None: scan, remember nothing).
    """
    memo = _memo(home)
    fingerprint = path_fingerprint() if home is not None else None
    if (
        fingerprint is not None
        and memo is not None
        and fingerprint in _kept(memo, _NO_ENTRY_POINTS)
    ):
        return []
    from importlib.metadata import entry_points  # lazy: start-up time

    found = [
        ep for group in groups for ep in sorted(entry_points(group=group), key=lambda e: e.name)
    ]
    if fingerprint is not None and not found:
        if memo is not None:
            _keep(memo, _NO_ENTRY_POINTS, fingerprint, True)
        else:
            _pending.append((_NO_ENTRY_POINTS, fingerprint, True))
    return found


def keep_pending(home: Path) -> None:
    """Keep what was found before ``home`` existed: a suite is loaded before its first run
    creates the home, and that run's answer is then kept for the next one."""
    memo = _memo(home)
    while memo is not None and _pending:
        key, fingerprint, answer = _pending.pop(0)
        _keep(memo, key, fingerprint, answer)


def version_of(distribution: str, home: Path | None) -> str | None:
    """The installed version of ``distribution``; None when it is not installed.

    ``home``: the folder that may hold the memo (None: look it up, remember nothing).
    """
    memo = _memo(home)
    fingerprint = path_fingerprint() if memo is not None else None
    key = f"version:{distribution}"
    if memo is not None and fingerprint is not None:
        kept = _kept(memo, key)
        if fingerprint in kept:
            found = kept[fingerprint]
            return found if isinstance(found, str) else None
    from importlib import metadata  # lazy: start-up time

    try:
        version: str | None = metadata.version(distribution)
    except metadata.PackageNotFoundError:
        version = None
    if memo is not None and fingerprint is not None:
        _keep(memo, key, fingerprint, version)
    return version


def _memo(home: Path | None) -> Path | None:
    return home / MEMO_NAME if home is not None and home.is_dir() else None


def _kept(memo: Path, key: str) -> dict[str, Any]:
    """The answers kept under ``key``, by fingerprint."""
    kept = read_memo(memo).get(key)
    return kept if isinstance(kept, dict) else {}


def _keep(memo: Path, key: str, fingerprint: str, answer: Any) -> None:
    """Keep ``answer`` for ``fingerprint``, with the latest few others: one installation
    started in several ways (a script, ``python -m``) has one fingerprint per way, as the
    first folder on ``sys.path`` differs."""
    kept = _kept(memo, key)
    if fingerprint in kept and kept[fingerprint] == answer:
        return
    kept.pop(fingerprint, None)
    kept[fingerprint] = answer
    remember(memo, key, dict(list(kept.items())[-_KEEP:]))


def path_fingerprint() -> str | None:
    """A digest of what a scan of installed packages reads; None when it cannot be known.

    For each folder on ``sys.path``: the names of the packages' metadata folders in it, and
    the modification times of each such folder, its ``entry_points.txt`` and its version
    file. A file on the path (a zip) counts by its own modification time.

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
            names = sorted(os.listdir(folder))
        except OSError:
            digest.update(_stamp(folder).encode())  # a zip, or nothing there
            digest.update(b"\n")
            continue
        for name in names:
            if name.endswith(_METADATA_SUFFIXES):
                info = os.path.join(folder, name)
                stamps = [_stamp(os.path.join(info, f)) for f in _METADATA_FILES]
                digest.update(
                    f"\0{name}\0{_stamp(info)}:{':'.join(stamps)}".encode(
                        "utf-8", "surrogateescape"
                    )
                )
        digest.update(b"\n")
    return digest.hexdigest()


def _stamp(path: str) -> str:
    try:
        return str(os.stat(path).st_mtime_ns)
    except OSError:
        return "-"
