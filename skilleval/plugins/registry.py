"""Assertion types by name: the assertion side of the plugin manager.

The manager (:mod:`skilleval.plugins.manager`) finds every kind of plugin; this module adds
what only assertion types have: the ``not-`` prefix, and the promptfoo types skilleval
refuses with a reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from skilleval.api import NEGATION_PREFIX, AssertionType
from skilleval.errors import Diagnostic, Location, PluginError
from skilleval.plugins.manager import ENTRY_POINT_GROUPS, PluginManager
from skilleval.sandbox.pyfile import import_plugin_file
from skilleval.util.frozen import frozen

__all__ = [
    "ENTRY_POINT_GROUP",
    "ENTRY_POINT_GROUPS",
    "UNSUPPORTED",
    "Registry",
    "Resolved",
    "default_registry",
    "import_plugin_file",
]

ENTRY_POINT_GROUP = "skilleval.assertions"
"""The entry-point group assertion plugins have always used; ``skilleval.plugins`` also works."""

#: Types people bring from promptfoo that skilleval cannot run, and what to use instead.
UNSUPPORTED: dict[str, str] = {
    "ruby": "skilleval does not run Ruby; use `expr` or `python`",
    "webhook": "webhooks are not supported; write an assertion plugin",
    "human": "manual grading is not supported",
}

_NOT_YET = "a promptfoo type that skilleval does not support yet"
_JUDGED = f"{_NOT_YET}; grade it with `llm-rubric` or `llm-assert`"
UNSUPPORTED.update(
    {
        "conversation-relevance": _JUDGED,
        "classifier": (
            "classifier runs a HuggingFace text-classification model, which skilleval does "
            "not run; for a label, use `model-graded-closedqa` with value 'The output is "
            "<label>', or `llm-rubric`"
        ),
        "moderation": f"{_NOT_YET} (it needs a moderation service)",
        "guardrails": f"{_NOT_YET} (it needs a guardrails service)",
        "pi": f"{_NOT_YET} (it needs a remote scorer)",
        "search-rubric": f"{_NOT_YET} (it needs a web-search grader); use `llm-rubric`",
        "trace-span-count": f"{_NOT_YET} (skilleval records no traces)",
        "trace-span-duration": f"{_NOT_YET} (skilleval records no traces)",
        "trace-error-spans": f"{_NOT_YET} (skilleval records no traces)",
        "agent-rubric": f"{_JUDGED}, with the agent's steps in the rubric",
        "trajectory:goal-success": f"{_JUDGED}, with the agent's steps in the rubric",
    }
)


@frozen
class Resolved:
    """An assertion type as written in a suite: the spec, and whether ``not-`` negates it."""

    spec: AssertionType
    negated: bool


class Registry(PluginManager):
    """The plugin manager, with assertion types looked up the way suites write them."""

    def __contains__(self, name: str) -> bool:
        return self.find("assertion", name) is not None

    def __iter__(self) -> Iterator[AssertionType]:
        return (p for p in self.entries("assertion") if isinstance(p, AssertionType))

    def __len__(self) -> int:
        return len(self.names("assertion"))

    def get(self, name: str) -> AssertionType | None:
        found = self.find("assertion", name)
        return found if isinstance(found, AssertionType) else None

    def resolve(self, type_name: str, where: Location) -> Resolved:
        """Look up ``type_name``, which may carry a ``not-`` prefix."""
        base = type_name.removeprefix(NEGATION_PREFIX)
        spec = self.get(base)
        if spec is not None:
            return Resolved(spec, negated=base != type_name)
        if base in UNSUPPORTED:
            message = f"unsupported assertion type '{type_name}': {UNSUPPORTED[base]}"
        else:
            prefix = NEGATION_PREFIX if base != type_name else ""
            message = self.unknown("assertion", base, prefix=prefix)
        raise PluginError([Diagnostic(where, message)])

    def listing(self) -> list[dict[str, Any]]:
        """Every assertion type with its origin and one-line summary, for reports."""
        return [
            {
                "name": s.name,
                "tier": s.tier,
                "origin": s.origin,
                "summary": s.summary,
                "defined_at": s.defined_at if s.external else None,
            }
            for s in self
        ]


def default_registry(
    folders: Iterable[tuple[Path, Location | None]] = (),
    *,
    entry_points: bool = True,
    run_code: bool = True,
) -> Registry:
    """Built-ins, then installed plugins, then folders: the manager a run uses.

    With ``run_code`` False no plugin code runs: installed plugins are left out, and the
    folders' assertion types are read from their source, not imported.
    """
    registry = Registry()
    registry.load_builtins()
    if entry_points and run_code:
        registry.load_entry_points()
    for folder, where in folders:
        registry.load_folder(folder, where=where, run_code=run_code)
    return registry
