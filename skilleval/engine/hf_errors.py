"""Why a model could not be fetched from a hub, in one line naming the repository and file.

huggingface_hub raises its own errors, its HTTP library's, ``OSError`` and ``ValueError``,
from several layers and chained; :func:`explain` reads the chain (:func:`chain_of`) and says
which it was: gated, no such repository, revision or file, offline, an HTTP status, no network,
a full disk.
"""

from __future__ import annotations

from collections.abc import Sequence

from skilleval.engine.hf_ref import HubRef

__all__ = ["chain_of", "explain", "is_offline", "one_line"]


def explain(
    exc: BaseException, ref: HubRef, filename: str | None, revision: str | None, endpoint: str
) -> str:
    """One line on why ``ref`` could not be fetched."""
    from huggingface_hub import constants, errors  # lazy: start-up time

    what = f"{filename} from {ref.repo}" if filename else ref.repo
    at = f" at revision {revision}" if revision else ""
    chain = chain_of(exc)
    http = next((e for e in chain if isinstance(e, errors.HfHubHTTPError)), None)
    if isinstance(exc, errors.GatedRepoError):
        reason = f"{ref.repo} is gated: accept its terms on the hub, then set HF_TOKEN"
    elif isinstance(exc, errors.RepositoryNotFoundError):
        reason = f"no repository {ref.repo} on {endpoint} (or it is private: set HF_TOKEN)"
    elif isinstance(exc, errors.RevisionNotFoundError):
        reason = f"{ref.repo} has no revision {revision}"
    elif isinstance(exc, errors.RemoteEntryNotFoundError):
        reason = f"{ref.repo} has no file {filename}{at}"
    elif is_offline(chain):
        reason = f"{what}{at} is not in the local cache, and HF_HUB_OFFLINE is set"
    elif http is not None and http.response is not None:
        status = f"{http.response.status_code} {http.response.reason_phrase}".strip()
        reason = (
            f"{endpoint} answered HTTP {status} for {what}{at}, and it is not in the local cache"
        )
    elif isinstance(exc, errors.LocalEntryNotFoundError) or any(map(_network, chain)):
        cause = chain[-1]
        detail = f" ({one_line(cause)})" if cause is not exc else ""
        reason = f"cannot reach {endpoint} for {what}{at}, and it is not in the local cache{detail}"
    elif isinstance(exc, OSError):
        reason = f"cannot store {what} in {constants.HF_HUB_CACHE}: {exc.strerror or one_line(exc)}"
    else:
        reason = f"{what}{at}: {type(exc).__name__}: {one_line(exc)}"
    return f"cannot fetch {ref}: {reason}"


def chain_of(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes, outermost first."""
    chain = [exc]
    while (
        cause := chain[-1].__cause__ or chain[-1].__context__
    ) is not None and cause not in chain:
        chain.append(cause)
    return chain


def is_offline(chain: Sequence[BaseException]) -> bool:
    """Whether the failure in ``chain`` is huggingface_hub's offline mode refusing the network."""
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


def one_line(exc: BaseException) -> str:
    """``exc``'s message on one line, or its class name when it has none."""
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
