"""``skilleval import promptfoo``: a promptfoo config written as the equivalent skilleval suite.

The same YAML, comments kept, with ``version: 1`` and ``compat: promptfoo``, the providers as
``models:``, the grader as ``judge:``, and a comment wherever something changed meaning or
could not be carried over. Reading a config as it is (``skilleval run promptfooconfig.yaml``)
reports the same differences as warnings (:mod:`skilleval.promptfoo.differences`).
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skilleval.promptfoo.config import PROVIDER_LISTS, UNSUPPORTED_KEYS
from skilleval.promptfoo.graders import read_grader
from skilleval.promptfoo.provider_ids import normalized, translate
from skilleval.promptfoo.provider_tools import declared_tools, give_checks
from skilleval.promptfoo.rebase import rebase_paths
from skilleval.promptfoo.values import YamlReader, as_promptfoo_reads
from skilleval.util.frozen import frozen


@frozen
class Imported:
    """A promptfoo config written as a skilleval suite."""

    text: str
    """The suite's YAML."""
    left_out: tuple[str, ...]
    """What could not be carried over, one line each."""


def import_config(path: Path, read_yaml: YamlReader, target: Path | None = None) -> Imported:
    """The skilleval suite equivalent to the promptfoo config at ``path``; ``read_yaml``
    parses an assertion's schema written as YAML text; ``target`` is the folder the suite is
    written to (the config's own by default), for which relative paths are rewritten.

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
    tools: list[dict[str, Any]] = []
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
            config = entry.get("config") if isinstance(entry, Mapping) else None
            declared, unreadable = declared_tools(config, path.parent)
            if unreadable is not None:
                left_out.append(f"{name}: {unreadable}")
            tools.append(declared)
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
            models.append((model, read, entry))
        index = list(data).index(key)
        del data[key]
        if models:
            # `models:` even for one: its items take the column label and prompts.
            new_key, value = "models", CommentedSeq(m for m, _, _ in models)
            data.insert(index, new_key, value)
            data.yaml_set_comment_before_after_key(
                new_key, before=f"From promptfoo's `{key}:` (each id read as a model)."
            )
        else:
            # Never a suite with no model: the embedded one stands in, and says so.
            data.insert(index, "model", "default")
            data.yaml_set_comment_before_after_key(
                "model",
                before=f"None of promptfoo's `{key}:` carries over (see above): the embedded"
                " model stands in.\nSet `model:` to the model (or `models:` to the models) to"
                " evaluate.",
            )
        for _, read, entry in models:
            label = read.label
            if isinstance(entry, Mapping) and not read.uses_config:
                kept = {"apiBaseUrl", "apiKeyEnvar", "tools", "functions"}
                dropped = sorted(set(entry.get("config") or {}) - kept)
                if dropped:
                    notes.append(
                        f"{label}: provider settings {', '.join(dropped)} are not used; "
                        "decoding is set for the whole suite by `decoding:`"
                    )
                if any(k in (entry.get("config") or {}) for k in ("tools", "functions")):
                    notes.append(
                        f"{label}: its tools are written into the tool-call checks' `config`;"
                        " they are not sent to the model"
                    )
        break

    default = data.get("defaultTest")
    options = default.get("options") if isinstance(default, Mapping) else None
    # Moved to `judge:` only when it is the one grader: tests' and assertions' own
    # `provider:` are read as the same judge where they are written.
    if isinstance(options, CommentedMap) and "provider" in options and not _more_graders(data):
        grader = read_grader(options["provider"], frozenset())
        del options["provider"]
        if not options:
            del default["options"]
        if not default:
            del data["defaultTest"]  # an empty mapping after a comment is not YAML
        if isinstance(grader, str):
            left_out.append(f"defaultTest.options.provider: {grader}")
        else:
            if grader.note:
                notes.append(f"defaultTest.options.provider: {grader.note}")
            judge: Any = grader.judge
            if isinstance(judge, dict):
                judge = CommentedMap(judge)
                judge.fa.set_flow_style()
            data.insert(len(data), "judge", judge)
            data.yaml_set_comment_before_after_key(
                "judge", before="From promptfoo's defaultTest.options.provider (the grader)."
            )

    # The models keep no tools: the tool-call checks get the provider's, as data.
    if any(tools) and give_checks(data, tools[0]) and any(t != tools[0] for t in tools):
        notes.append("the providers declare different tools; the tool-call checks use the first's")
    if any(tools) and not isinstance(data.get("tests"), list | None):
        notes.append(
            "the providers' tools reach only the tool-call checks written in this file; give"
            " those in test files `config: {tools: …}`"
        )
    _values_as_promptfoo_reads(data, read_yaml)
    if target is not None and target.resolve() != path.parent.resolve():
        rebase_paths(data, path.parent, target)
        notes.append(f"relative paths are rewritten to reach the same files from {target}")
        for _, read, _ in models:
            if isinstance(read.model, dict) and read.model.get("provider") == "exec":
                notes.append(
                    f"{read.label}: the command runs in the suite's folder; check the paths it names"
                )

    for key in list(data):
        if key in UNSUPPORTED_KEYS:
            left_out.append(f"{key}: {UNSUPPORTED_KEYS[key]}")
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


def _values_as_promptfoo_reads(data: Mapping[str, Any], read_yaml: YamlReader) -> None:
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
            read = as_promptfoo_reads(kind, entry["value"], read_yaml)
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
