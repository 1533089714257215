"""GGUF models from a Hugging Face hub: ``hf:OWNER/REPO/FILE.gguf`` and ``hf:OWNER/REPO:QUANT``.

A reference is checked when the suite loads (:func:`problem_with`, so a mistake in it is a
positioned load error) and fetched only when a run needs the file (:func:`fetch`), through
``huggingface_hub`` into its standard cache: a file is downloaded once, then found there again,
offline too. ``HF_ENDPOINT``, ``HF_HOME``, ``HF_HUB_CACHE``, ``HF_HUB_OFFLINE`` and ``HF_TOKEN``
are huggingface_hub's own settings and act exactly as they do there.

``:QUANT`` picks the ``.gguf`` file whose name carries that quantisation tag (``Q4_K_M``,
``IQ2_XXS``, ``F16`` …, in any case) among the repository's files; a model split into shards
(``NAME-00001-of-00003.gguf``) is fetched whole and run from its first shard, as llama.cpp expects.

Every failure (no such repository, revision or file; no network and nothing cached; the hub
answering with an error; a full disk) is one :class:`~skilleval.errors.ModelDownloadError` line
that names the repository and the file.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from skilleval.engine.identity import file_identity
from skilleval.errors import ModelDownloadError, ProviderError
from skilleval.util.frozen import frozen
from skilleval.util.home import home_dir
from skilleval.util.homefile import damaged

__all__ = ["PREFIX", "Fetched", "HubRef", "fetch", "is_hub_ref", "parse_ref", "pick_quant"]

PREFIX = "hf:"
INSTALL_HINT = (
    "install it with: pip install 'skilleval[llama]' (or pip install 'huggingface_hub>=2.4,<3')"
)

# The hub's rule for a user or repository name: letters, digits, '-', '_' and '.', starting and
# ending with a letter or digit, at most 96 characters.
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?"
_REPO = re.compile(rf"{_NAME}/{_NAME}")
_QUANT = re.compile(r"[A-Za-z0-9_]+")
_COMMIT = re.compile(r"[0-9a-f]{40}")
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


@frozen
class Fetched:
    """A hub file in the local cache, and where it came from."""

    path: Path
    """The file to load (the first shard of a split model)."""
    repo: str
    filename: str
    revision: str
    """The commit the file was resolved at (a 40-hex sha)."""
    endpoint: str

    def details(self) -> dict[str, Any]:
        """What the run's model identity records about the download."""
        return {
            "source": "hf",
            "repo": self.repo,
            "filename": self.filename,
            "revision": self.revision,
            "endpoint": self.endpoint,
        }


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


def _shards(filename: str) -> list[str]:
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


def fetch(ref: HubRef) -> Fetched:
    """Bring the referenced file into huggingface_hub's cache (or find it there).

    A progress bar is shown on a terminal only (huggingface_hub's own, which stays silent when
    stderr is not a TTY). huggingface_hub's log lines (retries and the like) are kept back so
    that a failure is one line, unless ``HF_HUB_VERBOSITY`` asks for them.

    Raises:
        ModelDownloadError: The repository, revision or file does not exist, the hub cannot be
            reached and the file is not cached, or the download failed.
        ProviderError: huggingface_hub is not installed.
    """
    _require_hub()
    from huggingface_hub import constants  # lazy: start-up time

    endpoint = str(constants.ENDPOINT)
    with _quiet():
        revision = ref.revision
        if ref.quant is not None:
            files, unlisted = _repo_files(ref, endpoint)
            try:
                wanted = pick_quant(files, ref.quant)
            except ValueError as exc:
                where = f"the cached copy of {ref.repo} ({unlisted})" if unlisted else ref.repo
                raise ModelDownloadError(f"cannot fetch {ref}: in {where}, {exc}") from None
        else:
            assert ref.filename is not None  # parse_ref guarantees one of the two
            wanted = _shards(ref.filename)
        # The first file is asked for by the revision as written, so that huggingface_hub
        # records where a branch or tag pointed and finds the file again offline.
        first: Path | None = None
        commit = revision or ""
        for filename in wanted:
            local = _verified(ref, filename, revision, endpoint)
            if first is None:
                first = local
                commit = _commit_of(local, filename) or commit
                # The other shards come from the very same commit.
                revision = commit if _COMMIT.fullmatch(commit) else revision
    assert first is not None
    return Fetched(first, ref.repo, wanted[0], commit, endpoint)


def _require_hub() -> None:
    if importlib.util.find_spec("huggingface_hub") is None:
        raise ProviderError(
            f"hf: models need huggingface_hub, which is not installed; {INSTALL_HINT}"
        )


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    # Importing huggingface_hub's logging module sets its level; only then can it be changed.
    from huggingface_hub.utils import logging as hub_logging  # lazy: start-up time

    if os.environ.get("HF_HUB_VERBOSITY"):
        yield
        return
    level = hub_logging.get_verbosity()
    hub_logging.set_verbosity(logging.ERROR)
    try:
        yield
    finally:
        hub_logging.set_verbosity(level)


