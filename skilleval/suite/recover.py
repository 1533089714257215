"""Go on past schema errors: set aside the parts of a suite that are wrong, check the rest.

The schema is checked first, and everything it finds is reported. The parts it found wrong
are then left out of compiling, each as small a part as still makes sense on its own (one
assertion, one test, one key of ``defaultTest``, one top-level key), so that the assertion
errors behind an unknown top-level key are reported in the same ``validate``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skilleval.api import NEGATION_PREFIX
from skilleval.errors import Diagnostic
from skilleval.plugins.registry import Registry
from skilleval.suite.schema import violations
from skilleval.suite.yamlio import Document, PathKey
from skilleval.util.frozen import frozen


@frozen
class Checked:
    """A suite's schema errors, and what of it can still be compiled."""

    problems: list[Diagnostic]
    usable: dict[str, Any]
    """The top-level mapping without the keys that are wrong as a whole."""
    skipped: frozenset[PathKey]
    """Tests and assertions that are wrong, left in place so indexes keep their positions."""
    tolerated: tuple[Diagnostic, ...] = ()
    """Warnings: keys a promptfoo config may hold that neither tool reads."""


def check_schema(
    doc: Document, schema: Mapping[str, Any], registry: Registry, *, tolerant: bool = False
) -> Checked:
    """Validate the suite ``doc``; keep what the errors leave usable.

    ``tolerant`` (a promptfoo config): a key nothing reads is a warning, as promptfoo
    ignores it, and the key is left out; a key skilleval refuses is still an error.
    """
    problems: list[Diagnostic] = []
    tolerated: list[Diagnostic] = []
    units: set[PathKey] = set()
    ignored: set[str] = set()
    for path, diag in violations(doc, schema, what="the suite"):
        if _type_says_more(doc, path, registry):
            continue
        if tolerant and _generator_key(doc, path):
            continue  # promptfoo's {path, config} generator entry, read by sources.raw_tests
        if tolerant and diag.message.startswith("unknown key '"):
            message = f"{diag.message}: promptfoo ignores it, and so does skilleval"
            tolerated.append(Diagnostic(diag.where, message, severity="warning"))
            if len(path) == 1:
                ignored.add(str(path[0]))
            continue
        problems.append(diag)
        units.add(_unit(path))
    usable = {k: v for k, v in doc.data.items() if k not in ignored}
    skipped: set[PathKey] = set()
    for unit in units:
        if len(unit) == 1:
            usable.pop(str(unit[0]), None)
        elif (
            unit[0] == "defaultTest"
            and len(unit) == 2
            and isinstance(usable.get("defaultTest"), dict)
        ):
            usable["defaultTest"] = {k: v for k, v in usable["defaultTest"].items() if k != unit[1]}
            skipped.add(unit)
        else:
            skipped.add(unit)
    return Checked(problems, usable, frozenset(skipped), tuple(tolerated))


def _unit(path: PathKey) -> PathKey:
    """The smallest part around ``path`` that can be left out with the rest still checked."""
    if not path:
        return path
    if path[0] == "tests":
        if len(path) >= 4 and path[2] == "assert":
            return path[:4]
        return path[:2]
    if path[0] == "defaultTest":
        if len(path) >= 3 and path[1] == "assert":
            return path[:3]
        return path[:2]
    return path[:1]


def _generator_key(doc: Document, path: PathKey) -> bool:
    """``path`` is the ``path`` or ``config`` of a generator entry in ``tests:``."""
    if len(path) != 3 or path[0] != "tests" or path[2] not in ("path", "config"):
        return False
    tests = doc.data.get("tests")
    index = path[1]
    if not isinstance(tests, list) or not isinstance(index, int) or index >= len(tests):
        return False
    item = tests[index]
    return isinstance(item, Mapping) and set(item) <= {"path", "config"} and "path" in item


def _type_says_more(doc: Document, path: PathKey, registry: Registry) -> bool:
    """An unknown key on an assertion whose type is not registered: the type is the mistake.

    ``assert-set`` with its nested ``assert:`` is then reported as unsupported, and a
    misspelt type as unknown, instead of as keys that do not belong.
    """
    if len(path) < 3 or not isinstance(path[-2], int) or path[-3] != "assert":
        return False
    node: Any = doc.data
    for part in path[:-1]:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return False
    if not isinstance(node, dict) or not isinstance(node.get("type"), str):
        return False
    return registry.get(node["type"].removeprefix(NEGATION_PREFIX)) is None
