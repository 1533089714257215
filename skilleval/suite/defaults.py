"""The suite format's defaults are the defaults of its dataclasses; these read them.

A key a suite leaves out is not passed to the dataclass (:func:`written`), so its declared
default applies, and the schema generator copies the same defaults into the schema
(:func:`defaults`): the default of each setting is written once, on its dataclass field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import MISSING, fields
from typing import Any


def defaults(cls: type[Any]) -> dict[str, Any]:
    """The plain (str, number, bool) defaults a dataclass declares, by field name."""
    return {
        f.name: f.default
        for f in fields(cls)
        if f.default is not MISSING and isinstance(f.default, (str, int, float, bool))
    }


def written(data: Mapping[str, Any], convert: Mapping[str, Callable[[Any], Any]]) -> dict[str, Any]:
    """The keys of ``convert`` that ``data`` sets, each converted: what overrides a default."""
    return {key: fn(data[key]) for key, fn in convert.items() if key in data}


def with_defaults(schema: Mapping[str, Any], cls: type[Any]) -> dict[str, Any]:
    """``schema`` (an object's ``properties``) with each property's ``default`` from ``cls``."""
    found = defaults(cls)
    return {
        name: {**prop, "default": found[name]} if name in found else dict(prop)
        for name, prop in schema.items()
    }
