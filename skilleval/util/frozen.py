"""``@frozen``: ``@dataclass(frozen=True, slots=True)`` at half the cost of creating the class.

Python 3.11 compiles each method a dataclass generates with its own ``exec``; a frozen class
with equality gets six (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__``, ``__delattr__``), about 1.4 ms a class, and a run imports over a hundred
of them. Here ``__repr__``, ``__eq__`` and ``__hash__`` are shared functions that read the
class's field names, collected once when the class is made, and do what the generated ones
do: the same text, the same comparison (same class, then the tuples of compared fields),
the same hash (of the tuple of hashed fields), ``field(repr=False, compare=False,
hash=...)`` honoured. ``tests/util/test_frozen.py`` checks each against ``dataclass``'s own.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable
from dataclasses import Field, dataclass, field, fields
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T")

_REPR = "__frozen_repr__"
_COMPARE = "__frozen_compare__"
_HASH = "__frozen_hash__"


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


@overload
def frozen(cls: type[T], /) -> type[T]: ...
@overload
def frozen(*, kw_only: bool = False) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(field, Field))
def frozen(cls: type[T] | None = None, /, *, kw_only: bool = False) -> Any:
    """``@dataclass(frozen=True, slots=True)`` (and ``kw_only``), with shared ``repr``/``eq``/``hash``."""

    def make(cls: type[T]) -> type[T]:
        for name in ("__repr__", "__eq__", "__hash__"):
            if name in cls.__dict__:
                raise TypeError(f"@frozen class {cls.__qualname__} defines {name}; use @dataclass")
        cls.__repr__ = _repr  # type: ignore[method-assign]
        cls.__eq__ = _eq  # type: ignore[method-assign]
        cls.__hash__ = _hash  # type: ignore[method-assign]
        made: type[T] = dataclass(frozen=True, slots=True, repr=False, eq=False, kw_only=kw_only)(
            cls
        )
        every = fields(made)  # type: ignore[arg-type]
        setattr(made, _REPR, tuple(f.name for f in every if f.repr))
        setattr(made, _COMPARE, _getter(tuple(f.name for f in every if f.compare)))
        hashed = (f.name for f in every if (f.compare if f.hash is None else f.hash))
        setattr(made, _HASH, _getter(tuple(hashed)))
        return made

    return make if cls is None else make(cls)
