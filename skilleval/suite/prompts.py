"""``prompts:`` and a test's own ``prompt:``: texts, files, chat files, and their variables."""

from __future__ import annotations

import csv
import difflib
import io
import json
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from skilleval.errors import (
    MISSING_FILE,
    Diagnostic,
    DiagnosticsError,
    Location,
    SuiteError,
    TemplateProblem,
)
from skilleval.promptfoo.config import reads_as_promptfoo
from skilleval.suite import files as filerefs
from skilleval.suite import template
from skilleval.suite.code_hooks import function_prompt
from skilleval.suite.context import Loader
from skilleval.suite.model import Prompt
from skilleval.suite.yamlio import Document, display_path, load_jsonl, load_yaml, parse_yaml
from skilleval.userfile import read_text
from skilleval.util import fileref

_PROMPT_FILE = re.compile(r"\.(txt|md|j2|json|jsonl|ya?ml|csv)$", flags=re.I)
_SEPARATOR = re.compile(r"^[ \t]*---[ \t]*$", flags=re.M)
_WHOLE_FILE = {".md", ".j2"}
"""Prompt files that hold one prompt, ``---`` lines included (front matter, rules)."""
_ROLES = ("system", "user", "assistant")


def top_prompts(loader: Loader, doc: Document) -> list[Prompt]:
    """The suite's ``prompts:``, each file read; unlabelled prompts are named p1, p2 …"""
    raw = doc.data.get("prompts")
    if raw is None:
        return []
    items: list[tuple[Any, list[str | int]]] = []
    if isinstance(raw, str):
        items.append((raw, ["prompts"]))
    elif isinstance(raw, dict):
        # promptfoo's older map form: the keys are file paths, without file://.
        for k, v in raw.items():
            ref = k if fileref.is_ref(k) or not _PROMPT_FILE.search(k) else f"file://{k}"
            items.append(({"raw": ref, "label": v}, ["prompts", k]))
    else:
        items.extend((item, ["prompts", i]) for i, item in enumerate(raw))
    prompts: list[Prompt] = []
    for item, at in items:
        where = doc.at(at)
        written = item
        managed = _managed_prompt(item)
        if managed is not None and reads_as_promptfoo(loader.top):
            loader.error(
                where,
                f"`{managed}` is a prompt kept on promptfoo's server (pf://), which skilleval"
                " cannot read: save its text in a file and write `file://prompt.txt`",
            )
            continue
        if isinstance(item, str):
            item = as_file(item)
        label = None
        schema: Mapping[str, Any] | None = None
        parsed = False
        if isinstance(item, dict):
            if "config" in item:
                schema = _response_schema(loader, doc, [*at, "config"], item["config"])
                parsed = schema is not None and _parses_reply(loader, item["config"])
            label = item.get("label")
            item = item.get("raw") or as_file(item.get("id") or "")
            if not item:
                loader.error(
                    where,
                    "a prompt needs `raw:` (its text or a file:// reference), not only a label",
                )
                continue
        try:
            read = prompt_item(loader, str(item), loader.base, where, label)
            prompts.extend(replace(p, json_schema=schema, parsed_reply=parsed) for p in read)
        except DiagnosticsError as exc:
            guessed = isinstance(written, str) and written != item
            if guessed and any(d.code == MISSING_FILE for d in exc.diagnostics):
                # A bare string read as a file name (promptfoo's rule): say so.
                loader.add(
                    replace(
                        exc.diagnostics[0],
                        message=f"{exc.diagnostics[0].message}; a one-line prompt ending like a"
                        " prompt file's name is read as that file: to use these words as the"
                        f" prompt, write `- raw: {json.dumps(written, ensure_ascii=False)}`",
                    )
                )
                continue
            loader.absorb(exc)
    for i, p in enumerate(prompts):
        if not p.label:
            prompts[i] = replace(p, label=f"p{i + 1}")
    return prompts


PROMPTFOO_DEFAULT_PROMPT = "{{prompt}}"
"""The prompt promptfoo runs when a config has no ``prompts:``, as its label too."""


