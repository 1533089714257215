"""Values of ``expr``: their kinds, reading data, and the operators.

Reading is total (a missing key, an index out of range, or any access on ``null`` gives
``null``); computing is strict (``"a" - 1`` is an error). Operators that build strings or
lists weigh what they build against :data:`~skilleval.expr.limits.MAX_ITEMS` first, and
integer results are held to :data:`~skilleval.expr.limits.MAX_INT_DIGITS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

from skilleval.errors import ExprRuntimeError
from skilleval.expr.limits import check_built, check_int, weight


def kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "list"
    return type(value).__name__


def is_num(value: Any) -> bool:
    return isinstance(value, int | float)


def is_list(value: Any) -> bool:
    return isinstance(value, list | tuple)


def is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def op_error(op: str, a: Any, b: Any) -> ExprRuntimeError:
    return ExprRuntimeError(f"cannot apply '{op}' to {kind(a)} and {kind(b)}")


def get(container: Any, key: Any) -> Any:
    if isinstance(container, Mapping):
        try:
            return container.get(key)
        except TypeError:  # unhashable key
            return None
    if (
        isinstance(container, str | list | tuple)
        and is_index(key)
        and -len(container) <= key < len(container)
    ):
        return container[key]
    return None


def slice_(container: Any, start: Any, stop: Any) -> Any:
    if not isinstance(container, str | list | tuple):
        return None
    if not all(bound is None or is_index(bound) for bound in (start, stop)):
        return None
    part = container[start:stop]
    return list(part) if isinstance(part, tuple) else part


def _add(a: Any, b: Any) -> Any:
    if is_num(a) and is_num(b):
        return check_int("+", a + b)
    if (isinstance(a, str) and isinstance(b, str)) or (is_list(a) and is_list(b)):
        check_built("+", weight(a) + weight(b))
        return a + b if isinstance(a, str) else [*a, *b]
    raise op_error("+", a, b)


def _sub(a: Any, b: Any) -> Any:
    if is_num(a) and is_num(b):
        return check_int("-", a - b)
    raise op_error("-", a, b)


def _mul(a: Any, b: Any) -> Any:
    if is_num(a) and is_num(b):
        return check_int("*", a * b)
    if is_index(a) and isinstance(b, str | list | tuple):
        a, b = b, a
    if isinstance(a, str | list | tuple) and is_index(b):
        # [x] * n repeats x by reference; what it weighs is every copy of x, written out.
        check_built("*", weight(a) * max(b, 0))
        return a * b if isinstance(a, str) else list(a) * b
    raise op_error("*", a, b)


def _divide(op: str, func: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def run(a: Any, b: Any) -> Any:
        if not (is_num(a) and is_num(b)):
            raise op_error(op, a, b)
        if b == 0:
            raise ExprRuntimeError(f"division by zero in '{op}'")
        return func(a, b)

    return run


ARITH: Final[Mapping[str, Callable[[Any, Any], Any]]] = MappingProxyType(
    {
        "+": _add,
        "-": _sub,
        "*": _mul,
        "/": _divide("/", lambda a, b: a / b),
        "//": _divide("//", lambda a, b: a // b),
        "%": _divide("%", lambda a, b: a % b),
    }
)


def contains(container: Any, item: Any) -> bool:
    if container is None:
        return False
    if isinstance(container, str):
        if not isinstance(item, str):
            raise ExprRuntimeError(f"'in <string>' needs a string on the left, not {kind(item)}")
        return item in container
    if isinstance(container, Mapping):
        try:
            return item in container
        except TypeError:  # unhashable item
            return False
    if is_list(container):
        return item in container
    raise ExprRuntimeError(
        f"'in' needs a string, list or object on the right, not {kind(container)}"
    )


_ORDER: Final[Mapping[str, Callable[[Any, Any], bool]]] = MappingProxyType(
    {
        "<": lambda a, b: bool(a < b),
        "<=": lambda a, b: bool(a <= b),
        ">": lambda a, b: bool(a > b),
        ">=": lambda a, b: bool(a >= b),
    }
)


def compare(op: str, a: Any, b: Any) -> bool:
    if op == "==":
        return bool(a == b)
    if op == "!=":
        return bool(a != b)
    if op == "in":
        return contains(b, a)
    if op == "not in":
        return not contains(b, a)
    if a is None or b is None:
        return False
    comparable = (
        (is_num(a) and is_num(b))
        or (isinstance(a, str) and isinstance(b, str))
        or (is_list(a) and is_list(b))
    )
    if comparable:
        try:
            return _ORDER[op](a, b)
        except TypeError:  # lists whose items cannot be ordered
            pass
    raise ExprRuntimeError(f"cannot compare {kind(a)} and {kind(b)} with '{op}'")
