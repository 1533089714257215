"""``transform:`` on a test or an assertion: an expr, a JMESPath query or JavaScript.

Which language a transform is in is decided at load and never guessed at run time:

* ``{expr: ...}``, ``{jmespath: ...}`` and ``{javascript: ...}`` say it outright;
* ``file://transform.js`` (or ``file://transform.js:fn``) is a JavaScript file, CommonJS,
  whose export is called with ``(output, context)``, as in promptfoo;
* a plain string is expr when expr's grammar reads it and it uses nothing only JavaScript
  has: a property of ``output`` (in expr ``output`` is always text, so ``output.countries``
  can only mean JavaScript's), ``context``, ``JSON``, ``Math``, ``parseInt`` and the like.
  Any other string is JavaScript, promptfoo's language for transforms (see
  :func:`language_of`); each is then checked in its language, so an expr mistake is reported
  as an expr error, and a JavaScript one at its line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from skilleval import expr
from skilleval.errors import DiagnosticsError, Location, SkillevalError
from skilleval.expr.functions import FUNCTIONS
from skilleval.suite.context import Loader
from skilleval.suite.model import Transform
from skilleval.suite.yamlio import Document
from skilleval.userfile import display_path, read_text
from skilleval.util import fileref

# Signs that a transform was written in JavaScript, as promptfoo's are: a method call
# (never valid in expr), an arrow, strict equality, JSON.*, a statement.
_JAVASCRIPT = re.compile(r"\.[A-Za-z_]\w*\s*\(|=>|===|!==|\bJSON\.|\bfunction\b|\breturn\b|;\s*$")
EXPR_NAMES = frozenset({"output", "json", "vars", "stats"})
"""The names an expr transform can read."""
JS_GLOBALS = frozenset(
    {
        "parseInt",
        "parseFloat",
        "Number",
        "String",
        "Boolean",
        "isNaN",
        "isFinite",
        "encodeURIComponent",
        "decodeURIComponent",
        "encodeURI",
        "decodeURI",
        "Array",
        "Object",
        "Date",
        "RegExp",
    }
)
"""Global functions a JavaScript transform may call that expr does not have."""
JS_NAMES = frozenset({"context", "JSON", "Math", "undefined", "NaN", "Infinity"} | JS_GLOBALS)
"""Names only JavaScript's transforms have."""
JS_SUFFIXES = (".js", ".cjs")


def compile_transform(
    loader: Loader, raw: Any, doc: Document, at: list[str | int], base: Path | None = None
) -> Transform | None:
    """The transform written at ``at``, or None (with an error when it does not compile).

    ``base`` is the folder of the file that wrote it, for ``file://`` (the suite's folder
    when not given).
    """
    if raw is None:
        return None
    where = doc.at(at)
    if isinstance(raw, str) and fileref.is_ref(raw):
        return _javascript_file(loader, raw, where, base or loader.base)
    if isinstance(raw, str):
        return _plain(loader, raw, where)
    kind, source = next(iter(raw.items()))
    if kind == "jmespath":
        import jmespath  # lazy: start-up time
        from jmespath.exceptions import JMESPathError

        try:
            jmespath.compile(source)
        except JMESPathError as exc:
            loader.error(where, f"transform is not a valid JMESPath query: {exc}")
            return None
        return Transform("jmespath", source, where)
    if kind == "javascript":
        return _javascript(loader, source, where)
    try:
        expr.compile_expr(source)
    except expr.ExprSyntaxError as exc:
        loader.error(where, f"transform: {exc.message} at column {exc.col}")
        return None
    return Transform("expr", source, where)


def _plain(loader: Loader, source: str, where: Location) -> Transform | None:
    from skilleval.sandbox import jsengine  # lazy: start-up time (its worker pool)

    hint = ""
    tree = _expr_tree(source)
    if _reads_as_javascript(tree):
        failure = jsengine.check_inline(source)
        if failure is None:
            return Transform("javascript", source, where)
        if _JAVASCRIPT.search(source) or tree is not None:
            loader.error(where, f"transform: {failure.describe('', inline=True)}")
            return None
        hint = " (a transform is expr, JavaScript, or {jmespath: ...}; see docs/expr.md)"
    try:
        expr.compile_expr(source)
    except expr.ExprSyntaxError as exc:
        loader.error(where, f"transform: {exc.message} at column {exc.col}{hint}")
        return None
    return Transform("expr", source, where)


