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

Modules: :mod:`~skilleval.expr.grammar` (the lark grammar and syntax errors),
:mod:`~skilleval.expr.compiler` (parse tree to closures), :mod:`~skilleval.expr.program`
(the compiled expression), :mod:`~skilleval.expr.values`
(reading data and the operators), :mod:`~skilleval.expr.functions` (the function table) and
:mod:`~skilleval.expr.limits` (how big and deep a value may get).
"""

from __future__ import annotations

from skilleval.errors import ExprError, ExprRuntimeError, ExprSyntaxError
from skilleval.expr.functions import FUNCTIONS, Function
from skilleval.expr.limits import MAX_DEPTH, MAX_INT_DIGITS, MAX_ITEMS
from skilleval.expr.program import Expr

__all__ = [
    "FUNCTIONS",
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_ITEMS",
    "Expr",
    "ExprError",
    "ExprRuntimeError",
    "ExprSyntaxError",
    "Function",
    "compile_expr",
]


def compile_expr(source: str) -> Expr:
    """Parse and check an expression once; evaluate the result many times.

    See :func:`skilleval.expr.compiler.compile_expr`; the compiler and its parser (lark) are
    imported on the first call.
    """
    from skilleval.expr.compiler import compile_expr as compile_  # lazy: start-up time (lark)

    return compile_(source)
