"""``hf:`` references as a suite writes them, and the files they name in a repository.

:func:`parse_ref` reads ``hf:OWNER/REPO/FILE.gguf`` and ``hf:OWNER/REPO:QUANT`` (each
optionally ``@REVISION``) into a :class:`HubRef`; :func:`problem_with` is the check made when
the suite loads, so a mistake is a positioned load error. :func:`pick_quant` chooses the file a
``:QUANT`` tag names among a repository's files, and :func:`shard_files` lists every shard of a
split model. Nothing here needs huggingface_hub or the network; fetching is
:mod:`skilleval.engine.hf`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from skilleval.util.frozen import frozen

__all__ = [
    "PREFIX",
    "HubRef",
    "is_hub_ref",
    "parse_ref",
    "pick_quant",
    "problem_with",
    "shard_files",
]

PREFIX = "hf:"

# The hub's rule for a user or repository name: letters, digits, '-', '_' and '.', starting and
# ending with a letter or digit, at most 96 characters.
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?"
_REPO = re.compile(rf"{_NAME}/{_NAME}")
_QUANT = re.compile(r"[A-Za-z0-9_]+")
_SHARD = re.compile(r"^(?P<stem>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.gguf$", re.IGNORECASE)
_EXAMPLE = (
    "hf:OWNER/REPO/FILE.gguf or hf:OWNER/REPO:QUANT (QUANT like Q4_K_M), "
    "optionally ending in @REVISION"
)
_LISTED = 12
"""How many file names an error about ``:QUANT`` lists before it says how many more."""


@frozen
class HubRef:
    """A parsed ``hf:`` reference."""

    repo: str
    """``OWNER/REPO``."""
    filename: str | None
    """The file inside the repository, when it is named."""
    quant: str | None
    """The quantisation tag, when the file is to be picked by it."""
    revision: str | None
    """A branch, tag or commit; None means the repository's default branch."""
    written: str
    """The reference as the suite wrote it."""

    def __str__(self) -> str:
        return self.written


def is_hub_ref(text: str) -> bool:
    """Whether a ``model:`` path is an ``hf:`` reference."""
    return text.startswith(PREFIX)


def problem_with(text: str) -> str | None:
    """Why ``text`` is not a valid ``hf:`` reference, or None when it is."""
    try:
        parse_ref(text)
    except ValueError as exc:
        return str(exc)
    return None


def parse_ref(text: str) -> HubRef:
    """Read ``hf:OWNER/REPO/FILE.gguf[@REVISION]`` or ``hf:OWNER/REPO:QUANT[@REVISION]``.

    Raises:
        ValueError: The reference is malformed; the message says what is wrong and shows the form.
    """
    body = text.removeprefix(PREFIX)
    revision: str | None = None
    if "@" in body:
        body, revision = body.rsplit("@", 1)
        if not revision or any(c.isspace() for c in revision):
            raise ValueError(f"'{text}': an empty or blank revision after '@'; write {_EXAMPLE}")
    quant: str | None = None
    if ":" in body:
        body, quant = body.split(":", 1)
        if not _QUANT.fullmatch(quant):
            raise ValueError(
                f"'{text}': '{quant}' is not a quantisation tag (letters, digits and '_', "
                "like Q4_K_M); write " + _EXAMPLE
            )
    parts = body.split("/")
    repo = "/".join(parts[:2])
    filename = "/".join(parts[2:])
    if not _REPO.fullmatch(repo):
        raise ValueError(f"'{text}': '{repo}' is not OWNER/REPO; write {_EXAMPLE}")
    if quant is not None and filename:
        raise ValueError(f"'{text}': name the file or the quantisation, not both; write {_EXAMPLE}")
    if quant is None and not filename:
        raise ValueError(f"'{text}' names no file; write {_EXAMPLE}")
    if filename:
        if not filename.lower().endswith(".gguf"):
            raise ValueError(f"'{text}': '{filename}' is not a .gguf file; write {_EXAMPLE}")
        if any(part in ("", ".", "..") for part in filename.split("/")):
            raise ValueError(
                f"'{text}': '{filename}' is not a file path inside the repository; write {_EXAMPLE}"
            )
    return HubRef(repo, filename or None, quant, revision, text)


def pick_quant(files: Sequence[str], quant: str) -> list[str]:
    """The ``.gguf`` file (or the shards of the one model) whose name carries ``quant``.

    A tag matches a whole dot-, dash- or slash-separated part of the path, in any case, so
    ``Q4_K`` does not pick ``Q4_K_M``. Multimodal projectors (``mmproj…``) are never picked.

    Raises:
        ValueError: No file or more than one model matches; the message lists what there is.
    """
    ggufs = sorted(f for f in files if f.lower().endswith(".gguf"))
    wanted = quant.lower()
    matches = [
        f
        for f in ggufs
        if not f.rsplit("/", 1)[-1].lower().startswith("mmproj")
        and wanted in (part.lower() for part in re.split(r"[-./]", f))
    ]
    models = {_model_of(f) for f in matches}
    if len(models) == 1:
        shards = sorted(matches, key=lambda f: (_SHARD.match(f.rsplit("/", 1)[-1]) is None, f))
        return shards if _SHARD.match(shards[0].rsplit("/", 1)[-1]) else shards[:1]
    if not matches:
        there = f"its .gguf files are {_listing(ggufs)}" if ggufs else "it has no .gguf file"
        raise ValueError(f"no .gguf file matches {quant}; {there}")
    raise ValueError(
        f"{quant} matches {len(models)} models ({_listing(matches)}); "
        "name the file: hf:OWNER/REPO/FILE.gguf"
    )


def _model_of(filename: str) -> str:
    """The model a file belongs to: its name without a shard suffix."""
    head, _, name = filename.rpartition("/")
    shard = _SHARD.match(name)
    return f"{head}/{shard['stem']}" if shard else filename


def _listing(files: Sequence[str]) -> str:
    shown = ", ".join(files[:_LISTED])
    return shown + (f" and {len(files) - _LISTED} more" if len(files) > _LISTED else "")


def shard_files(filename: str) -> list[str]:
    """Every shard of a split model given one of them; the file alone otherwise."""
    head, slash, name = filename.rpartition("/")
    shard = _SHARD.match(name)
    if shard is None:
        return [filename]
    count = int(shard["count"])
    width = len(shard["count"])
    return [
        f"{head}{slash}{shard['stem']}-{i:0{width}d}-of-{shard['count']}.gguf"
        for i in range(1, count + 1)
    ]
