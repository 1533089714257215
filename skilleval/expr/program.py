"""A compiled expression: what :func:`~skilleval.expr.compile_expr` returns.

Kept apart from the compiler, so that code that holds or evaluates expressions does not
import the parser (lark) until an expression is compiled.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any

from skilleval.errors import ExprRuntimeError
from skilleval.util.frozen import frozen

__all__ = ["Expr", "Run"]

Run = Callable[[Mapping[str, Any]], Any]
"""An expression compiled to a closure over the values of its free names."""


@frozen
class Expr:
    """A compiled expression. Build one with :func:`compile_expr`.

    Attributes:
        source: The text it was compiled from.
        names: The free names it reads (``output``, ``json`` …), for checks at load time.
    """

    source: str
    names: frozenset[str]
    _run: Run = field(repr=False, compare=False)

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
        except MemoryError:
            # The size limits should make this unreachable; the run goes on if it is not.
            raise ExprRuntimeError("ran out of memory while evaluating") from None
        except (TypeError, ValueError, ArithmeticError) as exc:
            # Last line of defence for odd values in env (e.g. a mapping whose == raises).
            raise ExprRuntimeError(f"cannot evaluate: {exc}") from exc
