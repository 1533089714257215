"""``@frozen``: ``@dataclass(frozen=True, slots=True)`` without compiling a method per class.

Python 3.11 compiles each method a dataclass generates with its own ``exec``; a frozen class
with equality gets six (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__``, ``__delattr__``), about 1.4 ms a class, and a run imports over a hundred
of them. Here every one of them is a shared function that reads what it needs of the class
(its fields' names, defaults and rules), collected once when the class is made, and does
what the generated one does: ``__init__`` takes the same arguments (defaults, factories,
``kw_only``, ``init=False``, ``__post_init__``) and raises the same type errors;
``__repr__``, ``__eq__`` and ``__hash__`` give the same text, comparison and hash
(``field(repr=False, compare=False, hash=...)`` honoured); assigning or deleting a field
raises :class:`~dataclasses.FrozenInstanceError`. ``inspect.signature`` and the docstring of
a class without one are ``dataclass``'s. Creating an instance costs about 2.5 µs more.

The class is a real dataclass (``fields``, ``replace``, ``asdict`` work), made with
``init=False, repr=False, eq=False`` and not frozen, so that ``dataclass`` generates nothing;
the shared ``__setattr__`` refuses any assignment to a field that has a value, which leaves
only ``__init__`` (which sets the slots directly) and unpickling to fill them. Copying and
pickling go through ``__getstate__``/``__setstate__`` as a frozen dataclass's do. Type
checkers see a frozen dataclass (``dataclass_transform(frozen_default=True)``).
``tests/util/test_frozen.py`` checks each method against ``dataclass``'s own.
"""

from __future__ import annotations

import inspect
import reprlib
from collections.abc import Callable
from dataclasses import MISSING, Field, FrozenInstanceError, dataclass, field, fields
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T")

_REPR = "__frozen_repr__"
_COMPARE = "__frozen_compare__"
_HASH = "__frozen_hash__"
_FIELDS = "__frozen_fields__"
_INIT = "__frozen_init__"


class _Factory:
    """Shown as a field's default when a factory makes it, as ``dataclass`` shows it."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


class _Plan:
    """What ``__init__`` does for one class: its parameters, their defaults, the rest."""

    __slots__ = ("accepts", "defaults", "keyword", "noinit", "positional", "post_init", "required")

    def __init__(self, cls: type) -> None:
        every = [f for f in fields(cls) if f.init]
        self.positional = tuple(f.name for f in every if not f.kw_only)
        self.keyword = tuple(f.name for f in every if f.kw_only)
        self.accepts = frozenset(self.positional + self.keyword)
        self.defaults: dict[str, tuple[Any, bool]] = {}
        """Name → (the default, or the factory; whether it is a factory)."""
        for f in every:
            if f.default_factory is not MISSING:
                self.defaults[f.name] = (f.default_factory, True)
            elif f.default is not MISSING:
                self.defaults[f.name] = (f.default, False)
        self.required = sum(1 for name in self.positional if name not in self.defaults)
        seen_default = False
        for name in self.positional:
            if name in self.defaults:
                seen_default = True
            elif seen_default:
                raise TypeError(f"non-default argument {name!r} follows default argument")
        self.noinit: tuple[tuple[str, Any, bool], ...] = tuple(
            (f.name, f.default_factory, True)
            if f.default_factory is not MISSING
            else (f.name, f.default, False)
            for f in fields(cls)
            if not f.init and (f.default is not MISSING or f.default_factory is not MISSING)
        )
        self.post_init = hasattr(cls, "__post_init__")


def _listed(names: list[str]) -> str:
    quoted = [repr(n) for n in names]
    if len(quoted) == 1:
        return quoted[0]
    if len(quoted) == 2:
        return f"{quoted[0]} and {quoted[1]}"
    return ", ".join(quoted[:-1]) + f", and {quoted[-1]}"


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    cls = type(self)
    plan: _Plan = getattr(cls, _INIT)
    setter = object.__setattr__
    given = len(args)
    if given > len(plan.positional):
        # CPython's own words for a function with these parameters (self counted).
        low, high = plan.required + 1, len(plan.positional) + 1
        takes = f"{high}" if low == high else f"from {low} to {high}"
        keyword = sum(1 for name in kwargs if name in plan.keyword)
        also = (
            f" positional arguments (and {keyword} keyword-only argument"
            f"{'' if keyword == 1 else 's'})"
            if keyword
            else ""
        )
        raise TypeError(
            f"{cls.__qualname__}.__init__() takes {takes} positional argument"
            f"{'' if takes == '1' else 's'} but {given + 1}{also} were given"
        )
    for name, value in zip(plan.positional, args, strict=False):
        setter(self, name, value)
    for name, value in kwargs.items():
        if name not in plan.accepts:
            raise TypeError(
                f"{cls.__qualname__}.__init__() got an unexpected keyword argument {name!r}"
            )
        if name in plan.positional[:given]:
            raise TypeError(
                f"{cls.__qualname__}.__init__() got multiple values for argument {name!r}"
            )
        setter(self, name, value)
    if given + len(kwargs) < len(plan.accepts):
        missing: list[str] = []
        missing_keyword: list[str] = []
        for name in plan.positional[given:] + plan.keyword:
            if name in kwargs:
                continue
            found = plan.defaults.get(name)
            if found is None:
                (missing if name in plan.positional else missing_keyword).append(name)
            else:
                setter(self, name, found[0]() if found[1] else found[0])
        for names, kind in ((missing, "positional"), (missing_keyword, "keyword-only")):
            if names:
                raise TypeError(
                    f"{cls.__qualname__}.__init__() missing {len(names)} required {kind} "
                    f"argument{'' if len(names) == 1 else 's'}: {_listed(names)}"
                )
    for name, default, is_factory in plan.noinit:
        setter(self, name, default() if is_factory else default)
    if plan.post_init:
        self.__post_init__()


class _Signature:
    """The class's ``__signature__``, made when asked for (``inspect.signature``, the docstring
    ``dataclass`` writes for a class without one): what ``dataclass``'s ``__init__`` has."""

    def __get__(self, obj: Any, owner: type) -> inspect.Signature:
        plan: _Plan = owner.__dict__.get(_INIT) or _Plan(owner)
        types = {f.name: f.type for f in fields(owner)}
        params = []
        for names, kind in (
            (plan.positional, inspect.Parameter.POSITIONAL_OR_KEYWORD),
            (plan.keyword, inspect.Parameter.KEYWORD_ONLY),
        ):
            for name in names:
                found = plan.defaults.get(name)
                default = (
                    inspect.Parameter.empty
                    if found is None
                    else (_FACTORY if found[1] else found[0])
                )
                params.append(
                    inspect.Parameter(name, kind, default=default, annotation=types[name])
                )
        return inspect.Signature(params, return_annotation=None)


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
            "__init__": _init,
            "__signature__": _Signature(),
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
        made: type[T] = dataclass(init=False, slots=True, repr=False, eq=False, kw_only=kw_only)(
            cls
        )
        setattr(made, _INIT, _Plan(made))
        every = fields(made)  # type: ignore[arg-type]
        setattr(made, _FIELDS, frozenset(f.name for f in every))
        setattr(made, _REPR, tuple(f.name for f in every if f.repr))
        setattr(made, _COMPARE, _getter(tuple(f.name for f in every if f.compare)))
        hashed = (f.name for f in every if (f.compare if f.hash is None else f.hash))
        setattr(made, _HASH, _getter(tuple(hashed)))
        return made

    return make if cls is None else make(cls)
