"""Synonyms from a WordNet database on this machine, for ``meteor``.

WordNet is data skilleval does not ship. It is looked for, in order, in ``$WNSEARCHDIR``,
``$WNHOME/dict`` and Debian's ``/usr/share/wordnet`` (``apt-get install wordnet-base``);
the first folder holding ``index.noun`` is used. A word's synonyms are the words of every
synset its index entries name, in the four parts of speech, read as promptfoo's ``natural``
package reads them: the word lower-cased with spaces as ``_``, the synset's words as the
data file writes them (so ``Paris`` and ``pretty(a)`` keep their case and markers).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

PARTS = ("noun", "verb", "adj", "adv")


def wordnet_dir() -> Path | None:
    """The WordNet database folder, or None when this machine has none."""
    candidates = [os.environ.get("WNSEARCHDIR")]
    home = os.environ.get("WNHOME")
    if home:
        candidates.append(str(Path(home) / "dict"))
    candidates += ["/usr/share/wordnet", "/usr/share/wordnet/dict"]
    for candidate in candidates:
        if candidate and (Path(candidate) / "index.noun").is_file():
            return Path(candidate)
    return None


@functools.cache
def _index(folder: Path, part: str) -> dict[str, tuple[int, ...]]:
    """Each lemma of ``index.PART`` and the byte offsets of its synsets in ``data.PART``."""
    out: dict[str, tuple[int, ...]] = {}
    path = folder / f"index.{part}"
    if not path.is_file():
        return out
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if line.startswith(" "):
                continue  # the licence at the top
            fields = line.split()
            if len(fields) < 4:
                continue
            try:
                synsets, pointers = int(fields[2]), int(fields[3])
                start = 6 + pointers
                out[fields[0]] = tuple(int(f) for f in fields[start : start + synsets])
            except ValueError:
                continue
    return out


@functools.cache
def _data(folder: Path, part: str) -> dict[int, tuple[str, ...]]:
    """Each synset of ``data.PART``, by its offset, with its words."""
    out: dict[int, tuple[str, ...]] = {}
    path = folder / f"data.{part}"
    if not path.is_file():
        return out
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if line.startswith(" "):
                continue
            fields = line.split("|", 1)[0].split()
            try:
                count = int(fields[3], 16)
                out[int(fields[0])] = tuple(fields[4 + 2 * i] for i in range(count))
            except (ValueError, IndexError):
                continue
    return out


def synonyms(word: str, folder: Path) -> set[str]:
    """Every word sharing a synset with ``word``, in any part of speech."""
    key = "_".join(word.lower().split())
    found: set[str] = set()
    for part in PARTS:
        data = _data(folder, part)
        for offset in _index(folder, part).get(key, ()):
            found.update(data.get(offset, ()))
    return found
