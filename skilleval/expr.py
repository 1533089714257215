"""The ``expr`` language: small, safe expressions over a model's output.

Used by the ``expr`` assertion type and by ``transform:``, for example::

    len(output) <= 200 and json.score >= 3

Sources are parsed by a lark LALR grammar and compiled into Python closures. User text is
never handed to Python's own evaluator, and nothing in an expression can reach an object's
attributes: ``a.b`` is a key lookup on data, names and members starting with ``_`` are
rejected at parse time, and only the functions in :data:`FUNCTIONS` can be called.

Reading data is total: a missing key, an index out of range, or any access on ``null``
gives ``null``. Ordering comparisons (``<``, ``<=``, ``>``, ``>=``) involving ``null`` are
false. Genuine type mistakes, such as ``"a" - 1`` or ``len(3)``, raise
:class:`ExprRuntimeError`. The reference is ``docs/expr.md``.
"""

from __future__ import annotations

import difflib
import functools
import json as jsonlib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

__all__ = [
    "FUNCTIONS",
    "MAX_DEPTH",
    "MAX_ITEMS",
    "Expr",
    "ExprError",
    "ExprRuntimeError",
    "ExprSyntaxError",
    "Function",
    "compile_expr",
]

MAX_ITEMS: Final = 1_000_000
"""The longest string or list an operator may build (``"ab" * n``, ``a + b``)."""

MAX_DEPTH: Final = 100
"""How deeply expressions may nest; the compiled closures recurse once per level."""

_Env = Mapping[str, Any]
_Run = Callable[[_Env], Any]

_GRAMMAR: Final = r"""
?start: test

?test: or_test
     | or_test "if" or_test "else" test     -> cond

?or_test: and_test
        | and_test ("or" and_test)+         -> or_
?and_test: not_test
         | not_test ("and" not_test)+       -> and_
?not_test: comparison
         | "not" not_test                   -> not_
?comparison: arith
           | arith (comp_op arith)+         -> compare
!comp_op: "==" | "!=" | "<" | "<=" | ">" | ">=" | "in" | "not" "in"

?arith: term
      | term (add_op term)+                 -> arith
!add_op: "+" | "-"
?term: factor
     | factor (mul_op factor)+              -> arith
!mul_op: "*" | "/" | "//" | "%"
?factor: postfix
       | "-" factor                         -> neg
       | "+" factor                         -> pos

?postfix: atom
        | postfix "." NAME                  -> member
        | postfix "[" test "]"              -> index
        | postfix "[" [test] ":" [test] "]" -> slice

?atom: INT                                  -> int_
     | FLOAT                                -> float_
     | STRING                               -> string
     | ("true" | "True")                    -> true
     | ("false" | "False")                  -> false
     | ("null" | "None")                    -> null
     | NAME                                 -> var
     | NAME "(" [args] ")"                  -> call
     | "[" [args] "]"                       -> list_
     | "(" test ")"

args: test ("," test)* [","]

NAME: /[A-Za-z_][A-Za-z0-9_]*/
INT: /[0-9]+/
FLOAT.2: /[0-9]+\.[0-9]*([eE][+-]?[0-9]+)?|\.[0-9]+([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+/
STRING: /"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'/

%ignore /[ \t\r\n]+/
"""


class ExprError(Exception):
    """Base class for both expression errors."""


class ExprSyntaxError(ExprError):
    """An expression could not be compiled.

    Attributes:
        message: What is wrong, without the position.
        line: 1-based line within the expression source.
        col: 1-based column within that line.
    """

    def __init__(self, message: str, line: int = 1, col: int = 1) -> None:
        # All three go to args so the error survives pickling between worker processes.
        super().__init__(message, line, col)
        self.message = message
        self.line = line
        self.col = col

    def __str__(self) -> str:
        where = f"col {self.col}" if self.line == 1 else f"line {self.line}, col {self.col}"
        return f"{self.message} at {where}"


