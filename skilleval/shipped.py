"""Where the files that ship with skilleval are: its JSON Schemas and the suites it runs on itself.

Both live at the top of the source tree (``schemas/``, ``suites/``), where editors and readers
find them. The wheel copies them into the package as ``skilleval/_schemas`` and
``skilleval/_suites`` (``force-include`` in ``pyproject.toml``). This module answers from the
packaged copy when there is one, and from the source tree otherwise (a checkout on
``PYTHONPATH``, or an editable install), so no caller needs to know which it is running from.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

Shipped = Literal["schemas", "suites"]

JUDGE_FITNESS_SET = "judge-fitness.yaml"
"""The judge-fitness set, inside ``suites/`` (``judge-check`` grades it; every judge's memo key
hashes it)."""

#: The source tree's root: the folder that holds ``skilleval/``, ``schemas/`` and ``suites/``.
SOURCE_ROOT = Path(__file__).resolve().parent.parent


def package_files(package: str) -> Traversable:
    """``importlib.resources.files(package)``: the package's folder as a ``Path`` when it is one.

    Only a package that is not a folder (imported from a zip) goes through
    ``importlib.resources``, whose readers import ``zipfile`` and more on every start.
    """
    module = importlib.import_module(package)
    file = getattr(module, "__file__", None)
    if file is not None and Path(file).is_file():
        return Path(file).parent
    from importlib import resources  # lazy: start-up time

    return resources.files(package)


def shipped_dir(kind: Shipped) -> Traversable:
    """The folder of shipped ``schemas`` or ``suites``: the wheel's copy, else the checkout's."""
    packaged = package_files("skilleval") / f"_{kind}"
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