def _managed_prompt(item: Any) -> str | None:
    """The ``pf://`` reference a prompt entry names (as text, ``raw:`` or ``id:``), if any."""
    if isinstance(item, dict):
        item = item.get("raw") or item.get("id")
    if isinstance(item, str) and item.strip().startswith("pf://"):
        return item.strip()
    return None


def _parses_reply(loader: Loader, config: Mapping[str, Any]) -> bool:
    """Whether promptfoo hands this prompt's replies to checks parsed: in a promptfoo config,
    under ``json_schema`` (promptfoo 0.123.1 parses those replies, not ``json_object`` ones)."""
    fmt = config.get("response_format")
    return (
        reads_as_promptfoo(loader.top)
        and isinstance(fmt, Mapping)
        and fmt.get("type") == "json_schema"
    )


def _response_schema(
    loader: Loader, doc: Document, at: list[str | int], config: Any
) -> Mapping[str, Any] | None:
    """promptfoo's ``config.response_format`` on a prompt, as the JSON Schema replies are
    held to: ``{type: json_schema, json_schema: {schema: …}}`` gives that schema,
    ``{type: json_object}`` any JSON object. Other provider settings are refused: decoding is
    the suite's ``decoding:``."""
    others = sorted(set(config) - {"response_format"}) if isinstance(config, dict) else []
    if others or not isinstance(config, dict):
        loader.error(
            doc.key_at([*at, others[0]]) if others else doc.at(at),
            "a prompt's `config` may only hold `response_format`: other provider settings"
            " are not applied, since every prompt decodes with the suite's `decoding:`",
        )
        return None
    fmt = config.get("response_format")
    where = doc.at([*at, "response_format"])
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind == "json_object":
        return {"type": "object"}
    inner = fmt.get("json_schema") if isinstance(fmt, dict) else None
    schema = inner.get("schema") if isinstance(inner, dict) else None
    if kind != "json_schema" or not isinstance(schema, dict):
        loader.error(
            where,
            "`response_format` must be {type: json_object} or {type: json_schema,"
            " json_schema: {schema: {...}}}",
        )
        return None
    from jsonschema import Draft202012Validator, SchemaError  # lazy: start-up time

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        loader.error(where, f"`response_format` holds an invalid JSON Schema: {exc.message}")
        return None
    return dict(schema)


def as_file(text: str) -> str:
    """promptfoo reads a one-line prompt ending in a prompt file's extension as that file."""
    if fileref.is_ref(text) or "\n" in text or not _PROMPT_FILE.search(text.strip()):
        return text
    return f"file://{text.strip()}"


def prompt_item(
    loader: Loader, item: str, base: Path, where: Location, label: str | None
) -> list[Prompt]:
    """One entry of ``prompts:``: its text, or the prompts of the files it names."""
    if not fileref.is_ref(item):
        return [Prompt(label or "", text=item, where=where)]
    hooked = function_prompt(loader, item, base, where, label)
    if hooked is not None:
        return hooked
    out: list[Prompt] = []
    for path in loader.reader.paths(item, base, where):
        shown = display_path(path)
        suffix = path.suffix.lower()
        if suffix in filerefs.DATA_SUFFIXES:
            pdoc = load_yaml(path, where=where)
            out.append(chat_prompt(pdoc, label or path.stem))
            continue
        if suffix == ".jsonl":
            docs = list(load_jsonl(path, where=where))
            for n, pdoc in enumerate(docs):
                name = label or path.stem
                out.append(chat_prompt(pdoc, name if len(docs) == 1 else f"{name}-{n + 1}"))
            continue
        if suffix == ".csv":
            out.extend(csv_prompts(path, where, label, chats=reads_as_promptfoo(loader.top)))
            continue
        text = read_text(path, where=where)
        if suffix in _WHOLE_FILE:
            parts = [text.strip()] if text.strip() else []
        else:
            # promptfoo's convention: several prompts in one text file, split by `---` lines.
            parts = [p.strip() for p in _SEPARATOR.split(text)]
            parts = [p for p in parts if p]
        for n, part in enumerate(parts):
            name = label or path.stem
            out.append(
                Prompt(
                    name if len(parts) == 1 else f"{name}-{n + 1}",
                    text=part,
                    where=Location(shown, 1, 1),
                )
            )
    return out