def language_of(source: str) -> Literal["expr", "javascript"]:
    """Which language a plain string transform is written in (see the module docstring).

    Decided from expr's own parse: text its grammar cannot read is JavaScript; text it can
    read is JavaScript only when it reads a property of ``output``, or calls or names
    something that JavaScript has and expr does not (``parseInt(output)``,
    ``context.vars``). Anything else is expr, so that an expr mistake (``uper(output)``, a
    bad regex in ``matches``) is reported as one.
    """
    return "javascript" if _reads_as_javascript(_expr_tree(source)) else "expr"


def _expr_tree(source: str) -> Any:
    """expr's parse tree of ``source``, or None when its grammar cannot read it."""
    from lark.exceptions import UnexpectedInput  # lazy: start-up time

    from skilleval.expr.grammar import parser  # lazy: start-up time (lark)

    try:
        return parser().parse(source)
    except UnexpectedInput:
        return None


def _reads_as_javascript(tree: Any) -> bool:
    """:func:`language_of` on a tree from :func:`_expr_tree`."""
    from lark import Tree  # lazy: start-up time

    if tree is None:
        return True
    for node in tree.iter_subtrees():
        head = node.children[0] if node.children else None
        if node.data == "member" and isinstance(head, Tree) and head.data == "var":
            if str(head.children[0]) == "output":
                return True
        elif (node.data == "call" and str(head) not in FUNCTIONS and str(head) in JS_GLOBALS) or (
            node.data == "var" and str(head) not in EXPR_NAMES and str(head) in JS_NAMES
        ):
            return True
    return False


def _javascript(loader: Loader, source: Any, where: Location) -> Transform | None:
    from skilleval.sandbox import jsengine  # lazy: start-up time (its worker pool)

    failure = jsengine.check_inline(str(source))
    if failure is not None:
        loader.error(where, f"transform: {failure.describe('', inline=True)}")
        return None
    return Transform("javascript", str(source), where)


def _javascript_file(loader: Loader, ref: str, where: Location, base: Path) -> Transform | None:
    parsed = fileref.parse(ref)
    if not parsed.path.endswith(JS_SUFFIXES):
        loader.error(where, f"transform files must be JavaScript (.js or .cjs, CommonJS): {ref}")
        return None
    try:
        path = loader.reader.paths(ref, base, where)[0]
    except DiagnosticsError as exc:
        loader.absorb(exc)
        return None
    problem = javascript_file_problem(path, where)
    if problem is not None:
        loader.error(*problem)
        return None
    target = fileref.PREFIX + str(path.resolve())
    if parsed.function:
        target += f":{parsed.function}"
    return Transform("javascript", target, where)


def javascript_file_problem(path: Path, where: Location) -> tuple[Location, str] | None:
    """The syntax error in a JavaScript file, at its line, or None; the file is not run."""
    from skilleval.sandbox import jsengine  # lazy: start-up time (its worker pool)

    try:
        source = read_text(path, where=where)
    except SkillevalError as exc:
        return where, str(exc)
    failure = jsengine.check_module(source)
    if failure is None:
        return None
    shown = display_path(path)
    if failure.kind == "syntax" and failure.line:
        return Location(shown, failure.line, 1), f"JavaScript syntax error: {failure.message}"
    return where, failure.describe(shown)


def run_javascript(transform: Transform, value: Any, context: dict[str, Any]) -> Any:
    """Run a JavaScript transform on ``value`` (the output, or an earlier transform's result).

    Raises:
        ValueError: The code failed or returned ``undefined``; the message says where.
    """
    from skilleval.sandbox import jsengine  # lazy: start-up time (its worker pool)

    if fileref.is_ref(transform.source):
        parsed = fileref.parse(transform.source)
        path = Path(parsed.path)
        shown = display_path(path)
        try:
            source = read_text(path)
        except SkillevalError as exc:
            raise ValueError(str(exc)) from None
        outcome = jsengine.call_module(source, parsed.function, [value, context])
        label, inline = shown, False
    else:
        outcome = jsengine.call_inline(transform.source, [value, context])
        label, inline = str(transform.where), True
    if outcome.failure is not None:
        raise ValueError(outcome.failure.describe(label, inline=inline))
    if outcome.undefined:
        raise ValueError(f"the JavaScript transform at {transform.where} returned undefined")
    return outcome.value
