"""promptfoo's grader settings, read as skilleval's ``judge:``.

promptfoo picks the model that grades ``llm-rubric`` and its kin from an assertion's
``provider``, then the test's ``options.provider``, then ``defaultTest.options.provider``.
skilleval grades a suite with one judge, so every such setting must name the same model; it
then stands for ``judge:``. A provider id is read as in ``providers:``
(:mod:`skilleval.promptfoo.provider_ids`): ``echo``, ``file://model.gguf``, ``llama:PATH``,
``ollama:chat:NAME``, ``openai:chat:NAME`` with ``config.apiBaseUrl``, a hosted id when its
key's variable is set; the names of registered providers (and ``default``) stand for
themselves. A key written into the file, and settings the judge cannot honour, are refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skilleval.promptfoo.provider_ids import translate
from skilleval.util.frozen import frozen

_SERVER_KEYS = frozenset({"apiBaseUrl", "apiHost", "baseUrl", "apiKeyEnvar"})
_GREEDY = frozenset({"temperature"})
"""Settings a grader may carry that the judge already satisfies when 0 (it decodes greedily)."""


@frozen
class Grader:
    """A promptfoo grader read as a ``judge:`` value (what :func:`parse_model` takes)."""

    judge: Any
    """A string (a provider name or a model path) or a provider mapping."""
    note: str | None = None
    """What the load says about it: a hosted grader's key that is not set, an embedding
    provider that is not the grader's model."""

    def key(self) -> str:
        return repr(sorted(self.judge.items())) if isinstance(self.judge, dict) else self.judge


GRADER_ROLES = ("text", "embedding", "classification")
"""promptfoo's grader map: a provider per kind of grading."""


def read_grader(raw: Any, provider_names: frozenset[str]) -> Grader | str:
    """The judge a promptfoo provider setting names, or why it cannot be one.

    A hosted grader whose key is not set is read, with a note: the load warns, and a run
    that calls it stops there. promptfoo's map ``{text: …, embedding: …}`` is read as its
    ``text`` grader (else its ``embedding`` one), which also embeds for ``similar``; a
    different embedding provider is noted.
    """
    if isinstance(raw, Mapping) and "id" not in raw and set(raw) & set(GRADER_ROLES):
        return _grader_map(raw, provider_names)
    config: Mapping[str, Any] = {}
    ident = raw
    if isinstance(raw, Mapping):
        if not isinstance(raw.get("id"), str):
            return "a grader `provider:` mapping needs an `id:` (a provider id string)"
        extra = sorted(set(raw) - {"id", "config", "label"})
        if extra:
            return f"'{extra[0]}' is not read from a grader's provider: give `id` and `config`"
        config = raw.get("config") or {}
        if not isinstance(config, Mapping):
            return "a grader's `config:` must be a mapping"
        ident = raw["id"]
    if not isinstance(ident, str) or not ident.strip():
        return (
            "a grader `provider:` is a provider id (`echo`, `file://model.gguf` …) or {id, config}"
        )
    if "apiKey" in config:
        return (
            "a grader's `apiKey` is not read from the suite: put the key in an environment"
            " variable and name it with `apiKeyEnvar`"
        )
    for key in sorted(config):
        if key in _SERVER_KEYS or (key in _GREEDY and config[key] in (0, 0.0)):
            continue
        return (
            f"grader setting '{key}' is not carried over: the judge's settings are those of"
            " `judge:` (it always decodes greedily); remove it or set `judge:` yourself"
        )
    if ident in provider_names or ident == "default":
        return Grader(ident)
    read = translate({"id": ident, "config": dict(config)}, need_keys=False)
    if read.refusal is not None or read.model is None:
        return f"grader {read.refusal or f'`{ident}` cannot be run'}"
    note = None
    if read.missing_key:
        note = (
            f"the grader `{ident}` is hosted and {read.missing_key} is not set: a run stops when"
            " it first grades; set it, or choose a local grader"
        )
    return Grader(read.model, note)


def _grader_map(raw: Mapping[str, Any], provider_names: frozenset[str]) -> Grader | str:
    """promptfoo's ``{text: …, embedding: …}`` grader map, as one judge."""
    extra = sorted(set(raw) - set(GRADER_ROLES))
    if extra:
        return f"'{extra[0]}' is not a grader role: give `text`, `embedding` or `classification`"
    graders = {role: read_grader(raw[role], provider_names) for role in GRADER_ROLES if role in raw}
    for role, grader in graders.items():
        if isinstance(grader, str):
            return f"`{role}`: {grader}"
    read = {role: g for role, g in graders.items() if isinstance(g, Grader)}
    main = read.get("text") or read.get("embedding") or read["classification"]
    notes = [main.note] if main.note else []
    for role in ("embedding", "classification"):
        other = read.get(role)
        if other is not None and other.key() != main.key():
            notes.append(
                f"the `{role}` grader is not used: skilleval grades and embeds with one judge,"
                " the `text` grader's model"
            )
    return Grader(main.judge, "; ".join(notes) or None)
