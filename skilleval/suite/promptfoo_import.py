"""promptfoo configs: how skilleval reads one differently, and ``skilleval import promptfoo``.

skilleval reads a promptfoo config as it is (``skilleval run promptfooconfig.yaml``), with
every difference in meaning reported as a warning (:func:`differences`). ``import`` writes
the equivalent skilleval suite instead (:func:`import_config`): the same YAML, comments kept,
with ``version: 1``, the providers as ``models:``, the grader as ``judge:``, and a comment
wherever something changed meaning or could not be carried over.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skilleval.errors import Location
from skilleval.suite.columns import PROVIDER_LISTS
from skilleval.suite.promptfoo_values import (
    as_promptfoo_reads,
    javascript_reads_otherwise,
    regex_entries,
)
from skilleval.suite.provider_ids import normalized, translate
from skilleval.suite.schema import PROMPTFOO_KEYS
from skilleval.suite.yamlio import Document
from skilleval.util.frozen import frozen

MARKERS = (*PROVIDER_LISTS, "evaluateOptions", "redteam", "scenarios", "outputPath", "env")
"""Top-level keys that only a promptfoo config has."""


@frozen
class Difference:
    """One place where skilleval reads the config otherwise than promptfoo would."""

    where: Location
    message: str
    carried: bool = True
    """False: the setting is not carried over at all."""


def is_promptfoo(data: Any) -> bool:
    """A config written for promptfoo: no ``version:``, and a key only promptfoo has."""
    return isinstance(data, Mapping) and "version" not in data and any(k in data for k in MARKERS)


def reads_as_promptfoo(data: Any) -> bool:
    """Whether the suite's values, vars and templates are read as promptfoo reads them: a
    promptfoo config, or a suite with ``compat: promptfoo`` (what ``import`` writes)."""
    return is_promptfoo(data) or (isinstance(data, Mapping) and data.get("compat") == "promptfoo")


def differences(doc: Document) -> list[Difference]:
    """What skilleval does differently with this promptfoo config, each at its position."""
    data: Mapping[str, Any] = doc.data
    out: list[Difference] = []
    decoding = data.get("decoding")
    if decoding is None:
        out.append(
            Difference(
                doc.at(),
                "decoding is greedy with seed 0 and at most 256 new tokens for every model "
                "(promptfoo leaves it to each provider); set `decoding:` to change it",
            )
        )
    for key in PROVIDER_LISTS:
        if key in data:
            out.append(
                Difference(
                    doc.key_at([key]),
                    f"`{key}:` is read as `models:`: each model runs the whole suite as a run of "
                    "its own, with one column each in the side-by-side report",
                )
            )
    default = data.get("defaultTest")
    options = default.get("options") if isinstance(default, Mapping) else None
    if isinstance(options, Mapping) and "provider" in options:
        out.append(
            Difference(
                doc.key_at(["defaultTest", "options", "provider"]),
                "the grading provider is read as `judge:`",
            )
        )
    for key in data:
        if key in PROMPTFOO_KEYS:
            out.append(Difference(doc.key_at([key]), f"`{key}`: {PROMPTFOO_KEYS[key]}", False))
    out.extend(pattern_differences(doc))
    return out


def pattern_differences(doc: Document) -> list[Difference]:
    """Each regex of the config that promptfoo's JavaScript reads otherwise than skilleval."""
    out = []
    for at, pattern in regex_entries(doc.data):
        what = javascript_reads_otherwise(pattern)
        if what is not None:
            out.append(
                Difference(
                    doc.at(at),
                    f"this regex uses {what}, which promptfoo's JavaScript reads otherwise;"
                    " skilleval reads it as Python does (docs/promptfoo.md, deliberate"
                    " differences)",
                )
            )
    return out


@frozen
class Imported:
    """A promptfoo config written as a skilleval suite."""

    text: str
    """The suite's YAML."""
    left_out: tuple[str, ...]
    """What could not be carried over, one line each."""


