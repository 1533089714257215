"""The function table of ``expr``: the only things an expression can call.

Each entry is a :class:`Function` with its arity and the line the documentation shows;
``docs/expr.md`` lists every one, and a test keeps the two in step. Functions receive
evaluated arguments and raise :class:`ExprRuntimeError` for a wrong type or a limit.
"""

from __future__ import annotations

import json as jsonlib
import math
from collections.abc import Callable, Mapping
from dataclasses import field
from types import MappingProxyType
from typing import Any, Final

from skilleval.errors import ExprRuntimeError, RegexError, RegexTimeoutError
from skilleval.expr.limits import MAX_INT_DIGITS, MAX_ITEMS, check_built, check_int, weight
from skilleval.expr.values import contains, is_index, is_list, is_num, kind
from skilleval.sandbox import saferegex
from skilleval.util.frozen import frozen

__all__ = ["FUNCTIONS", "Function"]


@frozen
class Function:
    """One whitelisted function.

    Attributes:
        name: The name expressions call it by.
        impl: The implementation; receives already evaluated arguments.
        min_args: Fewest arguments accepted.
        max_args: Most arguments accepted; None for no limit.
        signature: How the documentation shows the call, e.g. ``count(s, sub)``.
        summary: One line for the documentation.
    """

    name: str
    impl: Callable[..., Any] = field(repr=False)
    min_args: int
    max_args: int | None
    signature: str
    summary: str


def _arg_error(func: str, expected: str, value: Any, position: int = 0) -> ExprRuntimeError:
    where = f" as argument {position}" if position else ""
    return ExprRuntimeError(f"{func}() expects {expected}{where}, got {kind(value)}")


def _str_arg(func: str, value: Any, position: int = 0) -> str:
    if not isinstance(value, str):
        raise _arg_error(func, "a string", value, position)
    return value


def _list_arg(func: str, value: Any) -> list[Any] | tuple[Any, ...]:
    if not is_list(value):
        raise _arg_error(func, "a list", value)
    return value  # type: ignore[no-any-return]


def _num_arg(func: str, value: Any, position: int = 0) -> int | float:
    if not is_num(value):
        raise _arg_error(func, "a number", value, position)
    return value  # type: ignore[no-any-return]


def _map_arg(func: str, value: Any) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise _arg_error(func, "an object", value)
    return value


def _fn_len(value: Any) -> int:
    if isinstance(value, str | list | tuple | Mapping):
        return len(value)
    raise _arg_error("len", "a string, list or object", value)


def _fn_lower(s: Any) -> str:
    return _str_arg("lower", s).lower()


def _fn_upper(s: Any) -> str:
    return _str_arg("upper", s).upper()


def _fn_strip(s: Any) -> str:
    return _str_arg("strip", s).strip()


def _fn_startswith(s: Any, prefix: Any) -> bool:
    return _str_arg("startswith", s, 1).startswith(_str_arg("startswith", prefix, 2))


def _fn_endswith(s: Any, suffix: Any) -> bool:
    return _str_arg("endswith", s, 1).endswith(_str_arg("endswith", suffix, 2))


def _fn_contains(container: Any, item: Any) -> bool:
    return contains(container, item)


def _fn_matches(s: Any, pattern: Any) -> bool:
    text = _str_arg("matches", s, 1)
    try:
        return saferegex.search(_str_arg("matches", pattern, 2), text) is not None
    except RegexError as exc:
        raise ExprRuntimeError(f"matches(): invalid regular expression: {exc}") from exc
    except RegexTimeoutError as exc:
        raise ExprRuntimeError(f"matches(): {exc}") from exc


def _fn_count(haystack: Any, needle: Any) -> int:
    if isinstance(haystack, str):
        return haystack.count(_str_arg("count", needle, 2))
    if is_list(haystack):
        return haystack.count(needle)  # type: ignore[no-any-return]
    raise _arg_error("count", "a string or list", haystack, 1)


def _fn_words(s: Any) -> int:
    return len(_str_arg("words", s).split())


def _fn_lines(s: Any) -> int:
    return len(_str_arg("lines", s).splitlines())


def _fn_abs(x: Any) -> int | float:
    return abs(_num_arg("abs", x))


