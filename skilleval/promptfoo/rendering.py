"""promptfoo's rendering rules: a value printed into a template as Nunjucks prints it.

promptfoo renders with Nunjucks, which prints JavaScript's ``String(value)``: ``true``,
nothing for ``null``, ``1`` for ``1.0``, a list joined with commas and a mapping as
``[object Object]``. The suite's templates (:mod:`skilleval.suite.template`) print a
promptfoo config's vars this way; the renderings are pinned from promptfoo 0.123.1
(``tests/data/promptfoo/var-rendering/``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import jinja2

__all__ = ["NunjucksVars", "js_json", "js_number", "js_string", "nunjucks_finalize"]


class NunjucksVars(dict[str, Any]):
    """A promptfoo config's vars: rendering prints their values as Nunjucks does, and the
    config's ``nunjucksFilters`` are there (:attr:`filters`, set by the loader)."""

    __slots__ = ("filters",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.filters: Mapping[str, Callable[..., Any]] = {}


def js_number(value: float) -> str:
    """A number as JavaScript's ``String(number)`` writes it (``1.0`` is ``1``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if abs(value) < 10**21:
            return str(value)
        value = float(value)
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    # The shortest digits that read back as the same double: Python's repr and JavaScript
    # choose the same ones; only where the exponent form starts differs.
    sign = "-" if value < 0 else ""
    head, _, exp = repr(abs(value)).partition("e")
    whole, _, frac = head.partition(".")
    digits = (whole + frac).lstrip("0")
    scale = int(exp or 0) - len(frac)  # the value is int(digits) × 10^scale
    stripped = digits.rstrip("0")
    scale += len(digits) - len(stripped)
    digits = stripped
    k = len(digits)
    n = k + scale  # the value is 0.DIGITS × 10^n
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    e = n - 1
    tail = ("." + digits[1:]) if k > 1 else ""
    return f"{sign}{digits[0]}{tail}e{'+' if e >= 0 else '-'}{abs(e)}"


def js_string(value: Any) -> str:
    """``String(value)`` in JavaScript, for the values YAML and JSON give."""
    if value is None or isinstance(value, jinja2.Undefined):
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):
        return js_number(value)
    if isinstance(value, (list, tuple)):
        # Array.prototype.join: null and undefined items are empty.
        return ",".join("" if v is None else js_string(v) for v in value)
    if isinstance(value, Mapping):
        return "[object Object]"
    return str(value)


def js_json(value: Any) -> str:
    """``JSON.stringify(value)`` for the values YAML and JSON give: compact, ``1.0`` as ``1``."""
    if isinstance(value, Mapping):
        items = (f"{json.dumps(str(k), ensure_ascii=False)}:{js_json(v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(js_json(v) for v in value) + "]"
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return "null"
    if isinstance(value, (bool, int, float)):
        return js_number(value)
    if value is None:
        return "null"
    return json.dumps(str(value), ensure_ascii=False)


def nunjucks_finalize(value: Any) -> Any:
    """How Nunjucks prints a value into a template: ``String(value)``, nothing for null."""
    return value if isinstance(value, str) else js_string(value)
