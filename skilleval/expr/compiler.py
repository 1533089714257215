"""Compiling ``expr``: a parse tree becomes a tree of Python closures, checked on the way.

Names and members starting with ``_`` are refused, calls must name a function of
:data:`~skilleval.expr.functions.FUNCTIONS` with the right number of arguments, and a
regex written as a literal must compile. Nothing here hands user text to Python's own
evaluator; a member access is a key lookup on data, never an attribute.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

from lark import Token, Tree
from lark.exceptions import UnexpectedInput

from skilleval.errors import ExprRuntimeError, ExprSyntaxError, RegexError
from skilleval.expr.functions import FUNCTIONS, Function
from skilleval.expr.grammar import at, check_depth, parser, syntax_error, unquote
from skilleval.expr.limits import MAX_ITEMS, check_int, too_big, weight
from skilleval.expr.program import Expr, Run
from skilleval.expr.values import ARITH, compare, get, is_num, kind, slice_
from skilleval.sandbox import saferegex

__all__ = ["Expr", "compile_expr"]

_Env = Mapping[str, Any]
_Run = Run


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
        raise at(token, message)
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
            raise at(token, "number is too long") from None
        return lambda env: value

    def _float_(self, node: Tree[Token]) -> _Run:
        token = node.children[0]
        assert isinstance(token, Token)
        value = float(token.value)
        return lambda env: value

    def _string(self, node: Tree[Token]) -> _Run:
        token = node.children[0]
        assert isinstance(token, Token)
        value = unquote(token)
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

        def run(env: _Env) -> list[Any]:
            # Weighed item by item, so a list of many big strings stops at the first too many.
            built: list[Any] = []
            size = 0
            for item in items:
                value = item(env)
                size += 1 + weight(value, MAX_ITEMS - size)
                if size > MAX_ITEMS:
                    raise too_big("[...]", size)
                built.append(value)
            return built

        return run

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
        return lambda env: get(obj(env), key)

    def _index(self, node: Tree[Token]) -> _Run:
        target, key_node = node.children
        assert isinstance(target, Tree)
        assert isinstance(key_node, Tree)
        obj, key = self.compile(target), self.compile(key_node)
        return lambda env: get(obj(env), key(env))

    def _slice(self, node: Tree[Token]) -> _Run:
        target, start_node, stop_node = node.children
        assert isinstance(target, Tree)
        obj = self.compile(target)
        start = self.compile(start_node) if isinstance(start_node, Tree) else None
        stop = self.compile(stop_node) if isinstance(stop_node, Tree) else None

        def run(env: _Env) -> Any:
            return slice_(obj(env), start(env) if start else None, stop(env) if stop else None)

        return run

    def _call(self, node: Tree[Token]) -> _Run:
        token, args_node = node.children
        assert isinstance(token, Token)
        assert args_node is None or isinstance(args_node, Tree)
        name = _check_name(token, "function")
        func = FUNCTIONS.get(name)
        if func is None:
            raise at(
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
        raise at(token, f"{func.name}() takes {wanted} argument{plural}, got {count}")

    @staticmethod
    def _check_literal_regex(args_node: Tree[Token]) -> None:
        pattern = [c for c in args_node.children if isinstance(c, Tree)][1]
        if pattern.data != "string":
            return
        token = pattern.children[0]
        assert isinstance(token, Token)
        try:
            saferegex.compile(unquote(token))
        except RegexError as exc:
            raise at(token, f"invalid regular expression: {exc}") from None

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
            if not is_num(value):
                raise ExprRuntimeError(f"cannot apply unary '{op}' to {kind(value)}")
            return check_int(op, func(value))

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
        steps = [(op, ARITH[op], operand) for op, operand in rest]

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
                if not compare(op, left, right):
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
        tree = parser().parse(source)
    except UnexpectedInput as exc:
        raise syntax_error(exc, source) from None
    if isinstance(tree, Token):  # defensive: every rule wraps its tokens in a tree
        raise at(tree, "unexpected input")
    check_depth(tree)
    compiler = _Compiler()
    run = compiler.compile(tree)
    return Expr(source, frozenset(compiler.names), run)
