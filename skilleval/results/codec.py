"""Turn the typed results model into JSON and back, driven by the dataclasses' own fields.

One set of rules serves the writer, the loader and the schema generator, so the three cannot
disagree: a field's name is its JSON key, fields are written in declaration order, and
``meta()`` adds what the type alone cannot say (a description, a bound, when to leave a key
out, how many decimals to keep).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any, Literal, TypeVar, Union

from skilleval.errors import DecodeError

T = TypeVar("T")

OMIT_FALSE = "false"
"""Leave the key out when the value is ``False``."""
OMIT_EMPTY = "empty"
"""Leave the key out when the value is empty (``{}``, ``()``) or ``None``."""

ARM = "arm"
COUNT = "count"
RATE = "rate"
"""Shared definitions of the results schema, named by ``meta(ref=...)``."""


def meta(
    description: str = "",
    *,
    omit: str | None = None,
    digits: int | None = None,
    none_as_empty: bool = False,
    key: str | None = None,
    ref: str | None = None,
    keys: str | None = None,
    **schema: Any,
) -> dict[str, Any]:
    """Field metadata for the codec and the schema generator.

    Args:
        description: The schema's description of the field.
        omit: :data:`OMIT_FALSE` or :data:`OMIT_EMPTY`: when the key is left out.
        digits: Round a float (or the floats of a mapping) to this many decimals on writing.
        none_as_empty: Write ``None`` as ``{}`` and read ``{}`` back as ``None``.
        key: The JSON key, when it is not a valid Python name (``pass``).
        ref: A shared schema definition that describes the value (``count``, ``arm``).
        keys: A shared schema definition every key of a mapping must match.
        schema: Extra JSON Schema keywords (``minimum``, ``pattern`` …).
    """
    if ref is not None:
        schema = {"$ref": f"#/$defs/{ref}", **schema}
    if keys is not None:
        schema = {"propertyNames": {"$ref": f"#/$defs/{keys}"}, **schema}
    return {
        "description": description,
        "omit": omit,
        "digits": digits,
        "none_as_empty": none_as_empty,
        "key": key,
        "schema": schema,
    }


def json_key(f: dataclasses.Field[Any]) -> str:
    key = f.metadata.get("key")
    return key if isinstance(key, str) else f.name


@cache
def hints(cls: type) -> dict[str, Any]:
    """The resolved annotations of a results dataclass."""
    return typing.get_type_hints(cls)


def fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    return dataclasses.fields(cls)


# --------------------------------------------------------------------------- writing


_SCALARS = frozenset({str, int, float, bool, type(None)})
"""Types that are their own JSON data (exactly these: a subclass takes the long way)."""


@cache
def _writing_plan(cls: type) -> tuple[tuple[str, str, Any, bool, int | None], ...]:
    """Each field of a results dataclass as the writer needs it, read once per class: its
    name, JSON key, omission rule, whether None is written as ``{}``, and its digits."""
    return tuple(
        (
            f.name,
            json_key(f),
            f.metadata.get("omit"),
            bool(f.metadata.get("none_as_empty")),
            f.metadata.get("digits"),
        )
        for f in fields(cls)
    )


def encode(value: Any) -> Any:
    """A results object (or any part of one) as plain JSON data, keys in declaration order."""
    if type(value) in _SCALARS:
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for name, key, omit, none_as_empty, digits in _writing_plan(type(value)):
            item = getattr(value, name)
            if omit == OMIT_FALSE and item is False:
                continue
            if omit == OMIT_EMPTY and (item is None or item == {} or item == ()):
                continue
            if item is None and none_as_empty:
                out[key] = {}
                continue
            out[key] = _rounded(encode(item), digits)
        return out
    if isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [encode(v) for v in value]
    return value


def _rounded(value: Any, digits: int | None) -> Any:
    if digits is None:
        return value
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, dict):
        return {k: round(v, digits) if isinstance(v, float) else v for k, v in value.items()}
    return value


# --------------------------------------------------------------------------- reading


def decode(cls: type[T], data: Any, path: str = "") -> T:
    """Build ``cls`` from JSON data, checking every field's type on the way.

    Raises:
        DecodeError: Naming the first field (as ``a/b/0/c``) whose value does not fit.
    """
    result: T = _decode(cls, data, path)
    return result


def _decode(tp: Any, data: Any, path: str) -> Any:
    if tp is Any:
        return data
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _decode_dataclass(tp, data, path)
    if origin is Literal:
        if data not in typing.get_args(tp) or isinstance(data, bool) != any(
            isinstance(a, bool) for a in typing.get_args(tp) if a == data
        ):
            allowed = ", ".join(repr(a) for a in typing.get_args(tp))
            raise DecodeError(path, f"{data!r} is not one of {allowed}")
        return data
    if origin in (Union, types.UnionType):
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        if data is None and len(options) < len(typing.get_args(tp)):
            return None
        if len(options) == 1:
            return _decode(options[0], data, path)
        errors = []
        for option in options:
            try:
                return _decode(option, data, path)
            except DecodeError as exc:
                errors.append(exc)
        raise (
            errors[-1]
            if len(errors) == 1
            else DecodeError(path, f"{_shown(data)} fits none of the allowed shapes")
        )
    if origin is tuple:
        args = typing.get_args(tp)
        if not isinstance(data, list):
            raise DecodeError(path, f"expected an array, found {_shown(data)}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], v, f"{path}/{i}") for i, v in enumerate(data))
        if len(data) != len(args):
            raise DecodeError(path, f"expected {len(args)} items, found {len(data)}")
        return tuple(
            _decode(a, v, f"{path}/{i}") for i, (a, v) in enumerate(zip(args, data, strict=True))
        )
    if origin in (Mapping, dict, typing.get_origin(Mapping[str, Any])):
        _, value_type = typing.get_args(tp)
        if not isinstance(data, dict):
            raise DecodeError(path, f"expected an object, found {_shown(data)}")
        return {k: _decode(value_type, v, f"{path}/{k}") for k, v in data.items()}
    return _decode_scalar(tp, data, path)


def _decode_scalar(tp: Any, data: Any, path: str) -> Any:
    if tp is type(None):
        if data is not None:
            raise DecodeError(path, f"expected null, found {_shown(data)}")
        return None
    if tp is bool:
        if not isinstance(data, bool):
            raise DecodeError(path, f"expected true or false, found {_shown(data)}")
        return data
    if tp is int:
        if not isinstance(data, int) or isinstance(data, bool):
            raise DecodeError(path, f"expected an integer, found {_shown(data)}")
        return data
    if tp is float:
        if not isinstance(data, int | float) or isinstance(data, bool):
            raise DecodeError(path, f"expected a number, found {_shown(data)}")
        return data
    if tp is str:
        if not isinstance(data, str):
            raise DecodeError(path, f"expected a string, found {_shown(data)}")
        return data
    raise TypeError(f"the results codec cannot read {tp!r}")


class _Reading(typing.NamedTuple):
    """One field of a results dataclass as the reader needs it."""

    name: str
    key: str
    tp: Any
    init: bool
    has_default: bool
    may_be_absent: bool
    """Written only when it holds something (``omit``), or optional."""
    none_as_empty: bool


@cache
def _reading_plan(cls: type) -> tuple[frozenset[str], tuple[_Reading, ...]]:
    """The keys of a results dataclass and each field as the reader needs it, read once per
    class."""
    types_of = hints(cls)
    plan = tuple(
        _Reading(
            name=f.name,
            key=json_key(f),
            tp=types_of[f.name],
            init=f.init,
            has_default=f.default is not dataclasses.MISSING
            or f.default_factory is not dataclasses.MISSING,
            may_be_absent=bool(f.metadata.get("omit")) or _optional(types_of[f.name]),
            none_as_empty=bool(f.metadata.get("none_as_empty")),
        )
        for f in fields(cls)
    )
    return frozenset(r.key for r in plan), plan


def _decode_dataclass(cls: type, data: Any, path: str) -> Any:
    if not isinstance(data, dict):
        raise DecodeError(path, f"expected an object, found {_shown(data)}")
    known, plan = _reading_plan(cls)
    unknown = sorted(set(data) - known)
    if unknown:
        raise DecodeError(path, f"unknown key {unknown[0]!r}")
    kwargs: dict[str, Any] = {}
    for f in plan:
        key = f.key
        where = f"{path}/{key}" if path else key
        if not f.init:
            if key in data:
                _decode(f.tp, data[key], where)
            continue
        if key not in data:
            if f.has_default:
                continue
            if f.may_be_absent:
                kwargs[f.name] = _empty(f.tp)
                continue
            raise DecodeError(path, f"missing {key!r}")
        value = data[key]
        if f.none_as_empty and value == {}:
            kwargs[f.name] = None
            continue
        kwargs[f.name] = _decode(f.tp, value, where)
    return cls(**kwargs)


def _empty(tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin is tuple:
        return ()
    if origin in (Mapping, dict, typing.get_origin(Mapping[str, Any])):
        return {}
    return None


def _optional(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType) and type(None) in typing.get_args(tp)


def _shown(data: Any) -> str:
    if data is None:
        return "null"
    if isinstance(data, bool):
        return "true" if data else "false"
    if isinstance(data, dict):
        return "an object"
    if isinstance(data, list):
        return "an array"
    text = repr(data)
    return text if len(text) <= 40 else text[:39] + "…"