def _extreme(func: str, pick: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    items = _list_arg(func, args[0]) if len(args) == 1 else args
    if not items:
        raise ExprRuntimeError(f"{func}() of an empty list")
    try:
        return pick(items)
    except TypeError:
        kinds = ", ".join(sorted({kind(item) for item in items}))
        raise ExprRuntimeError(f"{func}() cannot compare {kinds}") from None


def _fn_min(*args: Any) -> Any:
    return _extreme("min", min, args)


def _fn_max(*args: Any) -> Any:
    return _extreme("max", max, args)


def _fn_sum(values: Any) -> int | float:
    items = _list_arg("sum", values)
    for item in items:
        if not is_num(item):
            raise ExprRuntimeError(f"sum() expects a list of numbers, found {kind(item)}")
    total: int | float = sum(items)
    return check_int("sum", total)


def _fn_round(x: Any, digits: Any = None) -> int | float:
    number = _num_arg("round", x, 1)
    if digits is None:
        return round(number)
    if not is_index(digits):
        raise _arg_error("round", "an int", digits, 2)
    places: int = digits
    if isinstance(number, int):
        # round(10, -1000000000) would compute 10**1000000000 first. Below an integer's
        # own length every result is 0, so a bound past the longest integer changes nothing.
        check_int("round", number)
        return check_int("round", round(number, max(places, -(MAX_INT_DIGITS + 1))))
    return round(number, places)  # floats stop at their own range; Python checks that


def _fn_int(x: Any) -> int:
    if isinstance(x, str):
        try:
            return int(x.strip())
        except ValueError:
            raise ExprRuntimeError(f"int() cannot parse {x[:40]!r}") from None
    return int(_num_arg("int", x))


def _fn_float(x: Any) -> float:
    if isinstance(x, str):
        try:
            return float(x.strip())
        except ValueError:
            raise ExprRuntimeError(f"float() cannot parse {x[:40]!r}") from None
    return float(_num_arg("float", x))


def _fn_str(x: Any) -> str:
    if isinstance(x, str):
        return x
    if isinstance(x, int | float) and not isinstance(x, bool):
        return str(x)
    # Everything else prints the way the language writes it: true, null, [1, 2], {"a": 1}.
    # Weighed first: str(['a' * 1000000] * 1000000) must fail now, not after writing 1 TB.
    check_built("str", weight(x))
    text = jsonlib.dumps(x, ensure_ascii=False, default=_json_default)
    if len(text) > MAX_ITEMS:
        raise ExprRuntimeError(
            f"str() would build {len(text):,} characters; the limit is {MAX_ITEMS:,}"
        )
    return text


def _json_default(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) else str(value)


def _fn_bool(x: Any) -> bool:
    return bool(x)


def _fn_any(values: Any) -> bool:
    return any(_list_arg("any", values))


def _fn_all(values: Any) -> bool:
    return all(_list_arg("all", values))


def _fn_keys(obj: Any) -> list[Any]:
    return list(_map_arg("keys", obj).keys())


def _fn_values(obj: Any) -> list[Any]:
    return list(_map_arg("values", obj).values())


def _fn_number(x: Any) -> int | float | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if not isinstance(x, str):
        return None
    text = x.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _fn_json(s: Any) -> Any:
    try:
        return jsonlib.loads(_str_arg("json", s))
    except (ValueError, RecursionError):
        return None


def _function(
    impl: Callable[..., Any], min_args: int, max_args: int | None, signature: str, summary: str
) -> Function:
    return Function(signature.partition("(")[0], impl, min_args, max_args, signature, summary)


FUNCTIONS: Final[Mapping[str, Function]] = MappingProxyType(
    {
        f.name: f
        for f in (
            _function(_fn_len, 1, 1, "len(x)", "length of a string, list or object"),
            _function(_fn_lower, 1, 1, "lower(s)", "lower-case copy of a string"),
            _function(_fn_upper, 1, 1, "upper(s)", "upper-case copy of a string"),
            _function(_fn_strip, 1, 1, "strip(s)", "string without leading and trailing space"),
            _function(_fn_startswith, 2, 2, "startswith(s, prefix)", "s starts with prefix"),
            _function(_fn_endswith, 2, 2, "endswith(s, suffix)", "s ends with suffix"),
            _function(_fn_contains, 2, 2, "contains(a, b)", "same as `b in a`"),
            _function(
                _fn_matches,
                2,
                2,
                "matches(s, regex)",
                "regex is found anywhere in s (re.search, with a time limit)",
            ),
            _function(
                _fn_count,
                2,
                2,
                "count(s, sub)",
                "occurrences of sub in a string, or of an item in a list",
            ),
            _function(_fn_words, 1, 1, "words(s)", "number of whitespace-separated words"),
            _function(_fn_lines, 1, 1, "lines(s)", "number of lines"),
            _function(_fn_abs, 1, 1, "abs(x)", "absolute value"),
            _function(_fn_min, 1, None, "min(list) / min(a, b, ...)", "smallest item"),
            _function(_fn_max, 1, None, "max(list) / max(a, b, ...)", "largest item"),
            _function(_fn_sum, 1, 1, "sum(list)", "sum of a list of numbers"),
            _function(
                _fn_round, 1, 2, "round(x, digits)", "round half to even; an int without digits"
            ),
            _function(_fn_int, 1, 1, "int(x)", "number or numeric string to int, truncating"),
            _function(_fn_float, 1, 1, "float(x)", "number or numeric string to float"),
            _function(_fn_str, 1, 1, "str(x)", "text form; null, bools and containers as JSON"),
            _function(_fn_bool, 1, 1, "bool(x)", "truthiness: false for null, 0, '' and empties"),
            _function(_fn_any, 1, 1, "any(list)", "some item is truthy"),
            _function(_fn_all, 1, 1, "all(list)", "every item is truthy"),
            _function(_fn_keys, 1, 1, "keys(obj)", "list of an object's keys"),
            _function(_fn_values, 1, 1, "values(obj)", "list of an object's values"),
            _function(_fn_number, 1, 1, "number(x)", "the number in a string or number, else null"),
            _function(_fn_json, 1, 1, "json(s)", "parse a JSON string; null when invalid"),
        )
    }
)
"""The whitelist of callable functions, by name."""