class ExprRuntimeError(ExprError):
    """An expression failed while it was evaluated, e.g. ``"a" - 1`` or ``len(3)``."""


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class Expr:
    """A compiled expression. Build one with :func:`compile_expr`.

    Attributes:
        source: The text it was compiled from.
        names: The free names it reads (``output``, ``json`` …), for checks at load time.
    """

    source: str
    names: frozenset[str]
    _run: _Run = field(repr=False, compare=False)

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        """Evaluate the expression.

        Args:
            env: The values of the free names, e.g. ``output``, ``json``, ``vars``, ``stats``.

        Returns:
            The value of the expression: null, a bool, number, string, list or mapping.

        Raises:
            ExprRuntimeError: A name is missing from ``env`` or a value has the wrong type.
        """
        try:
            return self._run(env)
        except ExprRuntimeError:
            raise
        except RecursionError as exc:
            raise ExprRuntimeError("value is nested too deeply to evaluate") from exc
        except (TypeError, ValueError, ArithmeticError) as exc:
            # Last line of defence for odd values in env (e.g. a mapping whose == raises).
            raise ExprRuntimeError(f"cannot evaluate: {exc}") from exc


# --------------------------------------------------------------------------- values


def _kind(value: Any) -> str:
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


def _is_num(value: Any) -> bool:
    return isinstance(value, int | float)


def _is_list(value: Any) -> bool:
    return isinstance(value, list | tuple)


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _too_big(op: str, size: int) -> ExprRuntimeError:
    return ExprRuntimeError(f"'{op}' would build {size:,} items; the limit is {MAX_ITEMS:,}")


def _op_error(op: str, a: Any, b: Any) -> ExprRuntimeError:
    return ExprRuntimeError(f"cannot apply '{op}' to {_kind(a)} and {_kind(b)}")


def _get(container: Any, key: Any) -> Any:
    if isinstance(container, Mapping):
        try:
            return container.get(key)
        except TypeError:  # unhashable key
            return None
    if (
        isinstance(container, str | list | tuple)
        and _is_index(key)
        and -len(container) <= key < len(container)
    ):
        return container[key]
    return None


def _slice(container: Any, start: Any, stop: Any) -> Any:
    if not isinstance(container, str | list | tuple):
        return None
    if not all(bound is None or _is_index(bound) for bound in (start, stop)):
        return None
    part = container[start:stop]
    return list(part) if isinstance(part, tuple) else part


def _add(a: Any, b: Any) -> Any:
    if _is_num(a) and _is_num(b):
        return a + b
    if (isinstance(a, str) and isinstance(b, str)) or (_is_list(a) and _is_list(b)):
        if len(a) + len(b) > MAX_ITEMS:
            raise _too_big("+", len(a) + len(b))
        return a + b if isinstance(a, str) else [*a, *b]
    raise _op_error("+", a, b)


def _sub(a: Any, b: Any) -> Any:
    if _is_num(a) and _is_num(b):
        return a - b
    raise _op_error("-", a, b)


def _mul(a: Any, b: Any) -> Any:
    if _is_num(a) and _is_num(b):
        return a * b
    if _is_index(a) and isinstance(b, str | list | tuple):
        a, b = b, a
    if isinstance(a, str | list | tuple) and _is_index(b):
        size = len(a) * max(b, 0)
        if size > MAX_ITEMS:
            raise _too_big("*", size)
        return a * b if isinstance(a, str) else list(a) * b
    raise _op_error("*", a, b)


