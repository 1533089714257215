"""``@frozen`` behaves as ``@dataclass(frozen=True, slots=True)``: repr, equality, hash."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import pickle
import pkgutil
from dataclasses import FrozenInstanceError, dataclass, field
from typing import Any

import pytest

import skilleval
from skilleval.util.frozen import frozen


@frozen
class Point:
    x: int
    y: float = 0.0
    label: str = field(default="", repr=False)
    note: str = field(default="", compare=False)
    tags: tuple[str, ...] = field(default=(), hash=False)


@dataclass(frozen=True, slots=True)
class PointDC:
    x: int
    y: float = 0.0
    label: str = field(default="", repr=False)
    note: str = field(default="", compare=False)
    tags: tuple[str, ...] = field(default=(), hash=False)


@frozen
class Empty:
    pass


@frozen(kw_only=True)
class Named:
    name: str
    child: Any = None


@frozen
class One:
    value: Any


SAMPLES: list[dict[str, Any]] = [
    {"x": 1},
    {"x": 1, "y": float("nan")},
    {"x": 2, "y": 0.5, "label": "a", "note": "n", "tags": ("t",)},
    {"x": -3, "y": 1e300, "label": "b'\"", "note": "", "tags": ()},
]


@pytest.mark.parametrize("left", SAMPLES)
@pytest.mark.parametrize("right", SAMPLES)
def test_same_as_dataclass(left: dict[str, Any], right: dict[str, Any]) -> None:
    a, b = Point(**left), Point(**right)
    da, db = PointDC(**left), PointDC(**right)
    assert repr(a) == repr(da).replace("PointDC(", "Point(")
    assert (a == b) == (da == db)
    assert (a != b) == (da != db)
    assert hash(a) == hash(da)
    assert dataclasses.astuple(a) == dataclasses.astuple(da)
    assert Point.__match_args__ == PointDC.__match_args__


def test_frozen_slots_and_the_rest() -> None:
    p = Point(1)
    with pytest.raises(FrozenInstanceError):
        p.x = 2  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del p.x
    assert not hasattr(p, "__dict__")
    assert dataclasses.replace(p, x=5) == Point(5)
    other: Any = PointDC(1)
    assert (Point(1) == other) is False  # another class: NotImplemented both ways
    assert Point(1, note="a") == Point(1, note="b")
    assert Point(1, tags=("a",)) != Point(1, tags=("b",))
    assert repr(Empty()) == "Empty()"
    assert Empty() == Empty()
    assert hash(Empty()) == hash(())
    with pytest.raises(TypeError):
        hash(One([1]))  # an unhashable field makes the object unhashable, as dataclass does
    assert repr(One("x")) == "One(value='x')"
    assert hash(One("x")) == hash(("x",))
    with pytest.raises(TypeError):
        Named("a")  # type: ignore[call-arg]
    loop: list[Any] = []
    named = Named(name="n", child=loop)
    loop.append(named)
    assert repr(named) == "Named(name='n', child=[...])"


@frozen
class Derived:
    status: str
    passed: bool = field(init=False)
    items: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "passed", self.status == "pass")


@dataclass(frozen=True, slots=True)
class DerivedDC:
    status: str
    passed: bool = field(init=False)
    items: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "passed", self.status == "pass")


@pytest.mark.parametrize("cls", [Derived, DerivedDC])
def test_assigning_or_deleting_anything_is_refused_as_by_a_frozen_dataclass(cls: Any) -> None:
    obj = cls("pass", (1,))
    assert obj.passed is True
    # (A name that is not a field: a slotted frozen dataclass of Python 3.11 raises TypeError,
    # its __setattr__ naming the class before slots replaced it; @frozen raises as for a field.)
    names = ("status", "passed", "items") + (("other",) if cls is Derived else ())
    for name in names:
        with pytest.raises(FrozenInstanceError, match="cannot assign to field"):
            setattr(obj, name, 1)
        with pytest.raises(FrozenInstanceError, match="cannot delete field"):
            delattr(obj, name)
    assert obj == cls("pass", (1,))


def test_copies_and_pickles_are_equal() -> None:
    obj = Derived("fail", (1, 2))
    for other in (copy.copy(obj), copy.deepcopy(obj), pickle.loads(pickle.dumps(obj))):
        assert other == obj
        assert other.passed is False
        with pytest.raises(FrozenInstanceError):
            other.status = "x"  # type: ignore[misc]


def test_a_plain_subclass_keeps_its_own_attributes() -> None:
    class Plain(Point):
        pass

    obj = Plain(1)
    obj.extra = 2  # type: ignore[attr-defined]
    assert obj.extra == 2  # type: ignore[attr-defined]
    with pytest.raises(FrozenInstanceError):
        obj.x = 3  # type: ignore[misc]
    assert (
        repr(obj)
        == "test_a_plain_subclass_keeps_its_own_attributes.<locals>.Plain(x=1, y=0.0, note='', tags=())"
    )


@frozen
class NoDoc:
    a: int
    b: str = "x"
    c: tuple[int, ...] = field(default_factory=tuple)
    d: int = field(default=0, kw_only=True)
    e: int = field(kw_only=True)


@dataclass(frozen=True, slots=True)
class NoDocDC:
    a: int
    b: str = "x"
    c: tuple[int, ...] = field(default_factory=tuple)
    d: int = field(default=0, kw_only=True)
    e: int = field(kw_only=True)


def _outcome(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    try:
        return repr(cls(*args, **kwargs)).replace("NoDocDC", "NoDoc")
    except TypeError as exc:
        return "TypeError: " + str(exc).replace("NoDocDC", "NoDoc")


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((1,), {"e": 2}),
        ((1, "y", (3,)), {"e": 2, "d": 4}),
        ((), {"a": 1, "e": 2}),
        ((1,), {}),
        ((), {}),
        ((1, "y", (), 5), {"e": 2}),
        ((1,), {"a": 2, "e": 3}),
        ((1,), {"e": 2, "z": 3}),
        ((1, "y"), {"b": "z", "e": 1}),
    ],
)
def test_init_binds_arguments_as_dataclass_does(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    assert _outcome(NoDoc, args, kwargs) == _outcome(NoDocDC, args, kwargs)


def test_signature_and_docstring_are_dataclasses() -> None:
    import inspect

    assert str(inspect.signature(NoDoc)) == str(inspect.signature(NoDocDC))
    assert NoDoc.__doc__ == (NoDocDC.__doc__ or "").replace("NoDocDC", "NoDoc")
    assert NoDoc(1, e=2).c == ()


def test_a_non_default_field_after_a_default_one_is_refused() -> None:
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):

        @frozen
        class Bad:
            a: int = 0
            b: int  # type: ignore[misc]


def test_a_class_that_defines_its_own_methods_is_refused() -> None:
    with pytest.raises(TypeError, match="defines __eq__"):

        @frozen
        class Own:
            x: int

            def __eq__(self, other: object) -> bool:
                return True


def test_every_frozen_class_in_skilleval_matches_dataclass() -> None:
    """Each of skilleval's classes, rebuilt with ``dataclass``, has the same field rules."""
    for info in pkgutil.walk_packages(skilleval.__path__, "skilleval."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if not (isinstance(obj, type) and obj.__module__ == module.__name__):
                continue
            if "__frozen_repr__" not in obj.__dict__:
                continue
            params = obj.__dataclass_params__  # type: ignore[attr-defined]
            assert not params.eq
            assert not params.repr
            every = dataclasses.fields(obj)
            assert obj.__frozen_repr__ == tuple(f.name for f in every if f.repr)  # type: ignore[attr-defined]
