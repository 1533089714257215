"""promptfoo's ``derivedMetrics``: named formulas over the suite's named metrics.

Each entry is ``{name, value}``; ``value`` is an ``expr`` formula (docs/expr.md) over the
metrics the assertions name with ``metric:``, each standing for its total over an arm's
results as in promptfoo, and ``__count`` (also ``count``), the number of results. A later
entry may read an earlier one. A formula expr cannot read is taken as JavaScript, as promptfoo
takes it: the metrics are variables and ``namedScores``, and it runs in the sandbox of
:mod:`skilleval.sandbox.jsengine`; its syntax is checked at load.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from skilleval import expr
from skilleval.suite.context import Loader
from skilleval.suite.model import DerivedMetric
from skilleval.suite.yamlio import Document

COUNT = "count"
"""The name a formula reads the number of results by (promptfoo's ``__count``)."""
_PROMPTFOO_COUNT = re.compile(r"(?<![\w.'\"])__count(?!\w)")
_JAVASCRIPT = re.compile(r"\bfunction\b|=>|\breturn\b|===|!==|&&|\|\||\bnamedScores\b|;")


_FUNCTION = re.compile(r"^\s*(async\s+)?(function\b|\([^()]*\)\s*=>|\w+\s*=>)")


def js_body(source: str) -> str:
    """A JavaScript formula as the code the sandbox runs: a function (promptfoo's
    ``function (namedScores, context) {…}``) is called with the metrics and ``{count}``;
    anything else is an expression or a body over the metric names."""
    if _FUNCTION.match(source):
        return f"({source.strip().rstrip(';')})(namedScores, {{count: __count, __count: __count}})"
    return source


def derived_metrics(
    loader: Loader, doc: Document, metrics: Iterable[str]
) -> tuple[DerivedMetric, ...]:
    """The suite's ``derivedMetrics``, each checked against the metrics the tests name."""
    raw = doc.data.get("derivedMetrics")
    if not isinstance(raw, list):
        return ()
    known = set(metrics)
    out: list[DerivedMetric] = []
    for i, entry in enumerate(raw):
        if ("derivedMetrics", i) in loader.skipped or not isinstance(entry, dict):
            continue
        name, source = str(entry.get("name", "")), str(entry.get("value", ""))
        where = doc.at(["derivedMetrics", i, "value"])
        if name == COUNT or name in known:
            what = "the result count" if name == COUNT else "an assertion's metric"
            loader.error(
                doc.at(["derivedMetrics", i, "name"]),
                f"derived metric '{name}' has the name of {what}: choose another",
            )
            continue
        try:
            formula = expr.compile_expr(_PROMPTFOO_COUNT.sub(COUNT, source))
        except expr.ExprSyntaxError as exc:
            if not _JAVASCRIPT.search(source):
                loader.error(where, f"derived metric '{name}': {exc.message} at column {exc.col}")
                continue
            # lazy: start-up time (the JavaScript engine's pool, for JavaScript formulas only)
            from skilleval.sandbox.jsengine import check_inline

            failure = check_inline(js_body(source), ("namedScores", "__count", *sorted(known)))
            if failure is not None:
                loader.error(
                    where,
                    f"derived metric '{name}': {failure.describe('the formula', inline=True)}",
                )
                continue
            out.append(DerivedMetric(name, source, "javascript", None, where))
            known.add(name)
            continue
        unknown = sorted(formula.names - known - {COUNT})
        if unknown:
            close = difflib.get_close_matches(unknown[0], sorted(known), n=1, cutoff=0.6)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            listed = ", ".join(sorted(known)) or "none"
            loader.error(
                where,
                f"derived metric '{name}' reads '{unknown[0]}', neither an assertion's `metric:`"
                f" nor an earlier derived metric (known: {listed}){hint}",
            )
            continue
        out.append(DerivedMetric(name, source, "expr", formula, where))
        known.add(name)
    return tuple(out)