def _verified(ref: HubRef, filename: str, revision: str | None, endpoint: str) -> Path:
    """The file, downloaded or found in the cache, checked against the SHA-256 its cached blob
    is named by (a large file's name in huggingface_hub's cache is its digest). A cached copy
    that does not match is said once, removed and downloaded again.

    Raises:
        ModelDownloadError: It cannot be fetched, or a fresh copy does not match either.
    """
    local = _download(ref, filename, revision, endpoint)
    if _matches(local):
        return local
    blob = local.resolve()
    damaged("a downloaded model", blob, "it is downloaded again")
    with contextlib.suppress(OSError):
        blob.unlink()
    local = _download(ref, filename, revision, endpoint)
    if not _matches(local):
        raise ModelDownloadError(
            f"cannot fetch {ref}: {filename} from {ref.repo} does not match its SHA-256"
            " after downloading it again"
        )
    return local


_SHA256 = re.compile(r"[0-9a-f]{64}")


def _matches(local: Path) -> bool:
    """Whether ``local`` holds the bytes its blob's name says; True when the name is not a
    digest (a small file is named by its git hash, which is not checked here)."""
    name = local.resolve().name
    if not _SHA256.fullmatch(name):
        return True
    try:
        return file_identity(local, home_dir()).sha256 == name
    except ProviderError:
        return False


def _download(ref: HubRef, filename: str, revision: str | None, endpoint: str) -> Path:
    from huggingface_hub import hf_hub_download  # lazy: start-up time

    # huggingface_hub retries a download it cannot even connect for with back-off (23 s with
    # no network at all): when the hub cannot be reached, only the local cache is asked.
    unreachable = _unreachable(endpoint)
    try:
        local = hf_hub_download(
            ref.repo,
            filename,
            revision=revision,
            tqdm_class=_bar_class(),
            local_files_only=unreachable is not None,
        )
    except Exception as exc:
        if unreachable is not None and not _offline(_chain(exc)):
            what = f"{filename} from {ref.repo}" + (f" at revision {revision}" if revision else "")
            raise ModelDownloadError(
                f"cannot fetch {ref}: cannot reach {endpoint} for {what}, and it is not in the"
                f" local cache ({unreachable})"
            ) from None
        # huggingface_hub raises its own errors, httpx2's, OSError and ValueError, from
        # several layers; each becomes one line naming the repository and the file.
        raise ModelDownloadError(_explain(exc, ref, filename, revision, endpoint)) from None
    return Path(str(local))


PROBE_S = 3.0
"""How long the hub may take to accept a connection before only the local cache is asked."""
_probed: dict[str, str | None] = {}


def _unreachable(endpoint: str) -> str | None:
    """Why ``endpoint`` cannot be reached (no name resolution, no connection within
    :data:`PROBE_S`), or None when it can, or when that is not ours to judge (offline mode is
    set, or a proxy carries the traffic). Asked once per endpoint in a process."""
    from huggingface_hub import constants  # lazy: start-up time

    if constants.HF_HUB_OFFLINE or any(
        os.environ.get(name)
        for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY")
    ):
        return None
    if endpoint not in _probed:
        import socket  # lazy: start-up time
        from urllib.parse import urlsplit  # lazy: start-up time

        parts = urlsplit(endpoint)
        host = parts.hostname or ""
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
            with socket.create_connection((host, port), timeout=PROBE_S):
                reason = None
        except (OSError, ValueError) as exc:
            reason = _one_line(exc)
        _probed[endpoint] = reason
    return _probed[endpoint]


def _bar_class() -> Any:
    """The progress bar for a download: huggingface_hub's own (None), which draws on a terminal
    and stays silent otherwise, unless another live display owns the terminal's last line.

    That is the run's own progress bar (rich), which passes what is written to stderr through
    line by line; a bar redrawn in place would print a line per redraw. There the download shows
    as a whole line at every tenth of the file instead.
    """
    if getattr(sys.stderr, "rich_proxied_file", None) is None:
        return None
    from huggingface_hub.utils.tqdm import tqdm as hub_tqdm  # lazy: start-up time

    class Tenths(hub_tqdm):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.shown = -1
            super().__init__(*args, **{**kwargs, "leave": False})  # type: ignore[no-untyped-call]

        def display(self, msg: str | None = None, pos: int | None = None) -> bool:
            total = self.total or 0
            tenth = int(10 * self.n / total) if total else 0
            if msg == "" or tenth == self.shown:
                return False
            self.shown = tenth
            self.fp.write(f"{self}\n")
            return True

    return Tenths


