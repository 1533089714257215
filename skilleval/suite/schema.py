"""Validate a document against a JSON Schema and report every problem at its position."""

from __future__ import annotations

import difflib
import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from skilleval.errors import Diagnostic
from skilleval.promptfoo.config import UNSUPPORTED_KEYS
from skilleval.shipped import schema_text
from skilleval.suite.yamlio import Document, PathKey

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator


@functools.cache
def load_schema(name: str) -> Mapping[str, Any]:
    """A schema shipped with skilleval, by file name (``suite.schema.json`` …)."""
    result: Mapping[str, Any] = json.loads(schema_text(name))
    return result


@functools.cache
def sub_schema(name: str, ref: str) -> Mapping[str, Any]:
    """A ``$defs`` entry of a shipped schema, made standalone (its refs still resolve).

    The same object is returned each time, so that its validator is built once.
    """
    root = load_schema(name)
    return {"$defs": root["$defs"], "$ref": f"#/$defs/{ref}"}


_validators: dict[int, tuple[Mapping[str, Any], Any]] = {}
_checkers: dict[int, tuple[Mapping[str, Any], Any]] = {}
_checkers_by_text: dict[str, Any] = {}
_MAX_CACHED = 4096


def validator_for(schema: Mapping[str, Any]) -> Draft202012Validator:
    """The validator of ``schema``, built once per schema object (not once per test).

    Building one resolves every ``$ref``, which costs far more than checking a small value.
    The cache holds the schema itself, so its ``id`` is never reused by another object;
    schemas are the suite's, the built-ins' and the plugins' declared ones, so few.
    """
    from jsonschema import Draft202012Validator  # lazy: start-up time

    found = _validators.get(id(schema))
    if found is None or found[0] is not schema:
        if len(_validators) > _MAX_CACHED:
            _validators.clear()
        found = _validators[id(schema)] = (schema, Draft202012Validator(dict(schema)))
    validator: Draft202012Validator = found[1]
    return validator


def is_valid(schema: Mapping[str, Any], instance: Any) -> bool:
    """Whether ``instance`` fits ``schema``, checked by the compiled validator when it can.

    jsonschema_rs checks a 2,000-test suite some hundreds of times faster than jsonschema,
    which is kept for explaining what is wrong: a document it finds valid needs no
    explanation. Anything the compiled validator cannot take (a value it cannot convert, a
    schema it refuses) falls back to jsonschema.
    """
    found = _checkers.get(id(schema))
    if found is None or found[0] is not schema:
        checker = compiled_check(schema)
        if len(_checkers) > _MAX_CACHED:
            _checkers.clear()
        found = _checkers[id(schema)] = (schema, checker)
    if found[1] is not None:
        try:
            return bool(found[1].is_valid(instance))
        except Exception:  # a value it cannot convert (a huge integer …)
            pass
    return bool(validator_for(schema).is_valid(instance))


def compiled_check(schema: Mapping[str, Any]) -> Any:
    """The compiled check of ``schema``, shared by equal schemas; None when it has none.

    A schema built afresh for each request (a judge reply's) is a new object every time, so
    it is also found by its text: compiling it costs ten times more than writing it out.
    """
    try:
        text: str | None = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        text = None
    if text is not None and text in _checkers_by_text:
        return _checkers_by_text[text]
    try:
        import jsonschema_rs  # lazy: start-up time

        checker: Any = jsonschema_rs.validator_for(dict(schema))
    except Exception:  # missing, or a schema it does not support: use jsonschema
        checker = None
    if text is not None:
        if len(_checkers_by_text) > _MAX_CACHED:
            _checkers_by_text.clear()
        _checkers_by_text[text] = checker
    return checker


def validate(doc: Document, schema: Mapping[str, Any], *, what: str = "") -> list[Diagnostic]:
    """Every schema violation in ``doc``, as diagnostics in file order."""
    diags = [d for _, d in violations(doc, schema, what=what)]
    unique = {(str(d.where), d.message): d for d in diags}
    return sorted(unique.values(), key=Diagnostic.sort_key)


def violations(
    doc: Document, schema: Mapping[str, Any], *, what: str = ""
) -> list[tuple[PathKey, Diagnostic]]:
    """Every schema violation in ``doc``, each with the path of the node that is wrong.

    An unknown key's path ends with that key, so a caller can set aside just the parts
    of a document that are wrong and go on checking the rest.
    """
    if is_valid(schema, doc.data):
        return []
    out: list[tuple[PathKey, Diagnostic]] = []
    for error in validator_for(schema).iter_errors(doc.data):
        for leaf in _leaves(error):
            path = tuple(leaf.absolute_path)
            if leaf.validator == "additionalProperties" and isinstance(leaf.instance, dict):
                allowed = sorted((leaf.schema.get("properties") or {}).keys())
                for key in sorted(set(leaf.instance) - set(allowed)):
                    out.append(((*path, key), _unknown_key(doc, path, key, allowed)))
                continue
            out.extend((path, d) for d in _explain(leaf, doc, what))
    return out