def csv_prompts(
    path: Path, where: Location, label: str | None, *, chats: bool = False
) -> list[Prompt]:
    """A CSV of prompts, as promptfoo reads one: a ``prompt`` column and an optional ``label``.

    A file with no comma at all holds one prompt per line (a first line ``prompt`` is its
    header). Rows with an empty prompt are skipped. ``chats`` (a promptfoo config): a row
    whose prompt is a JSON list of ``{role, content}`` messages is that chat, as promptfoo
    sends it.
    """
    shown = display_path(path)
    text = read_text(path, where=where).lstrip("\ufeff")
    if "," not in text:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        if lines and lines[0][1].strip().lower() == "prompt":
            lines = lines[1:]
        return [
            Prompt(label or f"{path.stem}-{i + 1}", text=line, where=Location(shown, n, 1))
            for i, (n, line) in enumerate(lines)
        ]
    reader = csv.reader(io.StringIO(text, newline=None))
    try:
        header = [h.strip() for h in next(reader)]
    except (StopIteration, csv.Error) as exc:
        raise SuiteError([Diagnostic(Location(shown, 1, 1), f"invalid CSV: {exc}")]) from None
    if "prompt" not in header:
        raise SuiteError(
            [
                Diagnostic(
                    Location(shown, 1, 1),
                    "a CSV of prompts needs a `prompt` column (and may have `label`); "
                    f"this header has {', '.join(repr(h) for h in header)}",
                )
            ]
        )
    out: list[Prompt] = []
    line = reader.line_num + 1
    try:
        for row in reader:
            at, line = line, reader.line_num + 1
            cells = dict(zip(header, (c.strip() for c in row), strict=False))
            if not cells.get("prompt"):
                continue
            name = cells.get("label") or label or f"{path.stem}-{len(out) + 1}"
            chat = _json_chat(cells["prompt"], path, at, name) if chats else None
            out.append(chat or Prompt(name, text=cells["prompt"], where=Location(shown, at, 1)))
    except csv.Error as exc:
        raise SuiteError([Diagnostic(Location(shown, line, 1), f"invalid CSV: {exc}")]) from None
    return out


def _json_chat(text: str, path: Path, line: int, label: str) -> Prompt | None:
    """The chat a CSV cell writes as a JSON list of ``{role, content}`` messages, or None."""
    if not text.startswith("["):
        return None
    try:
        messages = json.loads(text)
    except ValueError:
        return None
    if not (
        isinstance(messages, list)
        and messages
        and all(isinstance(m, dict) and "role" in m for m in messages)
    ):
        return None
    pdoc = parse_yaml(text, display_path(path), path, line_offset=line - 1)
    return chat_prompt(pdoc, label)


def with_affixes(
    loader: Loader, prompts: list[Prompt], options: Mapping[str, Any], doc: Document
) -> list[Prompt]:
    """promptfoo's ``options.prefix`` and ``options.suffix``: text around each prompt."""
    prefix, suffix = options.get("prefix") or "", options.get("suffix") or ""
    if not prefix and not suffix:
        return prompts
    out = []
    for prompt in prompts:
        if prompt.text is None:
            key = "prefix" if prefix else "suffix"
            loader.error(
                doc.at(["options", key]),
                f"options.{key} applies to text prompts; prompt '{prompt.label}' is a chat:"
                " write the text into its messages instead",
            )
            continue
        out.append(replace(prompt, text=f"{prefix}{prompt.text}{suffix}"))
    return out


