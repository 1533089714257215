"""How big a value an expression may build, and how deep it may nest.

Expressions have no loops, but a few operators still multiply: ``'a' * 1000000`` builds a
string, ``[x] * 1000000`` repeats a big ``x`` by reference, and ``str(...)`` of that writes
every copy out. Each value an operator builds is weighed before, or while, it is built, so a
blow-up fails at once with a message instead of growing to gigabytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, TypeVar

from skilleval.errors import ExprRuntimeError

MAX_ITEMS: Final = 1_000_000
"""The largest value an operator may build: the characters of a string, or the items of a
list plus what its items weigh in turn (``[s, s]`` weighs 2 plus twice the length of ``s``;
``[1, 2]`` weighs 2)."""

MAX_DEPTH: Final = 100
"""How deeply expressions may nest; the compiled closures recurse once per level."""

MAX_INT_DIGITS: Final = 4300
"""The most decimal digits an integer may have: Python's own limit for turning an integer
into text, so every result can still be printed, reported and written to results.json."""

_INT_LIMIT: Final = 10**MAX_INT_DIGITS

_T = TypeVar("_T")


def too_big(op: str, size: int) -> ExprRuntimeError:
    return ExprRuntimeError(f"'{op}' would build {size:,} items; the limit is {MAX_ITEMS:,}")


def weight(value: Any, budget: int = MAX_ITEMS) -> int:
    """Characters plus items in ``value``, counted through lists and objects.

    Stops counting once the total passes ``budget`` (the answer is then only "too much"),
    and counts a container that appears many times, as in ``[x] * n``, by its first visit's
    weight, so weighing is never slower than building.
    """
    seen: dict[int, int] = {}
    return _weigh(value, budget, seen)


def _weigh(value: Any, budget: int, seen: dict[int, int]) -> int:
    if isinstance(value, str):
        return len(value)
    if not isinstance(value, list | tuple | Mapping):
        return 0  # a number, bool or null counts only as an item of its list
    key = id(value)
    if key in seen:
        return seen[key]
    items = value.items() if isinstance(value, Mapping) else value
    total = len(value)
    # Iterating items one level at a time; nesting is bounded by the data's own depth.
    for item in items:
        if total > budget:
            break
        if isinstance(item, tuple) and isinstance(value, Mapping):
            total += _weigh(item[0], budget - total, seen) + _weigh(item[1], budget - total, seen)
        else:
            total += _weigh(item, budget - total, seen)
    seen[key] = total
    return total


def check_built(op: str, size: int) -> None:
    """Refuse a value of ``size`` (see :func:`weight`) that ``op`` is about to build."""
    if size > MAX_ITEMS:
        raise too_big(op, size)


def check_int(op: str, value: _T) -> _T:
    """Refuse an integer result of ``op`` with more than :data:`MAX_INT_DIGITS` digits."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _INT_LIMIT:
        raise ExprRuntimeError(
            f"result of '{op}' has more than {MAX_INT_DIGITS:,} digits, the limit for a number"
        )
    return value