def _leaves(error: Any) -> Iterator[Any]:
    """The errors that say what is wrong: for anyOf/oneOf, those of the branch that was meant.

    The branch that got furthest into the value is the one the user meant.
    """
    if error.validator in ("anyOf", "oneOf"):
        fitting = list(_branches(error))
        if fitting:
            branches: dict[Any, list[Any]] = {}
            for sub in fitting:
                branches.setdefault(sub.relative_schema_path[0], []).append(sub)
            best = max(branches.values(), key=lambda errs: max(len(e.absolute_path) for e in errs))
            for sub in best:
                yield from _leaves(sub)
            return
    yield error


def _type_name(instance: Any) -> str:
    if instance is None:
        return "null"
    if isinstance(instance, bool):
        return "a boolean"
    if isinstance(instance, (int, float)):
        return "a number"
    if isinstance(instance, str):
        return "a string"
    if isinstance(instance, list):
        return "a list"
    if isinstance(instance, dict):
        return "a mapping"
    return type(instance).__name__


def _field(path: Sequence[str | int], what: str) -> str:
    named = [str(p) for p in path if isinstance(p, str)]
    if named:
        return f"'{named[-1]}'"
    if path:
        return f"item {path[-1]} of {what or 'the list'}"
    return what or "the document"


def _branches(error: Any) -> Iterator[Any]:
    """For anyOf/oneOf: the errors of the branches whose type fits the value."""
    for sub in error.context or ():
        if sub.validator == "type" and len(sub.relative_schema_path) <= 2:
            continue
        yield sub


def _explain(error: Any, doc: Document, what: str) -> list[Diagnostic]:
    path = list(error.absolute_path)
    inst = error.instance
    v = error.validator
    if v in ("anyOf", "oneOf"):
        leaves = list(_leaves(error))
        if leaves != [error]:
            return [d for leaf in leaves for d in _explain(leaf, doc, what)]
        kinds = _expected_kinds(error.schema)
        return [
            Diagnostic(
                doc.at(path), f"{_field(path, what)} must be {kinds}, not {_type_name(inst)}"
            )
        ]
    if v == "additionalProperties":
        allowed = sorted((error.schema.get("properties") or {}).keys())
        extra = sorted(set(inst) - set(allowed)) if isinstance(inst, dict) else []
        return [_unknown_key(doc, path, key, allowed) for key in extra]
    if v == "required":
        missing = error.message.split("'")[1] if "'" in error.message else "?"
        return [Diagnostic(doc.at(path), f"missing required key '{missing}'")]
    if v == "type":
        want = error.validator_value
        kinds = " or ".join(_article(k) for k in (want if isinstance(want, list) else [want]))
        return [
            Diagnostic(
                doc.at(path), f"{_field(path, what)} must be {kinds}, not {_type_name(inst)}"
            )
        ]
    if v == "enum":
        options = ", ".join(repr(o) for o in error.validator_value)
        hint = _suggest(str(inst), [str(o) for o in error.validator_value])
        return [
            Diagnostic(
                doc.at(path), f"{_field(path, what)} must be one of {options}, not {inst!r}{hint}"
            )
        ]
    if v == "const":
        return [
            Diagnostic(
                doc.at(path),
                f"{_field(path, what)} must be {error.validator_value!r}, not {inst!r}",
            )
        ]
    if v == "pattern" and error.validator_value == "^file://":
        return [
            Diagnostic(
                doc.at(path),
                f"{_field(path, what)} must be a list or a file:// reference, not {inst!r}",
            )
        ]
    if v in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        sign = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}[
            v
        ]
        return [
            Diagnostic(
                doc.at(path),
                f"{_field(path, what)} must be {sign} {error.validator_value}, not {inst!r}",
            )
        ]
    if v == "minItems" and error.validator_value == 1:
        return [Diagnostic(doc.at(path), f"{_field(path, what)} must not be empty")]
    if v == "minLength" and error.validator_value == 1:
        return [Diagnostic(doc.at(path), f"{_field(path, what)} must not be empty")]
    return [Diagnostic(doc.at(path), f"{_field(path, what)}: {error.message}")]


def _article(kind: str) -> str:
    return {
        "object": "a mapping",
        "array": "a list",
        "string": "a string",
        "integer": "an integer",
        "number": "a number",
        "boolean": "a boolean",
        "null": "null",
    }.get(kind, kind)


def _expected_kinds(schema: Mapping[str, Any]) -> str:
    kinds: list[str] = []
    for branch in schema.get("anyOf") or schema.get("oneOf") or ():
        kind = branch.get("type")
        if kind == "string" and branch.get("pattern") == "^file://":
            label = "a file:// reference"
        elif kind:
            label = _article(kind)
        elif "$ref" in branch:
            label = "a mapping"
        else:
            continue
        if label not in kinds:
            kinds.append(label)
    return " or ".join(kinds) or "something else"


def _suggest(word: str, options: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def _unknown_key(
    doc: Document, path: Sequence[str | int], key: str, allowed: Sequence[str]
) -> Diagnostic:
    where = doc.key_at([*path, key])
    if key in UNSUPPORTED_KEYS:
        return Diagnostic(where, f"unsupported key '{key}': {UNSUPPORTED_KEYS[key]}")
    return Diagnostic(where, f"unknown key '{key}'{_suggest(key, allowed)}")
