"""GGUF models from a Hugging Face hub: ``hf:OWNER/REPO/FILE.gguf`` and ``hf:OWNER/REPO:QUANT``.

A reference is checked when the suite loads (:func:`~skilleval.engine.hf_ref.problem_with`,
so a mistake in it is a positioned load error; references are :mod:`skilleval.engine.hf_ref`)
and fetched only when a run needs the file (:func:`fetch`), through
``huggingface_hub`` into its standard cache: a file is downloaded once, then found there again,
offline too. ``HF_ENDPOINT``, ``HF_HOME``, ``HF_HUB_CACHE``, ``HF_HUB_OFFLINE`` and ``HF_TOKEN``
are huggingface_hub's own settings and act exactly as they do there.

``:QUANT`` picks the ``.gguf`` file whose name carries that quantisation tag (``Q4_K_M``,
``IQ2_XXS``, ``F16`` …, in any case) among the repository's files; a model split into shards
(``NAME-00001-of-00003.gguf``) is fetched whole and run from its first shard, as llama.cpp expects.

Every failure (no such repository, revision or file; no network and nothing cached; the hub
answering with an error; a full disk) is one :class:`~skilleval.errors.ModelDownloadError` line
that names the repository and the file (worded by :mod:`skilleval.engine.hf_errors`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from skilleval.engine.hf_errors import chain_of, explain, is_offline, one_line
from skilleval.engine.hf_ref import HubRef, pick_quant, shard_files
from skilleval.engine.identity import file_identity
from skilleval.errors import ModelDownloadError, ProviderError
from skilleval.util.frozen import frozen
from skilleval.util.home import home_dir
from skilleval.util.homefile import damaged

__all__ = ["Fetched", "fetch"]

INSTALL_HINT = (
    "install it with: pip install 'skilleval[llama]' (or pip install 'huggingface_hub>=2.4,<3')"
)
_COMMIT = re.compile(r"[0-9a-f]{40}")


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
            wanted = shard_files(ref.filename)
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
        if unreachable is not None and not is_offline(chain_of(exc)):
            what = f"{filename} from {ref.repo}" + (f" at revision {revision}" if revision else "")
            raise ModelDownloadError(
                f"cannot fetch {ref}: cannot reach {endpoint} for {what}, and it is not in the"
                f" local cache ({unreachable})"
            ) from None
        # huggingface_hub raises its own errors, httpx2's, OSError and ValueError, from
        # several layers; each becomes one line naming the repository and the file.
        raise ModelDownloadError(explain(exc, ref, filename, revision, endpoint)) from None
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
            reason = one_line(exc)
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
        raise ModelDownloadError(explain(exc, ref, None, ref.revision, endpoint)) from None
    except Exception as exc:
        # Offline, unreachable or failing: what was downloaded before is still usable.
        cached = _cached_files(ref)
        if cached is None:
            raise ModelDownloadError(explain(exc, ref, None, ref.revision, endpoint)) from None
        why = (
            "HF_HUB_OFFLINE is set" if is_offline(chain_of(exc)) else f"{endpoint} cannot be asked"
        )
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
