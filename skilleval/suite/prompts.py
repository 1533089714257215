"""``prompts:`` and a test's own ``prompt:``: texts, files, chat files, and their variables."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skilleval.errors import Diagnostic, DiagnosticsError, Location, SuiteError, TemplateProblem
from skilleval.suite import files as filerefs
from skilleval.suite import template
from skilleval.suite.context import Loader
from skilleval.suite.model import Prompt
from skilleval.suite.yamlio import Document, display_path, load_yaml
from skilleval.userfile import read_text
from skilleval.util import fileref

_PROMPT_FILE = re.compile(r"\.(txt|md|j2|json|ya?ml)$")
_SEPARATOR = re.compile(r"^---\s*$", flags=re.M)
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
        label = None
        if isinstance(item, dict):
            label = item.get("label")
            item = item.get("raw") or item.get("id")
            if not item:
                loader.error(
                    where,
                    "a prompt needs `raw:` (its text or a file:// reference), not only a label",
                )
                continue
        try:
            prompts.extend(prompt_item(loader, str(item), loader.base, where, label))
        except DiagnosticsError as exc:
            loader.absorb(exc)
    for i, p in enumerate(prompts):
        if not p.label:
            prompts[i] = Prompt(f"p{i + 1}", p.text, p.messages, p.where)
    return prompts


def prompt_item(
    loader: Loader, item: str, base: Path, where: Location, label: str | None
) -> list[Prompt]:
    """One entry of ``prompts:``: its text, or the prompts of the files it names."""
    if not fileref.is_ref(item):
        return [Prompt(label or "", text=item, where=where)]
    out: list[Prompt] = []
    for path in loader.reader.paths(item, base, where):
        shown = display_path(path)
        if path.suffix.lower() in filerefs.DATA_SUFFIXES:
            pdoc = load_yaml(path, where=where)
            out.append(chat_prompt(pdoc, label or path.stem))
            continue
        text = read_text(path, where=where)
        # promptfoo's convention: several prompts in one text file, split by a `---` line.
        parts = [p.strip("\n") for p in _SEPARATOR.split(text)]
        parts = [p for p in parts if p.strip()]
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


def chat_prompt(pdoc: Document, label: str) -> Prompt:
    """A chat prompt file: a list of ``{role, content}`` messages."""
    data = pdoc.data
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
        if (
            not isinstance(msg, dict)
            or not isinstance(msg.get("role"), str)
            or not isinstance(msg.get("content"), str)
        ):
            raise SuiteError(
                [Diagnostic(pdoc.at([i]), "each message needs a string `role` and `content`")]
            )
        if msg["role"] not in _ROLES:
            raise SuiteError(
                [
                    Diagnostic(
                        pdoc.at([i, "role"]),
                        f"role must be system, user or assistant, not {msg['role']!r}",
                    )
                ]
            )
        messages.append((msg["role"], msg["content"]))
    return Prompt(label, messages=tuple(messages), where=pdoc.at())


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
            loader.error(
                where,
                f"prompt '{prompt.label}' uses {names}, which this test's vars do not define{hint}",
            )