def _divide(op: str, func: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def run(a: Any, b: Any) -> Any:
        if not (_is_num(a) and _is_num(b)):
            raise _op_error(op, a, b)
        if b == 0:
            raise ExprRuntimeError(f"division by zero in '{op}'")
        return func(a, b)

    return run


_ARITH: Final[Mapping[str, Callable[[Any, Any], Any]]] = MappingProxyType(
    {
        "+": _add,
        "-": _sub,
        "*": _mul,
        "/": _divide("/", lambda a, b: a / b),
        "//": _divide("//", lambda a, b: a // b),
        "%": _divide("%", lambda a, b: a % b),
    }
)


def _contains(container: Any, item: Any) -> bool:
    if container is None:
        return False
    if isinstance(container, str):
        if not isinstance(item, str):
            raise ExprRuntimeError(f"'in <string>' needs a string on the left, not {_kind(item)}")
        return item in container
    if isinstance(container, Mapping):
        try:
            return item in container
        except TypeError:  # unhashable item
            return False
    if _is_list(container):
        return item in container
    raise ExprRuntimeError(
        f"'in' needs a string, list or object on the right, not {_kind(container)}"
    )


_ORDER: Final[Mapping[str, Callable[[Any, Any], bool]]] = MappingProxyType(
    {
        "<": lambda a, b: bool(a < b),
        "<=": lambda a, b: bool(a <= b),
        ">": lambda a, b: bool(a > b),
        ">=": lambda a, b: bool(a >= b),
    }
)


def _compare(op: str, a: Any, b: Any) -> bool:
    if op == "==":
        return bool(a == b)
    if op == "!=":
        return bool(a != b)
    if op == "in":
        return _contains(b, a)
    if op == "not in":
        return not _contains(b, a)
    if a is None or b is None:
        return False
    comparable = (
        (_is_num(a) and _is_num(b))
        or (isinstance(a, str) and isinstance(b, str))
        or (_is_list(a) and _is_list(b))
    )
    if comparable:
        try:
            return _ORDER[op](a, b)
        except TypeError:  # lists whose items cannot be ordered
            pass
    raise ExprRuntimeError(f"cannot compare {_kind(a)} and {_kind(b)} with '{op}'")


# --------------------------------------------------------------------------- functions


def _arg_error(func: str, expected: str, value: Any, position: int = 0) -> ExprRuntimeError:
    where = f" as argument {position}" if position else ""
    return ExprRuntimeError(f"{func}() expects {expected}{where}, got {_kind(value)}")


def _str_arg(func: str, value: Any, position: int = 0) -> str:
    if not isinstance(value, str):
        raise _arg_error(func, "a string", value, position)
    return value


def _list_arg(func: str, value: Any) -> list[Any] | tuple[Any, ...]:
    if not _is_list(value):
        raise _arg_error(func, "a list", value)
    return value  # type: ignore[no-any-return]


def _num_arg(func: str, value: Any, position: int = 0) -> int | float:
    if not _is_num(value):
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
    return _contains(container, item)


def _fn_matches(s: Any, pattern: Any) -> bool:
    text = _str_arg("matches", s, 1)
    try:
        return re.search(_str_arg("matches", pattern, 2), text) is not None
    except re.error as exc:
        raise ExprRuntimeError(f"matches(): invalid regular expression: {exc}") from exc


def _fn_count(haystack: Any, needle: Any) -> int:
    if isinstance(haystack, str):
        return haystack.count(_str_arg("count", needle, 2))
    if _is_list(haystack):
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
        kinds = ", ".join(sorted({_kind(item) for item in items}))
        raise ExprRuntimeError(f"{func}() cannot compare {kinds}") from None


def _fn_min(*args: Any) -> Any:
    return _extreme("min", min, args)


def _fn_max(*args: Any) -> Any:
    return _extreme("max", max, args)


def _fn_sum(values: Any) -> int | float:
    items = _list_arg("sum", values)
    for item in items:
        if not _is_num(item):
            raise ExprRuntimeError(f"sum() expects a list of numbers, found {_kind(item)}")
    total: int | float = sum(items)
    return total


def _fn_round(x: Any, digits: Any = None) -> int | float:
    number = _num_arg("round", x, 1)
    if digits is None:
        return round(number)
    if not _is_index(digits):
        raise _arg_error("round", "an int", digits, 2)
    return round(number, digits)


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
    return jsonlib.dumps(x, ensure_ascii=False, default=_json_default)


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
                _fn_matches, 2, 2, "matches(s, regex)", "regex is found anywhere in s (re.search)"
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


# --------------------------------------------------------------------------- parsing


@functools.cache
def _parser() -> Lark:
    # Positions let the depth check point at the operator that nests too far.
    return Lark(_GRAMMAR, parser="lalr", maybe_placeholders=True, propagate_positions=True)


@functools.cache
def _terminal_texts() -> Mapping[str, str]:
    """Literal text of each punctuation and keyword terminal, for error messages."""
    return {t.name: t.pattern.value for t in _parser().terminals if t.pattern.type == "str"}


_OPERANDS: Final = frozenset({"NAME", "INT", "FLOAT", "STRING"})
_HINTS: Final[Mapping[str, str]] = MappingProxyType(
    {"=": "use '==' to compare", "&": "use 'and'", "|": "use 'or'", "!": "use 'not'"}
)


def _end_position(source: str) -> tuple[int, int]:
    text = source.rstrip()
    lines = text.split("\n")
    return len(lines), len(lines[-1]) + 1


def _describe(token: Token) -> str:
    if token.type == "NAME":
        return f"name {token.value!r}"
    if token.type in ("INT", "FLOAT"):
        return f"number {token.value}"
    if token.type == "STRING":
        return f"string {token.value}"
    return repr(str(token.value))


def _expected(expected: set[str]) -> str:
    if expected == {"NAME"}:
        return "a name"
    if expected & _OPERANDS:
        return "a value"
    texts = _terminal_texts()
    if 0 < len(expected) <= 3 and all(name in texts for name in expected):
        return " or ".join(repr(texts[name]) for name in sorted(expected))
    return ""


def _syntax_error(exc: UnexpectedInput, source: str) -> ExprSyntaxError:
    if isinstance(exc, UnexpectedCharacters):
        pos: int | None = exc.pos_in_stream
        char = source[pos] if pos is not None and 0 <= pos < len(source) else ""
        if char in "\"'":
            return ExprSyntaxError("unterminated string", exc.line, exc.column)
        hint = _HINTS.get(char)
        message = f"unexpected character {char!r}" + (f"; {hint}" if hint else "")
        return ExprSyntaxError(message, exc.line, exc.column)
    if isinstance(exc, UnexpectedToken):
        expected = _expected(set(exc.expected))
        suffix = f"; expected {expected}" if expected else ""
        if exc.token.type == "$END":
            line, col = _end_position(source)
            return ExprSyntaxError("expression ended early" + suffix, line, col)
        return ExprSyntaxError(f"unexpected {_describe(exc.token)}{suffix}", exc.line, exc.column)
    line, col = _end_position(source)
    return ExprSyntaxError("expression ended early", line, col)


_ESCAPES: Final[Mapping[str, str]] = MappingProxyType(
    {"\\": "\\", '"': '"', "'": "'", "n": "\n", "r": "\r", "t": "\t"}
)


def _unquote(token: Token) -> str:
    """Decode a string literal. Unknown escapes stay as written, so ``"\\d+"`` is a regex."""
    body = str(token.value)[1:-1]
    if "\\" not in body:
        return body
    out: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        code = body[i + 1]  # the grammar guarantees a character after every backslash
        if code in _ESCAPES:
            out.append(_ESCAPES[code])
            i += 2
        elif code == "u":
            digits = body[i + 2 : i + 6]
            where = (token.line or 1, (token.column or 1) + 1 + i)
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise ExprSyntaxError("\\u needs four hex digits", *where)
            if 0xD800 <= int(digits, 16) <= 0xDFFF:
                # A lone surrogate cannot be encoded, so reports and caches would fail later.
                raise ExprSyntaxError("\\u escape is a surrogate, not a character", *where)
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(char + code)
            i += 2
    return "".join(out)


def _at(token: Token, message: str) -> ExprSyntaxError:
    return ExprSyntaxError(message, token.line or 1, token.column or 1)


def _first_token(node: Tree[Token] | Token) -> Token | None:
    stack: list[Tree[Token] | Token | None] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Token):
            return item
        if isinstance(item, Tree):
            stack.extend(reversed(item.children))
    return None


def _check_depth(tree: Tree[Token]) -> None:
    # Iterative, so that a too-deep tree is reported instead of overflowing the stack.
    stack: list[tuple[Tree[Token] | Token | None, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, Tree):
            continue
        if depth > MAX_DEPTH:
            message = f"expression is nested too deeply (more than {MAX_DEPTH} levels)"
            if not node.meta.empty:
                raise ExprSyntaxError(message, node.meta.line, node.meta.column)
            token = _first_token(node)
            raise _at(token, message) if token else ExprSyntaxError(message)
        stack.extend((child, depth + 1) for child in node.children)


def _suggest(name: str, known: list[str], what: str) -> str:
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    if close:
        return "did you mean " + " or ".join(repr(c) for c in close) + "?"
    if not known:
        return f"no {what} are defined"
    return f"available {what}: " + ", ".join(sorted(known))


def _check_name(token: Token, what: str) -> str:
    name = str(token.value)
    if name.startswith("_"):
        if what == "member":
            message = (
                f"member names starting with '_' are not allowed: {name!r}"
                f" (write ['{name}'] to read such a key)"
            )
        else:
            message = f"names starting with '_' are not allowed: {name!r}"
        raise _at(token, message)
    return name


class _Compiler:
    """Turns a parse tree into closures; checks names, calls and literals on the way."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def compile(self, node: Tree[Token]) -> _Run:
        return _RULES[str(node.data)](self, node)

    def _many(self, node: Tree[Token] | None) -> list[_Run]:
        """The compiled items of an optional ``args`` node."""
        if node is None:
            return []
        return [self.compile(child) for child in node.children if isinstance(child, Tree)]

    # literals

    def _int_(self, node: Tree[Token]) -> _Run:
        token = node.children[0]
        assert isinstance(token, Token)
        try:
            value = int(token.value)
        except ValueError:  # beyond Python's limit on digits
            raise _at(token, "number is too long") from None
        return lambda env: value

    def _float_(self, node: Tree[Token]) -> _Run:
        token = node.children[0]
        assert isinstance(token, Token)
        value = float(token.value)
        return lambda env: value

    def _string(self, node: Tree[Token]) -> _Run:
        token = node.children[0]
        assert isinstance(token, Token)
        value = _unquote(token)
        return lambda env: value

    def _true(self, node: Tree[Token]) -> _Run:
        return lambda env: True

    def _false(self, node: Tree[Token]) -> _Run:
        return lambda env: False

    def _null(self, node: Tree[Token]) -> _Run:
        return lambda env: None

    def _list_(self, node: Tree[Token]) -> _Run:
        args = node.children[0]
        assert args is None or isinstance(args, Tree)
        items = self._many(args)
        return lambda env: [item(env) for item in items]

    # names, access, calls

    def _var(self, node: Tree[Token]) -> _Run:
        token = node.children[0]
        assert isinstance(token, Token)
        name = _check_name(token, "name")
        self.names.add(name)

        def run(env: _Env) -> Any:
            try:
                return env[name]
            except KeyError:
                known = [str(k) for k in env if not str(k).startswith("_")]
                hint = _suggest(name, known, "names")
                raise ExprRuntimeError(f"unknown name {name!r}; {hint}") from None

        return run

    def _member(self, node: Tree[Token]) -> _Run:
        target, token = node.children
        assert isinstance(target, Tree)
        assert isinstance(token, Token)
        obj = self.compile(target)  # first, so errors are reported left to right
        key = _check_name(token, "member")
        return lambda env: _get(obj(env), key)

    def _index(self, node: Tree[Token]) -> _Run:
        target, key_node = node.children
        assert isinstance(target, Tree)
        assert isinstance(key_node, Tree)
        obj, key = self.compile(target), self.compile(key_node)
        return lambda env: _get(obj(env), key(env))

    def _slice(self, node: Tree[Token]) -> _Run:
        target, start_node, stop_node = node.children
        assert isinstance(target, Tree)
        obj = self.compile(target)
        start = self.compile(start_node) if isinstance(start_node, Tree) else None
        stop = self.compile(stop_node) if isinstance(stop_node, Tree) else None

        def run(env: _Env) -> Any:
            return _slice(obj(env), start(env) if start else None, stop(env) if stop else None)

        return run

    def _call(self, node: Tree[Token]) -> _Run:
        token, args_node = node.children
        assert isinstance(token, Token)
        assert args_node is None or isinstance(args_node, Tree)
        name = _check_name(token, "function")
        func = FUNCTIONS.get(name)
        if func is None:
            raise _at(
                token, f"unknown function {name!r}; {_suggest(name, list(FUNCTIONS), 'functions')}"
            )
        args = self._many(args_node)
        self._check_arity(token, func, len(args))
        if name == "matches" and args_node is not None:
            self._check_literal_regex(args_node)
        impl = func.impl

        def run(env: _Env) -> Any:
            values = [arg(env) for arg in args]
            try:
                return impl(*values)
            except ExprRuntimeError:
                raise
            except (TypeError, ValueError, ArithmeticError) as exc:
                raise ExprRuntimeError(f"{name}(): {exc}") from exc

        return run

    @staticmethod
    def _check_arity(token: Token, func: Function, count: int) -> None:
        low, high = func.min_args, func.max_args
        if low <= count and (high is None or count <= high):
            return
        if high is None:
            wanted = f"at least {low}"
        elif low == high:
            wanted = str(low)
        else:
            wanted = f"{low} to {high}"
        plural = "" if wanted.endswith(" 1") or wanted == "1" else "s"
        raise _at(token, f"{func.name}() takes {wanted} argument{plural}, got {count}")

    @staticmethod
    def _check_literal_regex(args_node: Tree[Token]) -> None:
        pattern = [c for c in args_node.children if isinstance(c, Tree)][1]
        if pattern.data != "string":
            return
        token = pattern.children[0]
        assert isinstance(token, Token)
        try:
            re.compile(_unquote(token))
        except re.error as exc:
            raise _at(token, f"invalid regular expression: {exc}") from None

    # operators

    def _neg(self, node: Tree[Token]) -> _Run:
        return self._unary(node, "-", lambda x: -x)

    def _pos(self, node: Tree[Token]) -> _Run:
        return self._unary(node, "+", lambda x: +x)

    def _unary(self, node: Tree[Token], op: str, func: Callable[[Any], Any]) -> _Run:
        child = node.children[0]
        assert isinstance(child, Tree)
        operand = self.compile(child)

        def run(env: _Env) -> Any:
            value = operand(env)
            if not _is_num(value):
                raise ExprRuntimeError(f"cannot apply unary '{op}' to {_kind(value)}")
            return func(value)

        return run

    def _operators(self, node: Tree[Token]) -> tuple[_Run, list[tuple[str, _Run]]]:
        """Split ``a op b op c`` into ``a`` and ``[(op, b), (op, c)]``."""
        children = [c for c in node.children if isinstance(c, Tree)]
        first = self.compile(children[0])
        rest: list[tuple[str, _Run]] = []
        for op_node, operand in zip(children[1::2], children[2::2], strict=True):
            op = " ".join(str(t.value) for t in op_node.children if isinstance(t, Token))
            rest.append((op, self.compile(operand)))
        return first, rest

    def _arith(self, node: Tree[Token]) -> _Run:
        first, rest = self._operators(node)
        steps = [(op, _ARITH[op], operand) for op, operand in rest]

        def run(env: _Env) -> Any:
            value = first(env)
            for op, func, operand in steps:
                try:
                    value = func(value, operand(env))
                except OverflowError:
                    raise ExprRuntimeError(f"result of '{op}' is too large") from None
            return value

        return run

    def _compare(self, node: Tree[Token]) -> _Run:
        first, rest = self._operators(node)

        def run(env: _Env) -> bool:
            left = first(env)
            for op, operand in rest:
                right = operand(env)
                if not _compare(op, left, right):
                    return False
                left = right
            return True

        return run

    def _not_(self, node: Tree[Token]) -> _Run:
        child = node.children[0]
        assert isinstance(child, Tree)
        operand = self.compile(child)
        return lambda env: not operand(env)

    def _and_(self, node: Tree[Token]) -> _Run:
        operands = self._many(node)

        def run(env: _Env) -> Any:
            value: Any = True
            for operand in operands:
                value = operand(env)
                if not value:
                    return value
            return value

        return run

    def _or_(self, node: Tree[Token]) -> _Run:
        operands = self._many(node)

        def run(env: _Env) -> Any:
            value: Any = False
            for operand in operands:
                value = operand(env)
                if value:
                    return value
            return value

        return run

    def _cond(self, node: Tree[Token]) -> _Run:
        then, test, otherwise = self._many(node)
        return lambda env: then(env) if test(env) else otherwise(env)


_RULES: Final[Mapping[str, Callable[[_Compiler, Tree[Token]], _Run]]] = MappingProxyType(
    {
        "int_": _Compiler._int_,
        "float_": _Compiler._float_,
        "string": _Compiler._string,
        "true": _Compiler._true,
        "false": _Compiler._false,
        "null": _Compiler._null,
        "list_": _Compiler._list_,
        "var": _Compiler._var,
        "member": _Compiler._member,
        "index": _Compiler._index,
        "slice": _Compiler._slice,
        "call": _Compiler._call,
        "neg": _Compiler._neg,
        "pos": _Compiler._pos,
        "arith": _Compiler._arith,
        "compare": _Compiler._compare,
        "not_": _Compiler._not_,
        "and_": _Compiler._and_,
        "or_": _Compiler._or_,
        "cond": _Compiler._cond,
    }
)


def compile_expr(source: str) -> Expr:
    """Parse and check an expression once; evaluate the result many times.

    Results are cached by source text, so compiling the same expression again is cheap.

    Args:
        source: The expression text. It may span several lines.

    Returns:
        The compiled expression.

    Raises:
        ExprSyntaxError: The text is not a valid expression, names something starting with
            ``_``, calls an unknown function, or passes it the wrong number of arguments.
        TypeError: ``source`` is not a string.
    """
    if not isinstance(source, str):
        raise TypeError(f"expression source must be a string, not {type(source).__name__}")
    return _compile(source)


# A plain wrapper keeps compile_expr's signature visible to type checkers; lru_cache hides it.
@functools.lru_cache(maxsize=2048)
def _compile(source: str) -> Expr:
    if not source.strip():
        raise ExprSyntaxError("expression is empty")
    try:
        tree = _parser().parse(source)
    except UnexpectedInput as exc:
        raise _syntax_error(exc, source) from None
    if isinstance(tree, Token):  # defensive: every rule wraps its tokens in a tree
        raise _at(tree, "unexpected input")
    _check_depth(tree)
    compiler = _Compiler()
    run = compiler.compile(tree)
    return Expr(source, frozenset(compiler.names), run)