def chat_prompt(pdoc: Document, label: str) -> Prompt:
    """A chat prompt file: a list of ``{role, content}`` messages, or a mapping holding them
    under ``messages`` (the shape Anthropic's and OpenAI's APIs take).

    ``content`` is text, or a list of content parts of which only ``{type: text, text}``
    parts are read (joined by blank lines); provider hints on a part (``cache_control``) are
    ignored, and any other part (an image …) is an error at its position.
    """
    data, at = pdoc.data, []
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        data, at = data["messages"], ["messages"]
    if not isinstance(data, list) or not data:
        raise SuiteError(
            [
                Diagnostic(
                    pdoc.at(), "a chat prompt file must hold a list of {role, content} messages"
                )
            ]
        )
    messages: list[tuple[str, str]] = []
    for i, msg in enumerate(data):
        content = msg.get("content") if isinstance(msg, dict) else None
        if isinstance(content, list):
            content = _text_parts(pdoc, [*at, i, "content"], content)
        if not isinstance(msg, dict) or not isinstance(msg.get("role"), str) or content is None:
            raise SuiteError(
                [Diagnostic(pdoc.at([*at, i]), "each message needs a string `role` and `content`")]
            )
        if msg["role"] not in _ROLES:
            raise SuiteError(
                [
                    Diagnostic(
                        pdoc.at([*at, i, "role"]),
                        f"role must be system, user or assistant, not {msg['role']!r}",
                    )
                ]
            )
        messages.append((msg["role"], content))
    return Prompt(label, messages=tuple(messages), where=pdoc.at())


def _text_parts(pdoc: Document, at: list[str | int], parts: list[Any]) -> str | None:
    """The text of a message's content parts; an error for a part that is not text."""
    texts: list[str] = []
    for j, part in enumerate(parts):
        if (
            isinstance(part, dict)
            and part.get("type") == "text"
            and isinstance(part.get("text"), str)
        ):
            texts.append(part["text"])
            continue
        kind = part.get("type") if isinstance(part, dict) else None
        raise SuiteError(
            [
                Diagnostic(
                    pdoc.at([*at, j]),
                    f"only text content parts are read ({{type: text, text: …}}), not {kind!r}",
                )
            ]
        )
    return "\n\n".join(texts) if texts else None


def test_prompts(
    loader: Loader, data: Mapping[str, Any], doc: Document, prompts: list[Prompt]
) -> list[Prompt]:
    """The prompts one test runs: its own ``prompt:``, else the suite's ``prompts:``."""
    if "prompt" in data:
        text = data["prompt"]
        where = doc.at(["prompt"]) if "prompt" in doc.data else doc.at()
        return [Prompt("prompt", text=str(text), where=where)]
    if prompts:
        return prompts
    if "prompts" not in loader.top and reads_as_promptfoo(loader.top):
        # promptfoo's default prompt: the test's `prompt` var is the whole prompt.
        return [Prompt(PROMPTFOO_DEFAULT_PROMPT, text=PROMPTFOO_DEFAULT_PROMPT, where=doc.at())]
    if "prompts" not in loader.top:
        # Without `prompts:` the test must bring its own; with it, a broken prompts file
        # has already been reported and saying more about every test would only be noise.
        loader.error(
            doc.at(), "test has no prompt: give it `prompt:`, or add a top-level `prompts:` list"
        )
    return []


def check_template_vars(
    loader: Loader, prompt: Prompt, vars_: Mapping[str, Any] | None, where: Location
) -> None:
    """Check a prompt's templates, and that ``vars_`` defines every variable they read.

    ``vars_`` is None when the vars could not be read: the templates are still checked.
    """
    texts = [prompt.text] if prompt.text is not None else [m[1] for m in prompt.messages]
    for text in texts:
        try:
            used = template.variables(text)
        except TemplateProblem as exc:
            w = prompt.where
            loader.error(Location(w.path, w.line + exc.line - 1, w.col), exc.message)
            continue
        if vars_ is None:
            continue
        missing = sorted(used - set(vars_))
        if missing:
            names = ", ".join(f"'{m}'" for m in missing)
            close = difflib.get_close_matches(missing[0], list(vars_), n=1, cutoff=0.6)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            message = f"prompt '{prompt.label}' uses {names}, which this test's vars do not define"
            if reads_as_promptfoo(loader.top):
                # promptfoo renders an undefined variable as nothing: a warning, not an error.
                note = str(Diagnostic(where, f"{message}: it renders empty{hint}", "warning"))
                if note not in loader.foreign_notes:
                    loader.foreign_notes.append(note)
                continue
            loader.error(where, f"{message}{hint}")
