"""Where the files that ship with skilleval are: its JSON Schemas and the suites it runs on itself.

Both live at the top of the source tree (``schemas/``, ``suites/``), where editors and readers
find them. The wheel copies them into the package as ``skilleval/_schemas`` and
``skilleval/_suites`` (``force-include`` in ``pyproject.toml``). This module answers from the
packaged copy when there is one, and from the source tree otherwise (a checkout on
``PYTHONPATH``, or an editable install), so no caller needs to know which it is running from.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Literal

Shipped = Literal["schemas", "suites"]

#: The source tree's root: the folder that holds ``skilleval/``, ``schemas/`` and ``suites/``.
SOURCE_ROOT = Path(__file__).resolve().parent.parent


def shipped_dir(kind: Shipped) -> Traversable:
    """The folder of shipped ``schemas`` or ``suites``: the wheel's copy, else the checkout's."""
    packaged = resources.files("skilleval") / f"_{kind}"
    if packaged.is_dir():
        return packaged
    return SOURCE_ROOT / kind


def shipped_file(kind: Shipped, name: str) -> Traversable:
    """One shipped file by its path inside ``schemas/`` or ``suites/`` (``/``-separated)."""
    node = shipped_dir(kind)
    for part in name.split("/"):
        node = node / part
    return node


def schema_text(name: str) -> str:
    """A shipped JSON Schema's text, by file name (``suite.schema.json`` …)."""
    return shipped_file("schemas", name).read_text(encoding="utf-8")


def suite_text(name: str) -> str:
    """A shipped suite file's text, by its path inside ``suites/`` (``judge-fitness.yaml`` …)."""
    return shipped_file("suites", name).read_text(encoding="utf-8")
