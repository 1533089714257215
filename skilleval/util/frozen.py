"""``@frozen``: ``@dataclass(frozen=True, slots=True)`` at a fraction of the cost of making the class.

Python 3.11 compiles each method a dataclass generates with its own ``exec``; a frozen class
with equality gets six (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__``, ``__delattr__``), about 1.4 ms a class, and a run imports over a hundred
of them. Here only ``__init__`` is generated. The others are shared functions that read the
class's field names, collected once when the class is made, and do what the generated ones
do: the same text, the same comparison (same class, then the tuples of compared fields), the
same hash (of the tuple of hashed fields), ``field(repr=False, compare=False, hash=...)``
honoured, and :class:`~dataclasses.FrozenInstanceError` for assigning or deleting a field.

So that the generated ``__init__`` can set the fields, the class is made as a dataclass that
is not frozen, and the shared ``__setattr__`` lets a field be set while it has no value (its
slot is empty), which only ``__init__`` (and unpickling) ever see; ``__post_init__`` sets
``init=False`` fields with ``object.__setattr__``, as for any frozen dataclass. Copying and
pickling go through ``__getstate__``/``__setstate__`` as a frozen dataclass's do. Type
checkers see a frozen dataclass (``dataclass_transform(frozen_default=True)``).
``tests/util/test_frozen.py`` checks each method against ``dataclass``'s own.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable
from dataclasses import Field, FrozenInstanceError, dataclass, field, fields
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T")

_REPR = "__frozen_repr__"
_COMPARE = "__frozen_compare__"
_HASH = "__frozen_hash__"
_FIELDS = "__frozen_fields__"


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The values of ``names`` as a tuple (``attrgetter`` gives a bare value for one name)."""
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return attrgetter(*names)


@reprlib.recursive_repr()
def _repr(self: Any) -> str:
    names = getattr(type(self), _REPR)
    inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
    return f"{type(self).__qualname__}({inner})"


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        values = getattr(type(self), _COMPARE)
        return bool(values(self) == values(other))
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(getattr(type(self), _HASH)(self))


def _setattr(self: Any, name: str, value: Any) -> None:
    cls = type(self)
    if name in getattr(cls, _FIELDS):
        if not hasattr(self, name):  # an empty slot: __init__ (or unpickling) sets it
            object.__setattr__(self, name, value)
            return
    elif _FIELDS not in cls.__dict__:  # a plain subclass's own attribute
        object.__setattr__(self, name, value)
        return
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _delattr(self: Any, name: str) -> None:
    cls = type(self)
    if name in getattr(cls, _FIELDS) or _FIELDS in cls.__dict__:
        raise FrozenInstanceError(f"cannot delete field {name!r}")
    object.__delattr__(self, name)


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, f.name) for f in fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    for f, value in zip(fields(self), state, strict=False):
        object.__setattr__(self, f.name, value)


@overload
def frozen(cls: type[T], /) -> type[T]: ...
@overload
def frozen(*, kw_only: bool = False) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(field, Field))
def frozen(cls: type[T] | None = None, /, *, kw_only: bool = False) -> Any:
    """``@dataclass(frozen=True, slots=True)`` (and ``kw_only``), with shared ``repr``/``eq``/``hash``."""

    def make(cls: type[T]) -> type[T]:
        shared = {
            "__repr__": _repr,
            "__eq__": _eq,
            "__hash__": _hash,
            "__setattr__": _setattr,
            "__delattr__": _delattr,
            "__getstate__": _getstate,
            "__setstate__": _setstate,
        }
        for name, function in shared.items():
            if name in cls.__dict__:
                raise TypeError(f"@frozen class {cls.__qualname__} defines {name}; use @dataclass")
            setattr(cls, name, function)
        made: type[T] = dataclass(slots=True, repr=False, eq=False, kw_only=kw_only)(cls)
        every = fields(made)  # type: ignore[arg-type]
        setattr(made, _FIELDS, frozenset(f.name for f in every))
        setattr(made, _REPR, tuple(f.name for f in every if f.repr))
        setattr(made, _COMPARE, _getter(tuple(f.name for f in every if f.compare)))
        hashed = (f.name for f in every if (f.compare if f.hash is None else f.hash))
        setattr(made, _HASH, _getter(tuple(hashed)))
        return made

    return make if cls is None else make(cls)
