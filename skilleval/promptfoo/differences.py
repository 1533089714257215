"""Where skilleval reads a promptfoo config otherwise than promptfoo would, each at its
position: shown as warnings when the config loads, and by ``skilleval import promptfoo``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from skilleval.errors import Diagnostic, Location
from skilleval.promptfoo.config import PROVIDER_LISTS, UNSUPPORTED_KEYS, is_promptfoo
from skilleval.promptfoo.provider_ids import translate
from skilleval.promptfoo.values import javascript_reads_otherwise, regex_entries
from skilleval.util.frozen import frozen


class Positions(Protocol):
    """A parsed config that knows where each of its nodes was written (a suite Document)."""

    @property
    def data(self) -> Any: ...

    def at(self, path: Sequence[str | int] = ()) -> Location: ...

    def key_at(self, path: Sequence[str | int]) -> Location: ...


@frozen
class Difference:
    """One place where skilleval reads the config otherwise than promptfoo would."""

    where: Location
    message: str
    carried: bool = True
    """False: the setting is not carried over at all."""


def differences(doc: Positions) -> list[Difference]:
    """What skilleval does differently with this promptfoo config, each at its position."""
    data: Mapping[str, Any] = doc.data
    out: list[Difference] = []
    decoding = data.get("decoding")
    if decoding is None and not _only_own_applications(data):
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
        if key in UNSUPPORTED_KEYS:
            out.append(Difference(doc.key_at([key]), f"`{key}`: {UNSUPPORTED_KEYS[key]}", False))
    out.extend(pattern_differences(doc))
    return out


def pattern_differences(doc: Positions) -> list[Difference]:
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


def warnings(doc: Positions) -> list[str]:
    """For a config written for promptfoo, every difference in meaning, as a warning."""
    if not is_promptfoo(doc.data):
        return []
    return [
        str(Diagnostic(d.where, d.message, severity="warning"))
        for d in differences(doc)
        if d.carried  # what is not carried over at all is an error of its own
    ]


_OWN = frozenset({"python", "exec", "http"})


def _only_own_applications(data: Mapping[str, Any]) -> bool:
    """Whether every provider is the user's own application, which decodes as it likes."""
    entries: list[Any] = []
    for key in PROVIDER_LISTS:
        raw = data.get(key)
        entries.extend(raw if isinstance(raw, list) else [] if raw is None else [raw])
    models = [translate(e, need_keys=False).model for e in entries]
    return bool(models) and all(isinstance(m, dict) and m.get("provider") in _OWN for m in models)