def _repo_files(ref: HubRef, endpoint: str) -> tuple[list[str], str]:
    """The repository's file names at ``ref``'s revision, and why the hub was not asked.

    The names come from the hub, or from the local cache when the hub cannot be asked
    (offline, unreachable, failing); the second item then says why, and is empty otherwise.
    """
    from huggingface_hub import HfApi, errors  # lazy: start-up time

    try:
        info = HfApi().model_info(ref.repo, revision=ref.revision)
    except (
        errors.RepositoryNotFoundError,
        errors.RevisionNotFoundError,
    ) as exc:
        raise ModelDownloadError(_explain(exc, ref, None, ref.revision, endpoint)) from None
    except Exception as exc:
        # Offline, unreachable or failing: what was downloaded before is still usable.
        cached = _cached_files(ref)
        if cached is None:
            raise ModelDownloadError(_explain(exc, ref, None, ref.revision, endpoint)) from None
        why = "HF_HUB_OFFLINE is set" if _offline(_chain(exc)) else f"{endpoint} cannot be asked"
        return cached, why
    return [str(s.rfilename) for s in (info.siblings or [])], ""


def _cached_files(ref: HubRef) -> list[str] | None:
    """The files of ``ref``'s revision in the local cache, or None when it has none."""
    from huggingface_hub import constants  # lazy: start-up time
    from huggingface_hub.file_download import repo_folder_name  # lazy: start-up time

    storage = Path(constants.HF_HUB_CACHE) / repo_folder_name(repo_id=ref.repo, repo_type="model")
    revision = ref.revision or "main"
    commit = revision
    if not _COMMIT.fullmatch(revision):
        try:
            commit = (storage / "refs" / revision).read_text(encoding="utf-8").strip()
        except OSError:
            return None
    snapshot = storage / "snapshots" / commit
    if not snapshot.is_dir():
        return None
    return sorted(p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*") if p.is_file())


def _commit_of(local: Path, filename: str) -> str | None:
    """The commit in a cache path ``…/snapshots/<commit>/<filename>``."""
    depth = len(filename.split("/"))
    parents = local.parents
    if len(parents) <= depth or parents[depth].name != "snapshots":
        return None
    commit = parents[depth - 1].name
    return commit if _COMMIT.fullmatch(commit) else None


def _explain(
    exc: BaseException, ref: HubRef, filename: str | None, revision: str | None, endpoint: str
) -> str:
    """One line on why ``ref`` could not be fetched."""
    from huggingface_hub import constants, errors  # lazy: start-up time

    what = f"{filename} from {ref.repo}" if filename else ref.repo
    at = f" at revision {revision}" if revision else ""
    chain = _chain(exc)
    http = next((e for e in chain if isinstance(e, errors.HfHubHTTPError)), None)
    if isinstance(exc, errors.GatedRepoError):
        reason = f"{ref.repo} is gated: accept its terms on the hub, then set HF_TOKEN"
    elif isinstance(exc, errors.RepositoryNotFoundError):
        reason = f"no repository {ref.repo} on {endpoint} (or it is private: set HF_TOKEN)"
    elif isinstance(exc, errors.RevisionNotFoundError):
        reason = f"{ref.repo} has no revision {revision}"
    elif isinstance(exc, errors.RemoteEntryNotFoundError):
        reason = f"{ref.repo} has no file {filename}{at}"
    elif _offline(chain):
        reason = f"{what}{at} is not in the local cache, and HF_HUB_OFFLINE is set"
    elif http is not None and http.response is not None:
        status = f"{http.response.status_code} {http.response.reason_phrase}".strip()
        reason = (
            f"{endpoint} answered HTTP {status} for {what}{at}, and it is not in the local cache"
        )
    elif isinstance(exc, errors.LocalEntryNotFoundError) or any(map(_network, chain)):
        cause = chain[-1]
        detail = f" ({_one_line(cause)})" if cause is not exc else ""
        reason = f"cannot reach {endpoint} for {what}{at}, and it is not in the local cache{detail}"
    elif isinstance(exc, OSError):
        reason = (
            f"cannot store {what} in {constants.HF_HUB_CACHE}: {exc.strerror or _one_line(exc)}"
        )
    else:
        reason = f"{what}{at}: {type(exc).__name__}: {_one_line(exc)}"
    return f"cannot fetch {ref}: {reason}"


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes, outermost first."""
    chain = [exc]
    while (
        cause := chain[-1].__cause__ or chain[-1].__context__
    ) is not None and cause not in chain:
        chain.append(cause)
    return chain


def _offline(chain: Sequence[BaseException]) -> bool:
    from huggingface_hub import constants, errors  # lazy: start-up time

    if any(isinstance(e, errors.OfflineModeIsEnabled) for e in chain):
        return True
    return bool(constants.HF_HUB_OFFLINE) and isinstance(chain[0], errors.LocalEntryNotFoundError)


def _network(exc: BaseException) -> bool:
    # huggingface_hub's HTTP library (httpx, or httpx2 in its later versions) is its own
    # business: any error raised from inside it that is not an HTTP status is the network's.
    library = type(exc).__module__.split(".")[0]
    return isinstance(exc, (ConnectionError, TimeoutError)) or library.startswith(
        ("httpx", "httpcore")
    )


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