def import_config(path: Path) -> Imported:
    """The skilleval suite equivalent to the promptfoo config at ``path``.

    Raises:
        OSError: The file cannot be read.
        ruamel.yaml.YAMLError: It is not YAML (``validate`` gives the positioned message).
    """
    from ruamel.yaml import YAML  # lazy: start-up time
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    yaml = YAML(typ="rt")
    yaml.width = 4096  # keep the config's own line breaks
    yaml.preserve_quotes = True
    data = yaml.load(path.read_text(encoding="utf-8"))
    if not isinstance(data, CommentedMap):
        raise ValueError(f"{path} is not a mapping of keys like `tests:`")
    left_out: list[str] = []
    notes: list[str] = []

    models: list[Any] = []
    for key in PROVIDER_LISTS:
        if key not in data:
            continue
        raw = data[key]
        for i, entry in enumerate(raw if isinstance(raw, list) else [raw]):
            entry = normalized(entry)
            read = translate(entry, need_keys=False)
            name = f"{key}[{i}]" if isinstance(raw, list) else key
            if read.model is None:
                left_out.append(f"{name}: {read.refusal}")
                continue
            model: Any = read.model
            extra: dict[str, Any] = {}
            if isinstance(model, dict) or (isinstance(entry, Mapping) and entry.get("label")):
                extra["label"] = read.label  # the column's name: the id's model, or its label
            written = entry.get("prompts") if isinstance(entry, Mapping) else None
            if isinstance(written, list) and written:
                extra["prompts"] = [str(x) for x in written]
            elif written:
                extra["prompts"] = written  # not a list: as written, for the loader to point at
            if extra:
                base = model if isinstance(model, dict) else _as_mapping(model)
                model = {**base, **extra}
            if isinstance(model, dict):
                model = CommentedMap(model)
                model.fa.set_flow_style()
            models.append((model, read.label, entry))
        index = list(data).index(key)
        del data[key]
        if models:
            # `models:` even for one: its items take the column label and prompts.
            new_key, value = "models", CommentedSeq(m for m, _, _ in models)
            data.insert(index, new_key, value)
            data.yaml_set_comment_before_after_key(
                new_key, before=f"From promptfoo's `{key}:` (each id read as a model)."
            )
        for _, label, entry in models:
            if isinstance(entry, Mapping):
                dropped = sorted(set(entry.get("config") or {}) - {"apiBaseUrl", "apiKeyEnvar"})
                if dropped:
                    notes.append(
                        f"{label}: provider settings {', '.join(dropped)} are not used; "
                        "decoding is set for the whole suite by `decoding:`"
                    )
        break

    default = data.get("defaultTest")
    options = default.get("options") if isinstance(default, Mapping) else None
    # Moved to `judge:` only when it is the one grader: tests' and assertions' own
    # `provider:` are read as the same judge where they are written.
    if isinstance(options, CommentedMap) and "provider" in options and not _more_graders(data):
        grader = translate(options["provider"], need_keys=False)
        del options["provider"]
        if not options:
            del default["options"]
        if grader.model is None:
            left_out.append(f"defaultTest.options.provider: {grader.refusal}")
        else:
            judge: Any = grader.model
            if isinstance(judge, dict):
                judge = CommentedMap(judge)
                judge.fa.set_flow_style()
            data.insert(len(data), "judge", judge)
            data.yaml_set_comment_before_after_key(
                "judge", before="From promptfoo's defaultTest.options.provider (the grader)."
            )

    _values_as_promptfoo_reads(data)

    for key in list(data):
        if key in PROMPTFOO_KEYS:
            left_out.append(f"{key}: {PROMPTFOO_KEYS[key]}")
            del data[key]

    data.insert(0, "version", 1)
    data.insert(1, "compat", "promptfoo")
    data.yaml_set_comment_before_after_key(
        "compat", before="Vars, templates and assertion values read as promptfoo reads them."
    )
    header = [f"Imported from {path.name} by `skilleval import promptfoo`."]
    header += [f"Not carried over: {line}" for line in left_out]
    header += [f"Changed: {line}" for line in notes]
    header.append(
        "Decoding is greedy with seed 0 and at most 256 new tokens unless `decoding:` says "
        "otherwise."
    )
    data.yaml_set_start_comment("\n".join(header))
    buffer = io.StringIO()
    yaml.dump(data, buffer)
    return Imported(buffer.getvalue(), tuple(left_out))


def _values_as_promptfoo_reads(data: Mapping[str, Any]) -> None:
    """Rewrite each inline assertion's ``value:`` as promptfoo reads it (``42.0`` as
    ``"42"``, a list type's string as its list), so that the suite keeps the meaning."""
    from ruamel.yaml.comments import CommentedSeq  # lazy: start-up time

    tests = data.get("tests")
    scenarios = data.get("scenarios")
    holders = [*(tests if isinstance(tests, list) else []), data.get("defaultTest")]
    for scenario in scenarios if isinstance(scenarios, list) else []:
        if isinstance(scenario, Mapping):
            for key in ("config", "tests"):
                part = scenario.get(key)
                holders.extend(part if isinstance(part, list) else [])
    for test in holders:
        asserts = test.get("assert") if isinstance(test, Mapping) else None
        for entry in asserts if isinstance(asserts, list) else []:
            if not isinstance(entry, dict) or "value" not in entry:
                continue
            kind = str(entry.get("type", "")).removeprefix("not-")
            read = as_promptfoo_reads(kind, entry["value"])
            if read is not entry["value"] and read != entry["value"]:
                if isinstance(read, list):
                    read = CommentedSeq(read)
                    read.fa.set_flow_style()
                entry["value"] = read


def _as_mapping(model: str) -> dict[str, Any]:
    """A shorthand model (``echo``, a GGUF path) as a mapping, to give it a label."""
    if model == "echo":
        return {"provider": "echo"}
    return {"path": model}


def _more_graders(data: Mapping[str, Any]) -> bool:
    """Whether a test or an assertion names a grading provider of its own."""
    tests = data.get("tests")
    default = data.get("defaultTest")
    holders = [*(tests if isinstance(tests, list) else []), default]
    for test in holders:
        if not isinstance(test, Mapping):
            continue
        options = test.get("options")
        if test is not default and isinstance(options, Mapping) and "provider" in options:
            return True
        asserts = test.get("assert")
        for entry in asserts if isinstance(asserts, list) else []:
            if isinstance(entry, Mapping) and "provider" in entry:
                return True
    return False
