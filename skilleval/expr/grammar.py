"""The grammar of ``expr``, its parser, and syntax errors people can act on.

The grammar is a lark LALR grammar. Parse errors are translated into one sentence with a
line and column inside the expression, with a hint for the usual slips: ``=`` for ``==``,
``&&``, ``||``, ``!``, and method calls written the JavaScript or Python way
(``output.toUpperCase()``), which ``expr`` spells as function calls (``upper(output)``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from skilleval.errors import ExprSyntaxError
from skilleval.expr.limits import MAX_DEPTH

GRAMMAR: Final = r"""
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


@functools.cache
def parser() -> Lark:
    # Positions let the depth check point at the operator that nests too far.
    return Lark(GRAMMAR, parser="lalr", maybe_placeholders=True, propagate_positions=True)


@functools.cache
def _terminal_texts() -> Mapping[str, str]:
    """Literal text of each punctuation and keyword terminal, for error messages."""
    return {t.name: t.pattern.value for t in parser().terminals if t.pattern.type == "str"}


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


def syntax_error(exc: UnexpectedInput, source: str) -> ExprSyntaxError:
    if isinstance(exc, UnexpectedCharacters):
        pos: int | None = exc.pos_in_stream
        char = source[pos] if pos is not None and 0 <= pos < len(source) else ""
        if char in "\"'":
            return ExprSyntaxError("unterminated string", exc.line, exc.column)
        hint = _HINTS.get(char)
        message = f"unexpected character {char!r}" + (f"; {hint}" if hint else "")
        return ExprSyntaxError(message, exc.line, exc.column)
    if isinstance(exc, UnexpectedToken):
        method = _method_hint(exc.token, source)
        if method:
            return ExprSyntaxError(method, exc.line, exc.column)
        expected = _expected(set(exc.expected))
        suffix = f"; expected {expected}" if expected else ""
        if exc.token.type == "$END":
            line, col = _end_position(source)
            return ExprSyntaxError("expression ended early" + suffix, line, col)
        return ExprSyntaxError(f"unexpected {_describe(exc.token)}{suffix}", exc.line, exc.column)
    line, col = _end_position(source)
    return ExprSyntaxError("expression ended early", line, col)


# Methods people reach for, from JavaScript and Python, and the expr function for each.
_METHODS: Final[Mapping[str, tuple[str, int]]] = MappingProxyType(
    {
        "toUpperCase": ("upper", 1),
        "upper": ("upper", 1),
        "toLowerCase": ("lower", 1),
        "lower": ("lower", 1),
        "trim": ("strip", 1),
        "strip": ("strip", 1),
        "startsWith": ("startswith", 2),
        "startswith": ("startswith", 2),
        "endsWith": ("endswith", 2),
        "endswith": ("endswith", 2),
        "includes": ("contains", 2),
        "match": ("matches", 2),
        "count": ("count", 2),
        "keys": ("keys", 1),
        "values": ("values", 1),
        "parse": ("json", 1),
    }
)
_CALLED_MEMBER: Final = re.compile(r"([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*$")


def _method_hint(token: Token, source: str) -> str | None:
    """Explain ``output.toUpperCase()``: expr calls functions, it has no methods."""
    if token.value != "(" or token.start_pos is None:
        return None
    found = _CALLED_MEMBER.search(source[: token.start_pos])
    if found is None or "." not in found.group(1):
        return None
    receiver, _, method = found.group(1).rpartition(".")
    written = f"{found.group(1)}(...)"
    if receiver == "JSON" and method == "parse":
        return f"{written} is JavaScript; in expr, write json(...)"
    func, arity = _METHODS.get(method, ("", 0))
    if not func or receiver == "JSON":
        return (
            f"{written} calls a method, and expr has none: call one of its functions"
            " instead, such as upper(output) (see docs/expr.md)"
        )
    equivalent = f"{func}({receiver})" if arity == 1 else f"{func}({receiver}, ...)"
    return f"{written} calls a method, and expr has none: write {equivalent}"


_ESCAPES: Final[Mapping[str, str]] = MappingProxyType(
    {"\\": "\\", '"': '"', "'": "'", "n": "\n", "r": "\r", "t": "\t"}
)


def unquote(token: Token) -> str:
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


def at(token: Token, message: str) -> ExprSyntaxError:
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


def check_depth(tree: Tree[Token]) -> None:
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
            raise at(token, message) if token else ExprSyntaxError(message)
        stack.extend((child, depth + 1) for child in node.children)
