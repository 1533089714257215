"""Turning whatever a custom check returned into a :class:`Verdict`.

The ``python`` assertion and plugin types return values of several shapes; both go through
:func:`normalize_result`, so the same return means the same verdict everywhere. The rules follow
promptfoo's ``normalizeScriptResult`` except that a string is an error rather than a verdict.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from collections.abc import Mapping
from typing import Any

from skilleval.api import Verdict

_SHAPES = "a bool, a number, a mapping with pass/score/reason, or a Verdict"
_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])([A-Z])")


def normalize_result(obj: Any, threshold: float | None = None, *, label: str = "check") -> Verdict:
    """The verdict a custom check's return value stands for.

    Args:
        obj: What the check returned.
            * A :class:`Verdict` is kept as it is.
            * ``True``/``False`` pass or fail.
            * A number is the score: it passes when ≥ ``threshold`` if one is given, else
              when > 0. Scores outside 0..1 are clamped for the verdict.
            * A mapping with ``pass`` (or ``passed``), ``score`` and ``reason``, each optional
              but one of the first two needed. Without ``pass``, the score decides as for a
              number; a score below ``threshold`` fails even when ``pass`` is true. Other keys
              go to ``details`` with snake_case names (``namedScores`` → ``named_scores``).
            * Anything else, strings and None included, is an error verdict naming its type.
        threshold: The assertion's ``threshold:``, when given.
        label: What returned ``obj``, as reasons should name it (``python``, ``get_assert``).

    Returns:
        The verdict; its ``error`` is set when ``obj`` has none of the shapes above.
    """
    if isinstance(obj, Verdict):
        return checked_verdict(obj, label)
    if isinstance(obj, bool):
        return Verdict.of(obj, f"{label} returned {'true' if obj else 'false'}")
    if _is_number(obj):
        number = _finite(obj)
        if number is None:
            return Verdict.errored(f"{label} returned {_number_text(obj)} as its score")
        return _from_score(number, threshold, label)
    if isinstance(obj, Mapping):
        return checked_verdict(_from_mapping(obj, threshold, label), label)
    return Verdict.errored(f"{label} returned {_type_name(obj)}; expected {_SHAPES}")


def checked_verdict(verdict: Verdict, label: str = "check") -> Verdict:
    """``verdict`` when every field has the type the contract says, else an error verdict.

    A check builds its Verdict itself, so nothing stops ``Verdict(passed="maybe")`` or
    ``Verdict(score=float("nan"))``; written as they are, they would end the run or put a
    bare ``NaN`` into results.json. Each such field becomes an ``error`` naming it.
    """
    problem = _verdict_problem(verdict)
    if problem is None:
        return verdict
    return Verdict.errored(f"{label} returned a Verdict whose {problem}")


def _verdict_problem(verdict: Verdict) -> str | None:
    # Typed as Any: the annotations say what a Verdict should hold, not what a plugin put in.
    passed: Any = verdict.passed
    score: Any = verdict.score
    reason: Any = verdict.reason
    error: Any = verdict.error
    details: Any = verdict.details
    if not isinstance(passed, bool):
        return f"'passed' is {_type_name(passed)}; expected true or false"
    if score is not None:
        if not _is_number(score):
            return f"'score' is {_type_name(score)}; expected a number from 0 to 1"
        number = _finite(score)
        if number is None or not 0.0 <= number <= 1.0:
            return f"'score' is {_number_text(score)}; expected a number from 0 to 1"
    if not isinstance(reason, str):
        return f"'reason' is {_type_name(reason)}; expected a text"
    if error is not None and not isinstance(error, str):
        return f"'error' is {_type_name(error)}; expected a text or None"
    if not isinstance(details, Mapping):
        return f"'details' is {_type_name(details)}; expected a mapping"
    try:
        json.dumps(details, allow_nan=False, default=_refuse)
    except (TypeError, ValueError, RecursionError) as exc:
        return f"'details' cannot be written as JSON ({exc})"
    return None


def _refuse(value: Any) -> Any:
    raise TypeError(f"{_type_name(value)} is not JSON")


def _finite(number: Any) -> float | None:
    """``number`` as a float, or None when it is NaN, infinite or too large for a float."""
    try:
        value = float(number)
    except (OverflowError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _number_text(number: Any) -> str:
    if isinstance(number, int) and not isinstance(number, bool):
        if number.bit_length() <= 64:
            return str(number)
        # str() refuses integers over 4,300 digits; the bit length gives the size without it.
        return f"an integer of about {int(number.bit_length() * math.log10(2)) + 1} digits"
    if isinstance(number, float) and math.isnan(number):
        return "NaN"
    if isinstance(number, float) and math.isinf(number):
        return "infinity" if number > 0 else "-infinity"
    return repr(number)


def _is_number(obj: Any) -> bool:
    return isinstance(obj, numbers.Real) and not isinstance(obj, bool)


def _type_name(obj: Any) -> str:
    if obj is None:
        return "None"
    kind = type(obj)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"


def _clamp(score: float) -> float:
    return min(1.0, max(0.0, score))


def _score_note(score: float, threshold: float | None) -> str:
    notes = []
    if threshold is not None:
        notes.append(f"threshold {threshold:g}")
    if _clamp(score) != score:
        notes.append(f"score clamped to {_clamp(score):g}")
    return f" ({', '.join(notes)})" if notes else ""


def _from_score(score: float, threshold: float | None, label: str) -> Verdict:
    passed = score >= threshold if threshold is not None else score > 0
    return Verdict.of(
        passed,
        f"{label} returned {score:g}{_score_note(score, threshold)}",
        score=_clamp(score),
    )


def _snake(key: str) -> str:
    return _CAMEL_HUMP.sub(lambda m: "_" + m.group(1).lower(), key)


def _from_mapping(obj: Mapping[Any, Any], threshold: float | None, label: str) -> Verdict:
    passed: Any = obj.get("pass", obj.get("passed"))
    score: Any = obj.get("score")
    reason: Any = obj.get("reason")
    if passed is not None and not isinstance(passed, bool):
        return Verdict.errored(
            f"{label} returned 'pass' as {_type_name(passed)}; expected true or false"
        )
    if score is not None and not _is_number(score):
        return Verdict.errored(
            f"{label} returned 'score' as {_type_name(score)}; expected a number"
        )
    if score is not None and _finite(score) is None:
        return Verdict.errored(f"{label} returned {_number_text(score)} as its score")
    if passed is None and score is None:
        return Verdict.errored(
            f"{label} returned a mapping without 'pass' or 'score'; expected {_SHAPES}"
        )
    details = {
        _snake(str(k)): v for k, v in obj.items() if k not in ("pass", "passed", "score", "reason")
    }
    if passed is None:
        passed = score >= threshold if threshold is not None else score > 0
    text = str(reason) if reason is not None else f"{label} returned pass: {str(passed).lower()}"
    if passed and score is not None and threshold is not None and score < threshold:
        passed = False
        text += f" (score {score:g} is below threshold {threshold:g})"
    return Verdict.of(
        passed,
        text,
        score=None if score is None else _clamp(float(score)),
        details=details,
    )
