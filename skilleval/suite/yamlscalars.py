"""Plain scalars as the YAML 1.2 core schema reads them (as ruamel's round-trip loader does)."""

from __future__ import annotations

import datetime as dt
import re

__all__ = [
    "KNOWN_TAGS",
    "SPECIAL_FIRST",
    "TAG",
    "implicit_tag",
    "to_float",
    "to_int",
    "to_timestamp",
]

TAG = "tag:yaml.org,2002:"
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT = re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?0o?[0-7_]+|[-+]?[0-9_]+|[-+]?0x[0-9a-fA-F_]+)$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)"
    r"|[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)"
    r"|\.(?:nan|NaN|NAN))$"
)
_TIMESTAMP = re.compile(
    r"^(?:[0-9]{4}-[0-9]{2}-[0-9]{2}"
    r"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?"
    r"(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)$"
)
KNOWN_TAGS = {
    f"{TAG}{name}" for name in ("str", "int", "float", "bool", "null", "timestamp", "map", "seq")
} | {"!"}


SPECIAL_FIRST = frozenset("-+0123456789.~nNtTfF")
"""The first characters of plain scalars that may be something other than a string."""


def implicit_tag(value: str) -> str:
    first = value[:1]
    if first in "-+0123456789.":
        if _INT.match(value):
            return "int"
        if _FLOAT.match(value):
            return "float"
        if first.isdigit() and _TIMESTAMP.match(value):
            return "timestamp"
        return "str"
    if first in "~nN" and _NULL.match(value):
        return "null"
    if first in "tTfF" and _BOOL.match(value):
        return "bool"
    if value == "":
        return "null"
    return "str"


def to_int(text: str) -> int:
    value = text.replace("_", "")
    sign = -1 if value.startswith("-") else 1
    value = value.lstrip("+-")
    for prefix, base in (("0b", 2), ("0x", 16), ("0o", 8)):
        if value.startswith(prefix):
            return sign * int(value[2:], base)
    return sign * int(value)


def to_float(text: str) -> float:
    value = text.replace("_", "").lower()
    if value.lstrip("+-") == ".inf":
        return float("-inf") if value.startswith("-") else float("inf")
    if value == ".nan":
        return float("nan")
    return float(value)


def to_timestamp(text: str) -> str:
    from ruamel.yaml.constructor import SafeConstructor  # lazy: start-up time
    from ruamel.yaml.nodes import ScalarNode

    stamp = SafeConstructor().construct_yaml_timestamp(ScalarNode(f"{TAG}timestamp", text))
    return stamp.isoformat() if isinstance(stamp, (dt.date, dt.datetime)) else str(stamp)
